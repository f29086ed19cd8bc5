//! PIP-215 compaction strategies (spec compaction.md §9).
//!
//! A strategy decides, for each new value of a key, whether the value already
//! kept ("left") stays and the new one is ignored. Values are raw payload
//! bytes; `None` is a tombstone (an empty payload). The strategy is consulted
//! for tombstones too, so it can refuse a deletion.
//!
//! The merge hook (`is_merge_enabled` / `merge`) is the project's extension
//! described by the PIP-215 proposal and absent from Pulsar's code: when
//! enabled and the new value is accepted over a previous one, the kept value
//! is `merge(prev, cur)`. Tombstones are never merged.

use std::collections::{HashMap, HashSet};

use crate::error::{EntryError, Result};

/// A topic compaction strategy over raw values.
pub trait Strategy {
    /// True keeps `prev` and ignores `cur`.
    fn should_keep_left(&mut self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> Result<bool>;

    fn is_merge_enabled(&self) -> bool {
        false
    }

    /// The value kept when `cur` is accepted over `prev` (both present).
    fn merge(&mut self, _prev: &[u8], _cur: &[u8]) -> Result<Vec<u8>> {
        Err(EntryError::Strategy(
            "merge() called on a strategy without merging".into(),
        ))
    }
}

impl<S: Strategy + ?Sized> Strategy for Box<S> {
    fn should_keep_left(&mut self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> Result<bool> {
        (**self).should_keep_left(prev, cur)
    }

    fn is_merge_enabled(&self) -> bool {
        (**self).is_merge_enabled()
    }

    fn merge(&mut self, prev: &[u8], cur: &[u8]) -> Result<Vec<u8>> {
        (**self).merge(prev, cur)
    }
}

/// The last value wins (what plain compaction does).
#[derive(Debug, Clone, Copy, Default)]
pub struct LatestWins;

impl Strategy for LatestWins {
    fn should_keep_left(&mut self, _: Option<&[u8]>, _: Option<&[u8]>) -> Result<bool> {
        Ok(false)
    }
}

/// The first value of a key wins until a tombstone deletes it.
#[derive(Debug, Clone, Copy, Default)]
pub struct FirstWins;

impl Strategy for FirstWins {
    fn should_keep_left(&mut self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> Result<bool> {
        Ok(prev.is_some() && cur.is_some())
    }
}

/// Versioned state machines, in the spirit of Pulsar's
/// `ServiceUnitStateDataConflictResolver`: values are JSON objects
/// `{"state": str, "version": int, "force": bool?}` and only valid, newer
/// transitions are accepted, so the first valid chain wins rather than the
/// last writer.
///
/// Rules, in order: a tombstone is always accepted; an unreadable value is
/// rejected; with a previous value, a version not above it is rejected (a gap
/// is accepted unless `allow_version_gaps` is false, since compaction may
/// have removed intermediate versions); without one, the version must equal
/// `first_version` when that is set; `force` accepts; otherwise the
/// transition from the previous state (or `initial_state`) must be listed.
#[derive(Debug, Clone)]
pub struct VersionedState {
    transitions: HashMap<String, HashSet<String>>,
    initial_state: String,
    allow_version_gaps: bool,
    first_version: Option<i64>,
}

/// A parsed versioned value.
struct Versioned {
    state: String,
    version: i64,
    force: bool,
}

fn parse_versioned(raw: &[u8]) -> Option<Versioned> {
    let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
    Some(Versioned {
        state: v.get("state")?.as_str()?.to_owned(),
        version: v.get("version")?.as_i64()?,
        force: v.get("force").and_then(|f| f.as_bool()).unwrap_or(false),
    })
}

/// Pulsar's service-unit state transitions over a system topic
/// (`ServiceUnitState.validTransitionsOverSystemTopic`).
pub fn service_unit_transitions() -> HashMap<String, HashSet<String>> {
    let t: &[(&str, &[&str])] = &[
        (
            "Init",
            &[
                "Free",
                "Owned",
                "Assigning",
                "Releasing",
                "Splitting",
                "Deleted",
            ],
        ),
        ("Free", &["Assigning", "Init"]),
        ("Owned", &["Splitting", "Releasing"]),
        ("Assigning", &["Owned"]),
        ("Releasing", &["Assigning", "Free"]),
        ("Splitting", &["Deleted"]),
        ("Deleted", &["Init"]),
    ];
    t.iter()
        .map(|(from, to)| (from.to_string(), to.iter().map(|s| s.to_string()).collect()))
        .collect()
}

impl Default for VersionedState {
    fn default() -> Self {
        VersionedState::new(service_unit_transitions(), "Init".into(), true, None)
    }
}

impl VersionedState {
    pub fn new(
        transitions: HashMap<String, HashSet<String>>,
        initial_state: String,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> Self {
        VersionedState {
            transitions,
            initial_state,
            allow_version_gaps,
            first_version,
        }
    }

    fn valid(&self, from: &str, to: &str) -> bool {
        self.transitions.get(from).is_some_and(|s| s.contains(to))
    }
}

impl Strategy for VersionedState {
    fn should_keep_left(&mut self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> Result<bool> {
        let Some(cur) = cur else {
            return Ok(false);
        };
        let Some(to) = parse_versioned(cur) else {
            return Ok(true);
        };
        let from = prev.and_then(parse_versioned);
        match &from {
            Some(from) => {
                if to.version <= from.version {
                    return Ok(true);
                }
                if to.version > from.version + 1 && !self.allow_version_gaps {
                    return Ok(true);
                }
            }
            None => {
                if self.first_version.is_some_and(|v| v != to.version) {
                    return Ok(true);
                }
            }
        }
        if to.force {
            return Ok(false);
        }
        let from_state = from
            .as_ref()
            .map_or(self.initial_state.as_str(), |f| &f.state);
        Ok(!self.valid(from_state, &to.state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(state: &str, version: i64) -> Vec<u8> {
        format!(r#"{{"state":"{state}","version":{version}}}"#).into_bytes()
    }

    #[test]
    fn built_ins() {
        assert!(!LatestWins.should_keep_left(Some(b"a"), Some(b"b")).unwrap());
        assert!(FirstWins.should_keep_left(Some(b"a"), Some(b"b")).unwrap());
        assert!(!FirstWins.should_keep_left(Some(b"a"), None).unwrap());
        assert!(!FirstWins.should_keep_left(None, Some(b"b")).unwrap());
    }

    #[test]
    fn versioned_state_accepts_only_valid_newer_transitions() {
        let mut s = VersionedState::default();
        let keep = |s: &mut VersionedState, p: Option<Vec<u8>>, c: Option<Vec<u8>>| {
            s.should_keep_left(p.as_deref(), c.as_deref()).unwrap()
        };
        assert!(!keep(&mut s, None, Some(v("Assigning", 1))));
        assert!(!keep(&mut s, Some(v("Assigning", 1)), Some(v("Owned", 2))));
        assert!(keep(&mut s, Some(v("Owned", 2)), Some(v("Owned", 2)))); // stale
        assert!(keep(&mut s, Some(v("Owned", 2)), Some(v("Free", 3)))); // invalid
        assert!(!keep(&mut s, Some(v("Owned", 2)), Some(v("Releasing", 5)))); // gap ok
        assert!(keep(
            &mut s,
            Some(v("Owned", 2)),
            Some(b"not json".to_vec())
        ));
        assert!(!keep(&mut s, Some(v("Owned", 2)), None)); // tombstones always win
        let forced = br#"{"state":"Free","version":3,"force":true}"#.to_vec();
        assert!(!keep(&mut s, Some(v("Owned", 2)), Some(forced)));
        let mut strict = VersionedState::new(s.transitions.clone(), "Init".into(), false, Some(1));
        assert!(keep(&mut strict, None, Some(v("Assigning", 2))));
        assert!(keep(
            &mut strict,
            Some(v("Owned", 2)),
            Some(v("Releasing", 5))
        ));
    }
}
