//! BookKeeper ledger metadata (spec bookkeeper.md §2): where a ledger's node
//! lives, its serialized forms, and which bookies hold which entry.

use prost::Message;

use super::digest::DigestType;
use super::BookKeeperError;
use crate::proto::offload::LedgerMetadataFormat;

/// The node path of ledger `id` under `root` (normally `/ledgers`), in the
/// hybrid hierarchical layout Pulsar always uses (`PulsarLedgerManager`):
/// `%010d` split 2-4-4 below `i32::MAX`, else `%019d` split 3-4-4-4-4.
pub fn ledger_path(root: &str, id: i64) -> String {
    let root = root.trim_end_matches('/');
    if id < i64::from(i32::MAX) {
        let d = format!("{id:010}");
        format!("{root}/{}/{}/L{}", &d[0..2], &d[2..6], &d[6..10])
    } else {
        let d = format!("{id:019}");
        format!(
            "{root}/{}/{}/{}/{}/L{}",
            &d[0..3],
            &d[3..7],
            &d[7..11],
            &d[11..15],
            &d[15..19]
        )
    }
}

/// A ledger's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerState {
    /// Being written: no upper bound but the last-add-confirmed.
    Open,
    /// Fenced by another client, which is closing it: not to be touched.
    InRecovery,
    /// Closed: entries `0..=last_entry_id` exist.
    Closed,
}

/// One ensemble: the bookies of entries from `first_entry_id` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub first_entry_id: i64,
    pub bookies: Vec<String>,
}

/// A ledger's metadata, checked for what a reader relies on. Its `Debug`
/// leaves the password out.
#[derive(Clone, PartialEq, Eq)]
pub struct LedgerMetadata {
    pub ledger_id: i64,
    pub ensemble_size: usize,
    pub write_quorum: usize,
    pub ack_quorum: usize,
    pub state: LedgerState,
    /// The last entry of a CLOSED ledger; -1 while OPEN.
    pub last_entry_id: i64,
    /// Total payload bytes (meaningful once CLOSED).
    pub length: i64,
    pub digest: DigestType,
    /// The raw password, as the metadata stores it (HMAC digests need it).
    pub password: Vec<u8>,
    pub segments: Vec<Segment>,
    pub custom: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for LedgerMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerMetadata")
            .field("ledger_id", &self.ledger_id)
            .field("ensemble_size", &self.ensemble_size)
            .field("write_quorum", &self.write_quorum)
            .field("ack_quorum", &self.ack_quorum)
            .field("state", &self.state)
            .field("last_entry_id", &self.last_entry_id)
            .field("length", &self.length)
            .field("digest", &self.digest)
            .field(
                "password",
                &format_args!("<{} bytes, not shown>", self.password.len()),
            )
            .field("segments", &self.segments)
            .field("custom", &self.custom)
            .finish()
    }
}

const HEADER: &[u8] = b"BookieMetadataFormatVersion\t";

impl LedgerMetadata {
    /// Parses a ledger node. Format v3 (binary, BookKeeper 4.9+) is read;
    /// v1/v2 (text, BookKeeper < 4.9) are named in the error.
    pub fn parse(ledger_id: i64, node: &[u8]) -> Result<Self, BookKeeperError> {
        let bad = |what: String| BookKeeperError::Metadata(format!("ledger {ledger_id}: {what}"));
        let rest = node
            .strip_prefix(HEADER)
            .ok_or_else(|| bad("node does not start with `BookieMetadataFormatVersion`".into()))?;
        let nl = rest
            .iter()
            .take(11)
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("no line end after the format version".into()))?;
        let version = std::str::from_utf8(&rest[..nl])
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| bad("unreadable format version".into()))?;
        if version != 3 {
            return Err(bad(format!(
                "metadata format v{version} (BookKeeper before 4.9) is not supported; v3 is"
            )));
        }
        let format = LedgerMetadataFormat::decode_length_delimited(&rest[nl + 1..])
            .map_err(|e| bad(format!("invalid LedgerMetadataFormat protobuf: {e}")))?;
        Self::from_format(ledger_id, format)
    }

    /// From the protobuf (also carried by offload index objects).
    pub fn from_format(ledger_id: i64, f: LedgerMetadataFormat) -> Result<Self, BookKeeperError> {
        let bad = |what: String| BookKeeperError::Metadata(format!("ledger {ledger_id}: {what}"));
        let positive = |v: i32, name: &str| {
            usize::try_from(v)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| bad(format!("{name} {v} is not positive")))
        };
        let ensemble_size = positive(f.ensemble_size, "ensemble size")?;
        let write_quorum = positive(f.quorum_size, "write quorum")?;
        let ack_quorum = positive(f.ack_quorum_size.unwrap_or(f.quorum_size), "ack quorum")?;
        if write_quorum > ensemble_size || ack_quorum > write_quorum {
            return Err(bad(format!(
                "quorums E={ensemble_size} W={write_quorum} A={ack_quorum} are inconsistent"
            )));
        }
        let state = match f.state {
            1 => LedgerState::Open,
            2 => LedgerState::InRecovery,
            3 => LedgerState::Closed,
            s => return Err(bad(format!("unknown state {s}"))),
        };
        let digest =
            match f.digest_type {
                Some(d) => DigestType::from_metadata(d)
                    .ok_or_else(|| bad(format!("unknown digest type {d}")))?,
                None => return Err(bad(
                    "the metadata records no digest type (a pre-4.3 ledger); it cannot be verified"
                        .into(),
                )),
            };
        let mut segments = Vec::with_capacity(f.segment.len());
        for s in f.segment {
            if s.ensemble_member.len() != ensemble_size {
                return Err(bad(format!(
                    "ensemble from entry {} has {} bookies where the ensemble size is {ensemble_size}",
                    s.first_entry_id,
                    s.ensemble_member.len()
                )));
            }
            if segments
                .last()
                .is_some_and(|p: &Segment| p.first_entry_id > s.first_entry_id)
            {
                return Err(bad("ensembles are not ordered by first entry".into()));
            }
            segments.push(Segment {
                first_entry_id: s.first_entry_id,
                bookies: s.ensemble_member,
            });
        }
        if segments.is_empty() {
            return Err(bad("no ensemble".into()));
        }
        Ok(Self {
            ledger_id,
            ensemble_size,
            write_quorum,
            ack_quorum,
            state,
            last_entry_id: f.last_entry_id.unwrap_or(-1),
            length: f.length,
            digest,
            password: f.password.unwrap_or_default(),
            segments,
            custom: f
                .custom_metadata
                .into_iter()
                .map(|c| (c.key.unwrap_or_default(), c.value.unwrap_or_default()))
                .collect(),
        })
    }

    /// From the text form BookKeeper's `LedgerMetadata.toSafeString()` gives,
    /// which Pulsar's admin REST API returns as a ledger's `metadata` in
    /// `internal-stats?metadata=true`:
    /// `LedgerMetadata{formatVersion=3, ensembleSize=1, ..., state=CLOSED,
    /// length=2361, lastEntryId=5, digestType=CRC32, password=OMITTED,
    /// ensembles={0=[bk0]}, customMetadata={k=base64:...}}`. That text leaves
    /// the password out (`OMITTED`): `password` stands in for it (only HMAC
    /// digests use it); a `password=base64:...` in the text wins.
    pub fn from_safe_string(
        ledger_id: i64,
        text: &str,
        password: &[u8],
    ) -> Result<Self, BookKeeperError> {
        use base64::Engine as _;
        let bad = |what: String| BookKeeperError::Metadata(format!("ledger {ledger_id}: {what}"));
        let body = text
            .trim()
            .strip_prefix("LedgerMetadata{")
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| bad("text metadata does not read `LedgerMetadata{...}`".into()))?;
        let mut fields = std::collections::HashMap::new();
        for part in split_top(body) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("text metadata field `{part}` has no `=`")))?;
            fields.insert(k.trim(), v.trim());
        }
        let field = |name: &str| {
            fields
                .get(name)
                .copied()
                .ok_or_else(|| bad(format!("text metadata has no `{name}`")))
        };
        let int = |name: &str| -> Result<i64, BookKeeperError> {
            field(name)?
                .parse::<i64>()
                .map_err(|_| bad(format!("text metadata `{name}` is not an integer")))
        };
        let small = |name: &str| -> Result<i32, BookKeeperError> {
            i32::try_from(int(name)?)
                .map_err(|_| bad(format!("text metadata `{name}` is out of range")))
        };
        let version = int("formatVersion")?;
        if version != 3 {
            return Err(bad(format!(
                "metadata format v{version} (BookKeeper before 4.9) is not supported; v3 is"
            )));
        }
        let state = match field("state")? {
            "OPEN" => 1,
            "IN_RECOVERY" => 2,
            "CLOSED" => 3,
            s => return Err(bad(format!("unknown state {s}"))),
        };
        let digest =
            match fields.get("digestType").copied() {
                Some("CRC32") => 1,
                Some("MAC" | "HMAC") => 2,
                Some("CRC32C") => 3,
                Some("DUMMY") => 4,
                Some(d) => return Err(bad(format!("unknown digest type {d}"))),
                None => return Err(bad(
                    "the metadata records no digest type (a pre-4.3 ledger); it cannot be verified"
                        .into(),
                )),
            };
        let b64 = |v: &str, what: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(v)
                .map_err(|e| bad(format!("text metadata {what}: invalid base64: {e}")))
        };
        let password = match fields.get("password").copied() {
            Some(p) if p.starts_with("base64:") => b64(&p["base64:".len()..], "password")?,
            _ => password.to_vec(),
        };
        let inner = |name: &str, open: char, close: char| -> Result<&str, BookKeeperError> {
            let v = field(name)?;
            v.strip_prefix(open)
                .and_then(|r| r.strip_suffix(close))
                .ok_or_else(|| bad(format!("text metadata `{name}` is not `{open}...{close}`")))
        };
        let mut segment = Vec::new();
        for seg in split_top(inner("ensembles", '{', '}')?) {
            let (first, members) = seg
                .split_once('=')
                .ok_or_else(|| bad(format!("ensemble `{seg}` has no `=`")))?;
            let first_entry_id = first
                .trim()
                .parse::<i64>()
                .map_err(|_| bad(format!("ensemble `{seg}`: first entry is not an integer")))?;
            let members = members
                .trim()
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .ok_or_else(|| bad(format!("ensemble `{seg}` is not `N=[bookies]`")))?;
            segment.push(crate::proto::offload::ledger_metadata_format::Segment {
                ensemble_member: split_top(members).map(str::to_string).collect(),
                first_entry_id,
            });
        }
        let mut custom_metadata = Vec::new();
        if fields.contains_key("customMetadata") {
            for kv in split_top(inner("customMetadata", '{', '}')?) {
                let (k, v) = kv.rsplit_once("=base64:").ok_or_else(|| {
                    bad(format!("custom metadata `{kv}` is not `key=base64:...`"))
                })?;
                custom_metadata.push(
                    crate::proto::offload::ledger_metadata_format::CMetadataMapEntry {
                        key: Some(k.trim().to_string()),
                        value: Some(b64(v.trim(), &format!("custom metadata {k}"))?),
                    },
                );
            }
        }
        let closed = state == 3;
        let format = LedgerMetadataFormat {
            quorum_size: small("writeQuorumSize")?,
            ensemble_size: small("ensembleSize")?,
            length: if closed { int("length")? } else { 0 },
            last_entry_id: if closed {
                Some(int("lastEntryId")?)
            } else {
                None
            },
            state,
            segment,
            digest_type: Some(digest),
            password: Some(password),
            ack_quorum_size: Some(small("ackQuorumSize")?),
            ctime: None,
            custom_metadata,
            c_token: None,
        };
        Self::from_format(ledger_id, format)
    }

    /// The ledger node (format v3) for this metadata: what the metadata store
    /// holds for the ledger, byte for byte up to the fields it does not keep
    /// (creation time and token).
    pub fn to_node(&self) -> Vec<u8> {
        use crate::proto::offload::ledger_metadata_format::{CMetadataMapEntry, Segment as Seg};
        let digest = match self.digest {
            DigestType::Crc32 => 1,
            DigestType::Hmac => 2,
            DigestType::Crc32c => 3,
            DigestType::Dummy => 4,
        };
        let closed = self.state == LedgerState::Closed;
        let format = LedgerMetadataFormat {
            quorum_size: self.write_quorum as i32,
            ensemble_size: self.ensemble_size as i32,
            length: self.length,
            last_entry_id: closed.then_some(self.last_entry_id),
            state: match self.state {
                LedgerState::Open => 1,
                LedgerState::InRecovery => 2,
                LedgerState::Closed => 3,
            },
            segment: self
                .segments
                .iter()
                .map(|s| Seg {
                    ensemble_member: s.bookies.clone(),
                    first_entry_id: s.first_entry_id,
                })
                .collect(),
            digest_type: Some(digest),
            password: Some(self.password.clone()),
            ack_quorum_size: Some(self.ack_quorum as i32),
            ctime: None,
            custom_metadata: self
                .custom
                .iter()
                .map(|(k, v)| CMetadataMapEntry {
                    key: Some(k.clone()),
                    value: Some(v.clone()),
                })
                .collect(),
            c_token: None,
        };
        let mut node = HEADER.to_vec();
        node.extend_from_slice(b"3\n");
        node.extend_from_slice(&format.encode_length_delimited_to_vec());
        node
    }

    /// The ensemble holding entry `entry_id`: the last segment starting at or
    /// before it.
    pub fn ensemble(&self, entry_id: i64) -> &Segment {
        let i = self
            .segments
            .partition_point(|s| s.first_entry_id <= entry_id);
        &self.segments[i.saturating_sub(1)]
    }

    /// The last entry of the ensemble holding `entry_id`: the entry before
    /// the next ensemble's first, `i64::MAX` for the last ensemble.
    pub fn ensemble_last(&self, entry_id: i64) -> i64 {
        self.segments
            .iter()
            .find(|s| s.first_entry_id > entry_id)
            .map_or(i64::MAX, |s| s.first_entry_id.saturating_sub(1))
    }

    /// The bookies holding `entry_id`, in the order to try them:
    /// members `(e + k) mod E` for `k = 0..W` (round-robin distribution).
    pub fn write_set(&self, entry_id: i64) -> Vec<&str> {
        (0..self.write_quorum)
            .map(|k| self.replica(entry_id, k))
            .collect()
    }

    /// The `k`-th bookie of `entry_id`'s write set (see [`Self::write_set`]),
    /// without building the set. The metadata must pass
    /// [`Self::check_ensembles`]; an ensemble shorter than its size wraps.
    pub fn replica(&self, entry_id: i64, k: usize) -> &str {
        if self.segments.is_empty() {
            return "";
        }
        let seg = self.ensemble(entry_id);
        let n = seg.bookies.len().max(1);
        let e = self.ensemble_size.clamp(1, n) as i64;
        let i = (entry_id.rem_euclid(e) + (k as i64).rem_euclid(e)) % e;
        seg.bookies.get(i as usize).map_or("", String::as_str)
    }

    /// Whether the ensembles are usable for reading: at least one, each of
    /// `ensemble_size` bookies, with `1 <= ack <= write <= ensemble`. Parsed
    /// metadata always is; this guards values built by hand.
    pub fn check_ensembles(&self) -> Result<(), BookKeeperError> {
        let bad = |what: String| {
            Err(BookKeeperError::Metadata(format!(
                "ledger {}: {what}",
                self.ledger_id
            )))
        };
        if self.segments.is_empty() {
            return bad("no ensemble".into());
        }
        if self.write_quorum == 0
            || self.ack_quorum == 0
            || self.write_quorum > self.ensemble_size
            || self.ack_quorum > self.write_quorum
        {
            return bad(format!(
                "quorums E={} W={} A={} are inconsistent",
                self.ensemble_size, self.write_quorum, self.ack_quorum
            ));
        }
        if let Some(s) = self
            .segments
            .iter()
            .find(|s| s.bookies.len() != self.ensemble_size)
        {
            return bad(format!(
                "ensemble from entry {} has {} bookies where the ensemble size is {}",
                s.first_entry_id,
                s.bookies.len(),
                self.ensemble_size
            ));
        }
        Ok(())
    }

    /// A custom metadata value as text, if present and UTF-8.
    pub fn custom_str(&self, key: &str) -> Option<&str> {
        self.custom
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// The `, `-separated items of `text` at bracket depth 0 (`{}` and `[]`).
fn split_top(text: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.into_iter().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // Closed ledger 0 from a live 4.17.3 bookie (spec §2.3): 122 bytes. The
    // spec's listing has a stray `20` after "pulsar", which its own lengths
    // (5a15, 5b = 91) leave no room for; it is left out here.
    const LEDGER0: &str = "426f6f6b69654d65746164617461466f726d617456657273696f6e09330a 5b
        0801 1001 1846 2004 2803
        3213 0a0f 3132372e302e302e313a3336353337 1000
        3803 4200 4801
        5a1b 0a09 636f6d706f6e656e74 120e 6d616e616765642d6c6564676572
        5a15 0a0b 6170706c69636174696f6e 1206 70756c736172
        6000";

    #[test]
    fn parses_the_spec_vector() {
        let node = unhex(LEDGER0);
        assert_eq!(node.len(), 122);
        let m = LedgerMetadata::parse(0, &node).unwrap();
        assert_eq!(m.state, LedgerState::Closed);
        assert_eq!((m.ensemble_size, m.write_quorum, m.ack_quorum), (1, 1, 1));
        assert_eq!((m.last_entry_id, m.length), (4, 70));
        assert_eq!(m.digest, DigestType::Crc32c);
        assert!(m.password.is_empty());
        assert_eq!(m.segments[0].bookies, vec!["127.0.0.1:36537".to_string()]);
        assert_eq!(m.custom_str("component"), Some("managed-ledger"));
    }

    #[test]
    fn rejects_text_formats_and_garbage_with_reasons() {
        let e =
            LedgerMetadata::parse(7, b"BookieMetadataFormatVersion\t2\nquorumSize: 1").unwrap_err();
        assert!(
            e.to_string().contains("ledger 7: metadata format v2"),
            "{e}"
        );
        let e = LedgerMetadata::parse(7, b"hello").unwrap_err();
        assert!(e.to_string().contains("does not start"), "{e}");
        let mut node = unhex(LEDGER0);
        node.truncate(60);
        let e = LedgerMetadata::parse(0, &node).unwrap_err();
        assert!(
            e.to_string().contains("invalid LedgerMetadataFormat"),
            "{e}"
        );
    }

    // As a Pulsar 4.2.4 broker's `internal-stats?metadata=true` gives them.
    const ADMIN_CLOSED: &str = "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, \
        ackQuorumSize=1, state=CLOSED, length=2361, lastEntryId=5, digestType=CRC32, password=OMITTED, \
        ensembles={0=[bk0test]}, customMetadata={pulsar/compactedTopic=base64:cGVyc2lzdGVudDovL3B1YmxpYy9kZWZhdWx0L2phdmEtbWl4ZWQ=, \
        component=base64:Y29tcGFjdGVkLWxlZGdlcg==, application=base64:cHVsc2Fy, pulsar/compactedTo=base64:CBUQBDAA}}";
    const ADMIN_OPEN: &str = "LedgerMetadata{formatVersion=3, ensembleSize=3, writeQuorumSize=2, ackQuorumSize=2, \
        state=OPEN, digestType=CRC32C, password=OMITTED, ensembles={0=[a:1, b:2, c:3], 7=[a:1, d:4, c:3]}, \
        customMetadata={component=base64:bWFuYWdlZC1sZWRnZXI=}}";

    #[test]
    fn reads_the_admin_text_form_and_round_trips_through_a_node() {
        let m = LedgerMetadata::from_safe_string(43, ADMIN_CLOSED, b"").unwrap();
        assert_eq!(m.state, LedgerState::Closed);
        assert_eq!((m.last_entry_id, m.length), (5, 2361));
        assert_eq!(m.digest, DigestType::Crc32);
        assert_eq!(m.segments[0].bookies, vec!["bk0test".to_string()]);
        assert_eq!(
            m.custom_str("pulsar/compactedTopic"),
            Some("persistent://public/default/java-mixed")
        );
        assert_eq!(m.custom.len(), 4);
        assert_eq!(LedgerMetadata::parse(43, &m.to_node()).unwrap(), m);

        let o = LedgerMetadata::from_safe_string(9, ADMIN_OPEN, b"secret").unwrap();
        assert_eq!(o.state, LedgerState::Open);
        assert_eq!((o.ensemble_size, o.write_quorum, o.ack_quorum), (3, 2, 2));
        assert_eq!(o.last_entry_id, -1);
        assert_eq!(o.password, b"secret");
        assert_eq!(o.segments.len(), 2);
        assert_eq!(o.write_set(8), vec!["c:3", "a:1"]);
        assert_eq!(LedgerMetadata::parse(9, &o.to_node()).unwrap(), o);
        // The spec vector's node survives parse -> to_node -> parse.
        let v = LedgerMetadata::parse(0, &unhex(LEDGER0)).unwrap();
        assert_eq!(LedgerMetadata::parse(0, &v.to_node()).unwrap(), v);
    }

    #[test]
    fn rejects_bad_admin_text_with_reasons() {
        let cases = [
            ("hello", "does not read `LedgerMetadata{...}`"),
            ("LedgerMetadata{formatVersion=2}", "metadata format v2"),
            (
                "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=OPEN, ensembles={0=[a:1]}}",
                "no digest type",
            ),
            (
                "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=WEIRD}",
                "unknown state WEIRD",
            ),
            (
                "LedgerMetadata{formatVersion=3, ensembleSize=2, writeQuorumSize=1, ackQuorumSize=1, state=OPEN, digestType=CRC32C, ensembles={0=[a:1]}}",
                "has 1 bookies where the ensemble size is 2",
            ),
            (
                "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, digestType=CRC32C, ensembles={0=[a:1]}}",
                "no `length`",
            ),
            (
                "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=OPEN, digestType=CRC32C, ensembles={0=[a:1]}, customMetadata={k=base64:!!}}",
                "custom metadata k: invalid base64",
            ),
        ];
        for (text, want) in cases {
            let e = LedgerMetadata::from_safe_string(4, text, b"").unwrap_err();
            assert!(e.to_string().contains("ledger 4: "), "{e}");
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn debug_leaves_the_password_out() {
        let mut m = LedgerMetadata::from_safe_string(9, ADMIN_OPEN, b"hunter2-secret").unwrap();
        let text = format!("{m:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("104, 117"),
            "{text}"
        );
        assert!(text.contains("<14 bytes, not shown>"), "{text}");
        m.password.clear();
        assert!(format!("{m:?}").contains("<0 bytes"));
    }

    #[test]
    fn paths_follow_the_hybrid_layout() {
        assert_eq!(ledger_path("/ledgers", 1), "/ledgers/00/0000/L0001");
        assert_eq!(ledger_path("/ledgers/", 1234567), "/ledgers/00/0123/L4567");
        assert_eq!(
            ledger_path("/ledgers", 12345678901),
            "/ledgers/000/0000/0123/4567/L8901"
        );
    }

    fn meta(e: usize, w: usize, segs: &[(i64, &[&str])]) -> LedgerMetadata {
        LedgerMetadata {
            ledger_id: 1,
            ensemble_size: e,
            write_quorum: w,
            ack_quorum: w,
            state: LedgerState::Closed,
            last_entry_id: 100,
            length: 0,
            digest: DigestType::Crc32c,
            password: vec![],
            segments: segs
                .iter()
                .map(|(f, b)| Segment {
                    first_entry_id: *f,
                    bookies: b.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
            custom: vec![],
        }
    }

    #[test]
    fn write_sets_round_robin_within_the_entry_s_ensemble() {
        // E=3, W=2: entry 5 is on members 2 and 0 (spec §3.5).
        let m = meta(3, 2, &[(0, &["a", "b", "c"]), (10, &["a", "d", "c"])]);
        assert_eq!(m.write_set(5), vec!["c", "a"]);
        assert_eq!(m.write_set(9), vec!["a", "b"]);
        // From entry 10 on, b was replaced by d.
        assert_eq!(m.write_set(10), vec!["d", "c"]);
        assert_eq!(m.write_set(13), vec!["d", "c"]);
    }
}
