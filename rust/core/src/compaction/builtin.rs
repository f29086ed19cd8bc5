//! The built-in strategies by name and constructor arguments (what the
//! Python `NativeStrategy` pickles), and the compactors' counters as named
//! fields.

use std::collections::HashMap;

use super::compactor::CompactStats;
use super::strategic::StrategicStats;
use super::strategy::{service_unit_transitions, FirstWins, LatestWins, Strategy, VersionedState};
use crate::error::{EntryError, Result};

/// A strategy implemented in Rust.
#[derive(Debug, Clone)]
pub enum BuiltinStrategy {
    LatestWins,
    FirstWins,
    Versioned(VersionedState),
}

impl BuiltinStrategy {
    /// `versioned_state` with `transitions` (state → states it may move to);
    /// `None` uses Pulsar's service-unit state transitions.
    pub fn versioned(
        transitions: Option<HashMap<String, Vec<String>>>,
        initial_state: &str,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> Self {
        let transitions = match transitions {
            None => service_unit_transitions(),
            Some(t) => t
                .into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect(),
        };
        BuiltinStrategy::Versioned(VersionedState::new(
            transitions,
            initial_state.into(),
            allow_version_gaps,
            first_version,
        ))
    }

    /// A strategy by kind (`latest_wins`, `first_wins`, `versioned_state`);
    /// the other arguments matter to `versioned_state` only.
    pub fn from_args(
        kind: &str,
        transitions: Option<HashMap<String, Vec<String>>>,
        initial_state: &str,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> Result<Self> {
        match kind {
            "latest_wins" => Ok(BuiltinStrategy::LatestWins),
            "first_wins" => Ok(BuiltinStrategy::FirstWins),
            "versioned_state" => Ok(Self::versioned(
                transitions,
                initial_state,
                allow_version_gaps,
                first_version,
            )),
            other => Err(EntryError::Options(format!(
                "unknown built-in strategy {other:?}; expected latest_wins, first_wins or versioned_state"
            ))),
        }
    }

    /// A fresh instance, with its own state.
    pub fn instance(&self) -> Box<dyn Strategy + Send + Sync> {
        match self {
            BuiltinStrategy::LatestWins => Box::new(LatestWins),
            BuiltinStrategy::FirstWins => Box::new(FirstWins),
            BuiltinStrategy::Versioned(v) => Box::new(v.clone()),
        }
    }
}

/// Counters as `(name, value)` pairs, in a fixed order.
pub trait StatFields {
    fn fields(&self) -> Vec<(&'static str, u64)>;
}

impl StatFields for CompactStats {
    fn fields(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("entries_read", self.entries_read),
            ("messages_read", self.messages_read),
            ("markers", self.markers),
            ("tombstones", self.tombstones),
            ("null_key_dropped", self.null_key_dropped),
            ("aborted_dropped", self.aborted_dropped),
            ("unreadable_entries", self.unreadable_entries),
            ("kafka_entries", self.kafka_entries),
            ("keys", self.keys),
            ("entries_written", self.entries_written),
            ("messages_written", self.messages_written),
        ]
    }
}

impl StatFields for StrategicStats {
    fn fields(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("entries_read", self.entries_read),
            ("messages_read", self.messages_read),
            ("accepted", self.accepted),
            ("rejected", self.rejected),
            ("merged", self.merged),
            ("kept_unchanged", self.kept_unchanged),
            ("entries_written", self.entries_written),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn builtins_by_name() {
        let mut latest = BuiltinStrategy::from_args("latest_wins", None, "Init", true, None)
            .unwrap()
            .instance();
        assert!(!latest.should_keep_left(Some(b"a"), Some(b"b")).unwrap());
        let mut first = BuiltinStrategy::from_args("first_wins", None, "Init", true, None)
            .unwrap()
            .instance();
        assert!(first.should_keep_left(Some(b"a"), Some(b"b")).unwrap());
        assert!(matches!(
            BuiltinStrategy::from_args("versioned_state", None, "Init", true, None).unwrap(),
            BuiltinStrategy::Versioned(_)
        ));
        let e = BuiltinStrategy::from_args("coin_flip", None, "Init", true, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Options);
        assert!(e.to_string().contains("\"coin_flip\""), "{e}");
    }

    #[test]
    fn stat_fields_name_every_counter() {
        let s = CompactStats {
            keys: 3,
            ..Default::default()
        };
        let f = s.fields();
        assert_eq!(f.len(), 11);
        assert!(f.contains(&("keys", 3)));
        assert!(f.contains(&("aborted_dropped", 0)));
        assert_eq!(StrategicStats::default().fields().len(), 7);
    }
}
