//! A topic's storage layout, resolved from its metadata store in one walk
//! (spec bookkeeper.md §1, §2.5): its partitions, each partition's ledgers
//! (with their BookKeeper metadata and offload state), its compacted ledger
//! and compaction horizon, and the addresses of every bookie they name.
//!
//! Every store path is built here ([`TopicName`], [`ledger_path`], the bookie
//! registrations); the store is reached through [`MetadataStore`].

use std::collections::{BTreeMap, BTreeSet};

use crate::bookkeeper::{ledger_path, BookKeeperError, LedgerMetadata};
use crate::metadata_store::{
    bookie_address, compacted_ledger, cursor_info, managed_ledger_info, partition_count,
    MetadataError, MetadataStore, OffloadState, TopicName,
};

/// The compaction subscription's cursor.
pub const COMPACTION_CURSOR: &str = "__compaction";
/// The most partitions a topic's metadata may give (Pulsar caps them with
/// `maxNumPartitionsPerPartitionedTopic`, unlimited by default; 100,000 is far
/// above any real topic and keeps a corrupt count from building millions of names).
pub const MAX_PARTITIONS: i32 = 100_000;
/// Where bookies register, writable and read-only.
const BOOKIE_DIRS: [&str; 2] = ["/ledgers/available", "/ledgers/available/readonly"];

/// One ledger of a partition, with what is needed to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    pub ledger_id: i64,
    pub entries: i64,
    pub size: i64,
    /// The ledger node's bytes (`None` when the BookKeeper copy is gone).
    pub node: Option<Vec<u8>>,
    /// The parsed node (`None` with it).
    pub metadata: Option<LedgerMetadata>,
    pub offload: OffloadState,
}

/// One managed ledger: a non-partitioned topic (`partition` -1), or one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub topic: String,
    pub partition: i32,
    pub ledgers: Vec<Ledger>,
    /// The compacted ledger of the `__compaction` cursor, if the topic was compacted.
    pub compacted: Option<Ledger>,
    /// The last entry compaction read (a compacted read continues after it).
    pub horizon: Option<(i64, i64)>,
}

/// A topic's storage layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLayout {
    pub topic: String,
    pub partitions: Vec<Partition>,
    /// Bookie id → `host:port`, for every bookie the ledgers name.
    pub bookies: BTreeMap<String, String>,
}

/// Reads the last entry of a compaction cursor's own ledger from its bookies
/// (id → address): `Ok(None)` when nothing is readable. An
/// [`BookKeeperError::Io`] (no bookie answers: a stopped cluster read from its
/// files) falls back to the cursor node's own snapshot.
pub type LastEntry<'a> = dyn FnMut(&LedgerMetadata, &BTreeMap<String, String>) -> Result<Option<Vec<u8>>, BookKeeperError>
    + 'a;

/// Resolves `topic` from `store`: every partition (only those in `partitions`
/// when given; an index the topic lacks is an error), or the one partition
/// the name gives. `last_entry` reads a cursor ledger's last entry, which
/// holds the authoritative compaction state; without it the cursor node's
/// snapshot is used.
pub fn resolve_topic(
    topic: &str,
    store: &dyn MetadataStore,
    partitions: Option<&[i32]>,
    mut last_entry: Option<&mut LastEntry<'_>>,
) -> Result<TopicLayout, MetadataError> {
    let name = TopicName::parse(topic)?;
    let full = name.full();
    let mut names = match name.partition() {
        Some(i) => vec![(name.clone(), i)],
        None => {
            let path = name.partitioned_metadata_path();
            match store.get(&path)? {
                None => vec![(name.clone(), -1)],
                Some(node) => {
                    let n = partition_count(&node).map_err(|e| at(&path, e))?;
                    if n > MAX_PARTITIONS {
                        return Err(MetadataError::Node(format!(
                            "topic {full}: the partition count at {path} is {n}, expected a partition count from 0 to 100,000"
                        )));
                    }
                    (0..n).map(|i| (name.with_partition(i), i)).collect()
                }
            }
        }
    };
    if let Some(wanted) = partitions {
        let mut unknown: Vec<i32> = wanted
            .iter()
            .copied()
            .filter(|w| !names.iter().any(|(_, i)| i == w))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            return Err(MetadataError::Name(format!(
                "topic {full} has no partition {unknown:?}"
            )));
        }
        names.retain(|(_, i)| wanted.contains(i));
    }
    let mut parts = Vec::with_capacity(names.len());
    for (name, index) in names {
        let path = name.managed_ledger_path();
        let Some(node) = store.get(&path)? else {
            let full = name.full();
            return Err(MetadataError::Missing(format!(
                "unknown topic {full}: no managed ledger at {path}"
            )));
        };
        let ml = managed_ledger_info(&node).map_err(|e| at(&path, e))?;
        let ledgers = ml
            .ledgers
            .into_iter()
            .map(|l| ledger(store, l.ledger_id, l.entries, l.size, l.offload))
            .collect::<Result<Vec<_>, _>>()?;
        let cursor = name.cursor_path(COMPACTION_CURSOR);
        let (compacted, horizon) = compaction(store, &cursor, last_entry.as_deref_mut())?;
        parts.push(Partition {
            topic: name.full(),
            partition: index,
            ledgers,
            compacted,
            horizon,
        });
    }
    let named = parts
        .iter()
        .flat_map(|p| p.ledgers.iter().chain(&p.compacted));
    let bookies = bookie_addresses(store, named)?;
    Ok(TopicLayout {
        topic: full,
        partitions: parts,
        bookies,
    })
}

/// Ledgers by id, in BookKeeper (not offloaded), with their nodes, and the
/// addresses of their bookies (a schema registry's ledgers, say).
pub fn resolve_ledgers(
    store: &dyn MetadataStore,
    ids: &[i64],
) -> Result<(Vec<Ledger>, BTreeMap<String, String>), MetadataError> {
    let each = |&id: &i64| ledger(store, id, 0, 0, OffloadState::BookKeeper);
    let ledgers = ids.iter().map(each).collect::<Result<Vec<_>, _>>()?;
    let bookies = bookie_addresses(store, ledgers.iter())?;
    Ok((ledgers, bookies))
}

/// `e` with the path of the node it is about.
fn at(path: &str, e: impl std::fmt::Display) -> MetadataError {
    MetadataError::Node(format!("node {path}: {e}"))
}

/// A ledger and its node (absent when the BookKeeper copy is gone).
fn ledger(
    store: &dyn MetadataStore,
    ledger_id: i64,
    entries: i64,
    size: i64,
    offload: OffloadState,
) -> Result<Ledger, MetadataError> {
    let path = ledger_path("/ledgers", ledger_id);
    let node = store.get(&path)?;
    let metadata = node
        .as_deref()
        .map(|n| LedgerMetadata::parse(ledger_id, n))
        .transpose();
    let metadata = metadata.map_err(|e| at(&path, e))?;
    Ok(Ledger {
        ledger_id,
        entries,
        size,
        node,
        metadata,
        offload,
    })
}

/// The address of every bookie the ledgers' ensembles name: from its
/// registration node, else (not registered: down, or never) the id itself.
fn bookie_addresses<'a>(
    store: &dyn MetadataStore,
    ledgers: impl Iterator<Item = &'a Ledger>,
) -> Result<BTreeMap<String, String>, MetadataError> {
    let segments = ledgers
        .filter_map(|l| l.metadata.as_ref())
        .flat_map(|m| &m.segments);
    let ids: BTreeSet<&str> = segments
        .flat_map(|s| s.bookies.iter().map(String::as_str))
        .collect();
    let mut out = BTreeMap::new();
    for id in ids {
        let mut address = id.to_string();
        for dir in BOOKIE_DIRS {
            if let Some(node) = store.get(&format!("{dir}/{id}"))? {
                address = bookie_address(id, &node)?;
                break;
            }
        }
        out.insert(id.to_string(), address);
    }
    Ok(out)
}

/// A compacted ledger and the compaction horizon.
type Compacted = (Option<Ledger>, Option<(i64, i64)>);

/// The compacted ledger and the horizon, from the `__compaction` cursor.
fn compaction(
    store: &dyn MetadataStore,
    path: &str,
    last_entry: Option<&mut LastEntry<'_>>,
) -> Result<Compacted, MetadataError> {
    let Some(node) = store.get(path)? else {
        return Ok((None, None));
    };
    let cursor = cursor_info(&node).map_err(|e| at(path, e))?;
    let mut state = compacted_ledger(&cursor, None)?;
    if let (true, Some(read)) = (cursor.cursors_ledger_id >= 0, last_entry) {
        let own = ledger(
            store,
            cursor.cursors_ledger_id,
            0,
            0,
            OffloadState::BookKeeper,
        )?;
        if let Some(meta) = &own.metadata {
            let bookies = bookie_addresses(store, std::iter::once(&own))?;
            match read(meta, &bookies) {
                Ok(Some(entry)) => {
                    state = compacted_ledger(&cursor, Some(&entry)).map_err(|e| at(path, e))?
                }
                Ok(None) | Err(BookKeeperError::Io(_)) => {}
                Err(BookKeeperError::Interrupted(e)) => return Err(MetadataError::Io(e)),
                Err(e) => return Err(MetadataError::Node(format!("cursor ledger of {path}: {e}"))),
            }
        }
    }
    match state.ledger_id {
        None => Ok((None, None)),
        Some(id) => Ok((
            Some(ledger(store, id, 0, 0, OffloadState::BookKeeper)?),
            state.horizon,
        )),
    }
}

/// The last readable entry of a ledger, read with `client` (`None`: nothing
/// readable, or no replica served it).
pub fn read_last_entry(
    client: &mut crate::bookkeeper::BookieClient,
    meta: &LedgerMetadata,
) -> Result<Option<Vec<u8>>, BookKeeperError> {
    let last = client.last_readable(meta)?;
    if last < 0 {
        return Ok(None);
    }
    let rows = client.read_ledger(meta, last, Some(last))?;
    Ok(rows.into_iter().next().and_then(|r| r.data.ok()))
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::metadata_store::MemoryStore;
    use crate::proto::bookkeeper as pb;
    use crate::proto::offload::{LedgerInfo, OffloadContext};

    fn node(ledger_id: i64, bookies: &str) -> Vec<u8> {
        let text = format!(
            "LedgerMetadata{{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, \
             state=CLOSED, length=10, lastEntryId=1, digestType=CRC32C, password=OMITTED, \
             ensembles={{0=[{bookies}]}}, customMetadata={{}}}}"
        );
        LedgerMetadata::from_safe_string(ledger_id, &text, b"")
            .unwrap()
            .to_node()
    }

    fn managed(ids: &[i64]) -> Vec<u8> {
        let info = |&ledger_id: &i64| LedgerInfo {
            ledger_id,
            entries: Some(2),
            size: Some(10),
            offload_context: (ledger_id == 1).then(|| OffloadContext {
                uid_msb: Some(7),
                complete: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ml = pb::ManagedLedgerInfo {
            ledger_info: ids.iter().map(info).collect(),
            ..Default::default()
        };
        ml.encode_to_vec()
    }

    fn cursor(compacted: i64, own_ledger: i64) -> Vec<u8> {
        pb::ManagedCursorInfo {
            cursors_ledger_id: own_ledger,
            mark_delete_ledger_id: Some(2),
            mark_delete_entry_id: Some(1),
            properties: vec![pb::LongProperty {
                name: "CompactedTopicLedger".into(),
                value: compacted,
            }],
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// A partitioned topic of two partitions; partition 1 compacted; bookie
    /// `bk1` registered (legacy, empty node), `bk2` read-only, `bk3` not at all.
    fn cluster() -> MemoryStore {
        let mut s = MemoryStore::default();
        s.put(
            "/admin/partitioned-topics/t/ns/persistent/x",
            r#"{"partitions":2}"#,
        );
        s.put(
            "/managed-ledgers/t/ns/persistent/x-partition-0",
            managed(&[2, 1]),
        );
        s.put(
            "/managed-ledgers/t/ns/persistent/x-partition-1",
            managed(&[3]),
        );
        s.put(
            "/managed-ledgers/t/ns/persistent/x-partition-1/__compaction",
            cursor(9, -1),
        );
        s.put(ledger_path("/ledgers", 2), node(2, "bk1"));
        s.put(ledger_path("/ledgers", 3), node(3, "bk2"));
        s.put(ledger_path("/ledgers", 9), node(9, "bk3"));
        s.put("/ledgers/available/bk1", "");
        s.put("/ledgers/available/readonly/bk2", "");
        s
    }

    #[test]
    fn a_partitioned_topic_in_one_walk() {
        let layout = resolve_topic("persistent://t/ns/x", &cluster(), None, None).unwrap();
        assert_eq!(layout.topic, "persistent://t/ns/x");
        let [p0, p1] = &layout.partitions[..] else {
            panic!("two partitions")
        };
        assert_eq!(
            (p0.topic.as_str(), p0.partition),
            ("persistent://t/ns/x-partition-0", 0)
        );
        let ids: Vec<i64> = p0.ledgers.iter().map(|l| l.ledger_id).collect();
        assert_eq!(ids, [1, 2], "topic order");
        let (offloaded, kept) = (&p0.ledgers[0], &p0.ledgers[1]);
        assert!(offloaded.node.is_none() && offloaded.metadata.is_none());
        assert!(matches!(
            offloaded.offload,
            OffloadState::Offloaded { uid_msb: 7, .. }
        ));
        assert_eq!(
            (kept.entries, kept.size, kept.node.as_deref()),
            (2, 10, Some(&node(2, "bk1")[..]))
        );
        assert_eq!(p0.compacted, None);
        assert_eq!(p1.compacted.as_ref().map(|l| l.ledger_id), Some(9));
        assert_eq!(p1.horizon, Some((2, 1)));
        let bookies: Vec<(&str, &str)> = layout
            .bookies
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(bookies, [("bk1", "bk1"), ("bk2", "bk2"), ("bk3", "bk3")]);
        let only = resolve_topic("t/ns/x", &cluster(), Some(&[1]), None).unwrap();
        assert_eq!(only.partitions, std::slice::from_ref(p1));
        let one = resolve_topic("t/ns/x-partition-0", &cluster(), None, None).unwrap();
        assert_eq!(
            (one.topic.as_str(), &one.partitions[..]),
            ("persistent://t/ns/x-partition-0", &[p0.clone()][..])
        );
        let e = resolve_topic("t/ns/x", &cluster(), Some(&[5, 1, 3]), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "topic persistent://t/ns/x has no partition [3, 5]"
        );
    }

    #[test]
    fn a_non_partitioned_topic_and_missing_nodes() {
        let mut s = MemoryStore::default();
        s.put(
            "/managed-ledgers/public/default/persistent/y",
            managed(&[4]),
        );
        let layout = resolve_topic("y", &s, None, None).unwrap();
        assert_eq!(layout.partitions[0].partition, -1);
        assert_eq!(
            layout.partitions[0].ledgers[0].node, None,
            "a ledger node gone"
        );
        assert!(layout.bookies.is_empty());
        let e = resolve_topic("z", &s, None, None).unwrap_err();
        assert!(matches!(e, MetadataError::Missing(_)));
        let want = "unknown topic persistent://public/default/z: no managed ledger at /managed-ledgers/public/default/persistent/z";
        assert_eq!(e.to_string(), want);
    }

    #[test]
    fn a_bad_node_names_its_path() {
        let mut s = cluster();
        s.put(ledger_path("/ledgers", 3), b"\xff\xff".to_vec());
        let e = resolve_topic("t/ns/x", &s, None, None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("node /ledgers/00/0000/L0003: "), "{e}");
        s.put(
            "/admin/partitioned-topics/t/ns/persistent/x",
            r#"{"partitions":200000}"#,
        );
        let e = resolve_topic("t/ns/x", &s, None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "the partition count at /admin/partitioned-topics/t/ns/persistent/x is 200000"
            ),
            "{e}"
        );
        s.put(
            "/managed-ledgers/public/default/persistent/q",
            b"\x0a\xff".to_vec(),
        );
        let e = resolve_topic("q", &s, None, None).unwrap_err().to_string();
        assert!(
            e.starts_with("node /managed-ledgers/public/default/persistent/q: invalid"),
            "{e}"
        );
    }

    #[test]
    fn the_cursor_ledger_s_last_entry_wins_unless_no_bookie_answers() {
        let mut s = cluster();
        s.put(
            "/managed-ledgers/t/ns/persistent/x-partition-1/__compaction",
            cursor(9, 8),
        );
        s.put(ledger_path("/ledgers", 8), node(8, "bk1"));
        s.put(ledger_path("/ledgers", 11), node(11, "bk1"));
        let position = pb::PositionInfo {
            ledger_id: 3,
            entry_id: 1,
            properties: vec![pb::LongProperty {
                name: "CompactedTopicLedger".into(),
                value: 11,
            }],
            ..Default::default()
        };
        let mut asked = Vec::new();
        let mut read = |m: &LedgerMetadata, b: &BTreeMap<String, String>| {
            asked.push((m.ledger_id, b.clone()));
            Ok(Some(position.encode_to_vec()))
        };
        let layout = resolve_topic("t/ns/x", &s, Some(&[1]), Some(&mut read)).unwrap();
        let p = &layout.partitions[0];
        assert_eq!(
            (p.compacted.as_ref().unwrap().ledger_id, p.horizon),
            (11, Some((3, 1)))
        );
        assert_eq!(asked, [(8, BTreeMap::from([("bk1".into(), "bk1".into())]))]);
        let mut down = |_: &LedgerMetadata, _: &BTreeMap<String, String>| {
            Err(BookKeeperError::Io("down".into()))
        };
        let layout = resolve_topic("t/ns/x", &s, Some(&[1]), Some(&mut down)).unwrap();
        let p = &layout.partitions[0];
        assert_eq!(
            (p.compacted.as_ref().unwrap().ledger_id, p.horizon),
            (9, Some((2, 1))),
            "the node's snapshot"
        );
        let mut stop = |_: &LedgerMetadata, _: &BTreeMap<String, String>| {
            Err(BookKeeperError::Interrupted("stop".into()))
        };
        assert!(matches!(
            resolve_topic("t/ns/x", &s, None, Some(&mut stop)),
            Err(MetadataError::Io(_))
        ));
    }
}
