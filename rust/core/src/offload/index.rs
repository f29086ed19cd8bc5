//! Index objects: v1 (`OffloadIndexBlockImpl`, ledger-based offload) and v2
//! (`OffloadIndexBlockV2Impl`, streaming offload), big-endian.
//!
//! ```text
//! v1: i32 magic 0xDE47DE47, i32 indexBlockLength, i64 dataObjectLength,
//!     i64 dataHeaderLength, i32 entryCount, i32 metadataLength,
//!     LedgerMetadataFormat bytes, entryCount × (i64 firstEntryId, i32 partId, i64 offset)
//! v2: i32 magic 0x3D1FB0BC, i32 indexBlockLength, i64 dataObjectLength,
//!     i64 dataHeaderLength, then until the end, per ledger:
//!     i64 ledgerId, i32 entryCount, i32 metadataLength, LedgerInfo bytes, entries as v1
//! ```
//!
//! One index entry per block; `offset` is where the block starts in the data
//! object. Pulsar ignores `indexBlockLength` when reading, and keeps the first
//! of two entries with the same first entry id; so do we.

use prost::Message as _;

use super::block::{be_i32, be_i64, be_u32};
use super::{Object, OffloadError, Result};
use crate::proto::offload::{LedgerInfo, LedgerMetadataFormat};

pub const INDEX_V1_MAGIC: u32 = 0xDE47_DE47;
pub const INDEX_V2_MAGIC: u32 = 0x3D1F_B0BC;
/// Bytes per index entry: i64 first entry id, i32 part id, i64 offset.
const INDEX_ENTRY_SIZE: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexVersion {
    V1,
    V2,
}

/// A ledger's metadata as the index carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerMeta {
    /// v1: BookKeeper's ledger metadata (`OffloadUtils.buildLedgerMetadataFormat`).
    BookKeeper(LedgerMetadataFormat),
    /// v2: the managed ledger's `LedgerInfo` for the ledger.
    LedgerInfo(LedgerInfo),
}

impl LedgerMeta {
    /// The ledger's last entry id (its LAC), as Pulsar's read handle derives
    /// it: `lastEntryId` (v1) or `entries - 1` (v2). `None` when the field is absent.
    pub fn last_entry_id(&self) -> Option<i64> {
        match self {
            LedgerMeta::BookKeeper(m) => m.last_entry_id,
            LedgerMeta::LedgerInfo(i) => i.entries.map(|n| n - 1),
        }
    }

    /// Total entry bytes of the ledger.
    pub fn length(&self) -> Option<i64> {
        match self {
            LedgerMeta::BookKeeper(m) => Some(m.length),
            LedgerMeta::LedgerInfo(i) => i.size,
        }
    }
}

/// One index entry: the block starting at `offset` begins with `first_entry_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub first_entry_id: i64,
    pub part_id: i32,
    pub offset: i64,
}

/// One ledger's part of an index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedLedger {
    /// v2 stores it; a v1 index does not (the object name does).
    pub ledger_id: Option<i64>,
    pub metadata: LedgerMeta,
    /// Sorted by `first_entry_id`.
    pub entries: Vec<IndexEntry>,
}

/// A parsed index object.
#[derive(Debug, Clone, PartialEq)]
pub struct OffloadIndex {
    pub version: IndexVersion,
    /// As stored; Pulsar ignores it on read.
    pub index_block_length: i32,
    pub data_object_length: i64,
    pub data_header_length: i64,
    /// One for v1; one per ledger for v2.
    pub ledgers: Vec<IndexedLedger>,
}

/// One data block as the index places it: what a reader needs to fetch it
/// alone (`offset`, `length`) and which entries it should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRange {
    pub ledger_id: Option<i64>,
    pub first_entry_id: i64,
    /// The next block's first entry − 1, or for a ledger's last block its
    /// metadata's last entry id (`None` when the metadata has none).
    pub last_entry_id: Option<i64>,
    pub part_id: i32,
    /// Byte offset of the block header in the data object.
    pub offset: u64,
    /// Up to the next block (or the end of the data object).
    pub length: u64,
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn need(&self, n: usize, what: &'static str) -> Result<()> {
        let available = self.buf.len() - self.pos;
        if available < n {
            return Err(OffloadError::Truncated {
                what,
                object: Object::Index,
                offset: self.pos as u64,
                needed: n as u64,
                available: available as u64,
            });
        }
        Ok(())
    }
    fn i32(&mut self, what: &'static str) -> Result<i32> {
        self.need(4, what)?;
        self.pos += 4;
        Ok(be_i32(self.buf, self.pos - 4))
    }
    fn i64(&mut self, what: &'static str) -> Result<i64> {
        self.need(8, what)?;
        self.pos += 8;
        Ok(be_i64(self.buf, self.pos - 8))
    }
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        self.need(n, what)?;
        self.pos += n;
        Ok(&self.buf[self.pos - n..self.pos])
    }
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

fn invalid(what: &'static str, offset: usize, reason: String) -> OffloadError {
    OffloadError::Invalid {
        what,
        object: Object::Index,
        offset: offset as u64,
        reason,
    }
}

/// Reads `count` index entries after checking they fit, so a corrupt count
/// allocates nothing.
fn read_entries(c: &mut Cursor<'_>, count: i32) -> Result<Vec<IndexEntry>> {
    let at = c.pos;
    let count = usize::try_from(count)
        .map_err(|_| invalid("index entry count", at, format!("{count} is negative")))?;
    let needed = count.saturating_mul(INDEX_ENTRY_SIZE);
    c.need(needed, "index entries")?;
    let mut entries: Vec<IndexEntry> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = c.pos;
        let e = IndexEntry {
            first_entry_id: c.i64("index entry")?,
            part_id: c.i32("index entry")?,
            offset: c.i64("index entry")?,
        };
        if e.first_entry_id < 0 || e.offset < 0 {
            return Err(invalid(
                "index entry",
                at,
                format!(
                    "negative first entry id {} or offset {}",
                    e.first_entry_id, e.offset
                ),
            ));
        }
        entries.push(e);
    }
    // Java keys a TreeMap by first entry id with putIfAbsent: sorted, first one wins.
    entries.sort_by_key(|e| e.first_entry_id); // stable: duplicates keep file order
    entries.dedup_by_key(|e| e.first_entry_id);
    Ok(entries)
}

impl OffloadIndex {
    /// Parses an index object (either version, told apart by the magic).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut c = Cursor { buf: bytes, pos: 0 };
        c.need(4, "index header")?;
        let magic = be_u32(bytes, 0);
        let version = match magic {
            INDEX_V1_MAGIC => IndexVersion::V1,
            INDEX_V2_MAGIC => IndexVersion::V2,
            found => {
                return Err(OffloadError::BadMagic {
                    what: "index",
                    object: Object::Index,
                    offset: 0,
                    found,
                    expected: "0xde47de47 (v1) or 0x3d1fb0bc (v2)",
                })
            }
        };
        c.pos = 4;
        let index_block_length = c.i32("index header")?;
        let at = c.pos;
        let data_object_length = c.i64("index header")?;
        let data_header_length = c.i64("index header")?;
        if data_object_length < 0 || data_header_length < 0 {
            return Err(invalid(
                "index header",
                at,
                format!(
                    "negative data object length {data_object_length} or data header length {data_header_length}"
                ),
            ));
        }
        let mut ledgers = Vec::new();
        match version {
            IndexVersion::V1 => {
                let count = c.i32("index header")?;
                let meta_len = c.i32("index header")?;
                let meta = read_meta(&mut c, meta_len)?;
                let metadata = LedgerMetadataFormat::decode(meta.1).map_err(|e| {
                    invalid(
                        "ledger metadata (LedgerMetadataFormat)",
                        meta.0,
                        e.to_string(),
                    )
                })?;
                ledgers.push(IndexedLedger {
                    ledger_id: None,
                    metadata: LedgerMeta::BookKeeper(metadata),
                    entries: read_entries(&mut c, count)?,
                });
            }
            IndexVersion::V2 => {
                while c.remaining() > 0 {
                    let at = c.pos;
                    let ledger_id = c.i64("v2 ledger header")?;
                    let count = c.i32("v2 ledger header")?;
                    let meta_len = c.i32("v2 ledger header")?;
                    let meta = read_meta(&mut c, meta_len)?;
                    let info = LedgerInfo::decode(meta.1)
                        .map_err(|e| invalid("ledger info (LedgerInfo)", meta.0, e.to_string()))?;
                    if ledger_id < 0 {
                        return Err(invalid(
                            "v2 ledger header",
                            at,
                            format!("ledger id {ledger_id} is negative"),
                        ));
                    }
                    ledgers.push(IndexedLedger {
                        ledger_id: Some(ledger_id),
                        metadata: LedgerMeta::LedgerInfo(info),
                        entries: read_entries(&mut c, count)?,
                    });
                }
            }
        }
        Ok(OffloadIndex {
            version,
            index_block_length,
            data_object_length,
            data_header_length,
            ledgers,
        })
    }

    /// Every block, in data-object order, with the byte range to fetch it
    /// and the entries it should hold. `ledger_id` names the ledger of a v1
    /// index (from its object name); v2 indexes carry their own.
    pub fn blocks(&self, ledger_id: Option<i64>) -> Vec<BlockRange> {
        let mut out = Vec::new();
        for ledger in &self.ledgers {
            let last = ledger.metadata.last_entry_id();
            for (i, e) in ledger.entries.iter().enumerate() {
                let last_entry_id = match ledger.entries.get(i + 1) {
                    Some(next) => Some(next.first_entry_id - 1),
                    None => last,
                };
                out.push(BlockRange {
                    ledger_id: ledger.ledger_id.or(ledger_id),
                    first_entry_id: e.first_entry_id,
                    last_entry_id,
                    part_id: e.part_id,
                    offset: e.offset as u64,
                    length: 0,
                });
            }
        }
        out.sort_by_key(|b| (b.offset, b.part_id));
        let end = self.data_object_length as u64;
        for i in 0..out.len() {
            let next = out.get(i + 1).map_or(end.max(out[i].offset), |n| n.offset);
            out[i].length = next.saturating_sub(out[i].offset);
        }
        out
    }

    /// The index object's bytes, exactly as Pulsar's `toStream()` writes them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let ledgers: Vec<&IndexedLedger> = match self.version {
            IndexVersion::V1 => self.ledgers.iter().collect(),
            IndexVersion::V2 => java_hash_map_order(&self.ledgers),
        };
        let metas: Vec<Vec<u8>> = ledgers
            .iter()
            .map(|l| match &l.metadata {
                LedgerMeta::BookKeeper(m) => m.encode_to_vec(),
                LedgerMeta::LedgerInfo(i) => i.encode_to_vec(),
            })
            .collect();
        let per_ledger = match self.version {
            IndexVersion::V1 => 8,  // entry count + metadata length
            IndexVersion::V2 => 16, // + ledger id
        };
        let length: usize = 24
            + ledgers
                .iter()
                .zip(&metas)
                .map(|(l, m)| per_ledger + m.len() + l.entries.len() * INDEX_ENTRY_SIZE)
                .sum::<usize>();
        let mut out = Vec::with_capacity(length);
        let magic = match self.version {
            IndexVersion::V1 => INDEX_V1_MAGIC,
            IndexVersion::V2 => INDEX_V2_MAGIC,
        };
        out.extend_from_slice(&magic.to_be_bytes());
        out.extend_from_slice(&(length as i32).to_be_bytes());
        out.extend_from_slice(&self.data_object_length.to_be_bytes());
        out.extend_from_slice(&self.data_header_length.to_be_bytes());
        for (l, meta) in ledgers.iter().zip(&metas) {
            if self.version == IndexVersion::V2 {
                out.extend_from_slice(&l.ledger_id.unwrap_or_default().to_be_bytes());
            }
            out.extend_from_slice(&(l.entries.len() as i32).to_be_bytes());
            out.extend_from_slice(&(meta.len() as i32).to_be_bytes());
            out.extend_from_slice(meta);
            for e in &l.entries {
                out.extend_from_slice(&e.first_entry_id.to_be_bytes());
                out.extend_from_slice(&e.part_id.to_be_bytes());
                out.extend_from_slice(&e.offset.to_be_bytes());
            }
        }
        debug_assert_eq!(out.len(), length);
        out
    }
}

/// The v2 ledgers in the order Java writes them: `OffloadIndexBlockV2Impl`
/// iterates a `HashMap<Long, _>` filled in ascending ledger id order, i.e. by
/// hash bucket of the final table, then ascending id. (Exact unless eight or
/// more ids share a bucket of a 64+ table, where Java turns the bin into a tree.)
fn java_hash_map_order(ledgers: &[IndexedLedger]) -> Vec<&IndexedLedger> {
    let mut capacity = 16usize; // default capacity; doubles past 0.75 load
    while ledgers.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |id: i64| {
        let v = id as u64;
        let h = (v ^ (v >> 32)) as u32; // Long.hashCode
        ((h ^ (h >> 16)) as usize) & (capacity - 1) // HashMap.hash, then the index
    };
    let mut out: Vec<&IndexedLedger> = ledgers.iter().collect();
    out.sort_by_key(|l| {
        let id = l.ledger_id.unwrap_or_default();
        (bucket(id), id)
    });
    out
}

/// Reads `len` metadata bytes after checking the length; returns them with their offset.
fn read_meta<'a>(c: &mut Cursor<'a>, len: i32) -> Result<(usize, &'a [u8])> {
    let at = c.pos;
    let len = usize::try_from(len)
        .map_err(|_| invalid("metadata length", at - 4, format!("{len} is negative")))?;
    Ok((at, c.bytes(len, "index metadata")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::offload::ledger_metadata_format::{Segment, State};

    fn v1(entries: Vec<IndexEntry>) -> OffloadIndex {
        OffloadIndex {
            version: IndexVersion::V1,
            index_block_length: 0,
            data_object_length: 3000,
            data_header_length: 128,
            ledgers: vec![IndexedLedger {
                ledger_id: None,
                metadata: LedgerMeta::BookKeeper(LedgerMetadataFormat {
                    quorum_size: 2,
                    ensemble_size: 2,
                    length: 2000,
                    last_entry_id: Some(9),
                    state: State::Closed as i32,
                    segment: vec![Segment {
                        ensemble_member: vec!["b1:3181".into(), "b2:3181".into()],
                        first_entry_id: 0,
                    }],
                    ..Default::default()
                }),
                entries,
            }],
        }
    }

    fn e(first: i64, part: i32, offset: i64) -> IndexEntry {
        IndexEntry {
            first_entry_id: first,
            part_id: part,
            offset,
        }
    }

    #[test]
    fn v1_round_trips_and_lists_blocks() {
        let idx = v1(vec![e(0, 1, 0), e(4, 2, 1000), e(7, 3, 2000)]);
        let bytes = idx.to_bytes();
        assert_eq!(&bytes[..4], &[0xDE, 0x47, 0xDE, 0x47]);
        assert_eq!(be_i32(&bytes, 4) as usize, bytes.len());
        let back = OffloadIndex::parse(&bytes).unwrap();
        assert_eq!(back.index_block_length as usize, bytes.len());
        assert_eq!(back.ledgers, idx.ledgers);
        let blocks = back.blocks(Some(42));
        let summary: Vec<_> = blocks
            .iter()
            .map(|b| (b.first_entry_id, b.last_entry_id, b.offset, b.length))
            .collect();
        assert_eq!(
            summary,
            [
                (0, Some(3), 0, 1000),
                (4, Some(6), 1000, 1000),
                (7, Some(9), 2000, 1000)
            ]
        );
        assert!(blocks.iter().all(|b| b.ledger_id == Some(42)));
    }

    #[test]
    fn duplicate_first_entry_ids_keep_the_first_like_java() {
        let idx = v1(vec![e(0, 1, 0), e(5, 2, 1000), e(5, 3, 2000)]);
        let back = OffloadIndex::parse(&idx.to_bytes()).unwrap();
        assert_eq!(back.ledgers[0].entries, [e(0, 1, 0), e(5, 2, 1000)]);
    }

    #[test]
    fn v2_carries_ledger_ids_and_ledger_info() {
        let info = |id: i64, n: i64| {
            LedgerMeta::LedgerInfo(LedgerInfo {
                ledger_id: id,
                entries: Some(n),
                size: Some(n * 10),
                timestamp: Some(1),
                offload_context: None,
            })
        };
        let idx = OffloadIndex {
            version: IndexVersion::V2,
            index_block_length: 0,
            data_object_length: 900,
            data_header_length: 128,
            ledgers: vec![
                IndexedLedger {
                    ledger_id: Some(7),
                    metadata: info(7, 5),
                    entries: vec![e(0, 1, 0), e(3, 2, 300)],
                },
                IndexedLedger {
                    ledger_id: Some(8),
                    metadata: info(8, 2),
                    entries: vec![e(0, 3, 600)],
                },
            ],
        };
        let bytes = idx.to_bytes();
        assert_eq!(&bytes[..4], &[0x3D, 0x1F, 0xB0, 0xBC]);
        let back = OffloadIndex::parse(&bytes).unwrap();
        assert_eq!(back.ledgers, idx.ledgers);
        let b: Vec<_> = back
            .blocks(None)
            .iter()
            .map(|b| (b.ledger_id, b.first_entry_id, b.last_entry_id, b.length))
            .collect();
        assert_eq!(
            b,
            [
                (Some(7), 0, Some(2), 300),
                (Some(7), 3, Some(4), 300),
                (Some(8), 0, Some(1), 300)
            ]
        );
    }

    #[test]
    fn v2_ledgers_follow_java_hash_map_order() {
        let ledger = |id: i64| IndexedLedger {
            ledger_id: Some(id),
            metadata: LedgerMeta::LedgerInfo(LedgerInfo {
                ledger_id: id,
                ..Default::default()
            }),
            entries: vec![],
        };
        let order = |ids: &[i64]| -> Vec<i64> {
            let ls: Vec<_> = ids.iter().map(|&i| ledger(i)).collect();
            java_hash_map_order(&ls)
                .iter()
                .map(|l| l.ledger_id.unwrap())
                .collect()
        };
        // Pulsar 4.0.8 wrote [3, 20, 7] for ledgers {3, 7, 20} (20 lands in bucket 4).
        assert_eq!(order(&[3, 7, 20]), [3, 20, 7]);
        // 13 keys resize the table to 32: 20 then keeps bucket 20.
        let ids: Vec<i64> = (0..12).chain([20]).collect();
        assert_eq!(order(&ids), ids);
        // High bits fold in: 1 << 32 hashes like 1.
        assert_eq!(order(&[2, 1 << 32, 1]), [1, 1 << 32, 2]);
    }

    #[test]
    fn corrupt_counts_and_lengths_are_errors_not_allocations() {
        let good = v1(vec![e(0, 1, 0)]).to_bytes();
        // Entry count i32::MAX: would be 40 GiB of entries; must fail on the bound check.
        let mut huge = good.clone();
        huge[24..28].copy_from_slice(&i32::MAX.to_be_bytes());
        let err = OffloadIndex::parse(&huge).unwrap_err().to_string();
        assert!(
            err.starts_with("truncated index entries at index-object offset"),
            "{err}"
        );
        assert!(err.contains("needs 42949672940 bytes"), "{err}");
        let mut neg = good.clone();
        neg[28..32].copy_from_slice(&(-5i32).to_be_bytes());
        let err = OffloadIndex::parse(&neg).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid metadata length at index-object offset 28: -5 is negative"
        );
        let mut meta = good.clone();
        meta[32] = 0xFF; // not a valid protobuf key
        assert!(OffloadIndex::parse(&meta)
            .unwrap_err()
            .to_string()
            .starts_with(
                "invalid ledger metadata (LedgerMetadataFormat) at index-object offset 32"
            ));
        let err = OffloadIndex::parse(&good[..good.len() - 1])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("truncated index entries"), "{err}");
        assert!(OffloadIndex::parse(&[0xDE, 0x47])
            .unwrap_err()
            .to_string()
            .starts_with("truncated index header at index-object offset 0"));
        let err = OffloadIndex::parse(&[1, 2, 3, 4]).unwrap_err().to_string();
        assert!(
            err.starts_with("bad index magic at index-object offset 0: 0x01020304"),
            "{err}"
        );
        for cut in 0..good.len() {
            assert!(OffloadIndex::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
    }
}
