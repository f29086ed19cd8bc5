//! Entries → offload objects, laid out as Pulsar's offloader lays them out.
//!
//! [`write_ledger`] follows `BlobStoreManagedLedgerOffloader.offload`: block
//! sizes from `calculateBlockSize` (the remaining entries' bytes, capped at
//! the maximum block size), entries packed while they fit, padding to the
//! block size, a v1 index with the ledger's BookKeeper metadata. Given the
//! same entries, metadata and maximum block size, the objects are
//! byte-identical to Pulsar's (checked against Pulsar's own offloader by the
//! interop tests).
//!
//! [`write_streaming`] writes the PIP-76 layout (streaming block headers with
//! the ledger id, a v2 index with one `LedgerInfo` per ledger). No Pulsar
//! release drives its streaming offloader, whose block loop also leaves the
//! first entry out of the block size; blocks here hold entries until
//! `min_block_size` bytes of entries are in and are sized to fit them.

use std::fs::File;
use std::io::{BufWriter, Write};

use super::block::{push_padding, BlockHeader, BlockKind, BLOCK_HEADER_SIZE, ENTRY_HEADER_SIZE};
use super::index::{BlockRange, IndexEntry, IndexVersion, IndexedLedger, LedgerMeta, OffloadIndex};
use super::{OffloadError, Result};
use crate::proto::offload::ledger_metadata_format::{
    CMetadataMapEntry, DigestType, Segment, State,
};
use crate::proto::offload::{LedgerInfo, LedgerMetadataFormat};

/// How entries are written as offload objects: the offloader's block size
/// and what a ledger-based object's v1 index says of its ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadOptions {
    /// A ledger-based object's largest block, a streaming object's smallest;
    /// `None`: [`Self::DEFAULT_BLOCK_SIZE`] or [`Self::DEFAULT_STREAMING_BLOCK_SIZE`].
    pub block_size: Option<usize>,
    /// The managed ledger a v1 index's ledger metadata names.
    pub managed_ledger_name: String,
    /// The bookie ids of the ledger's ensemble (`None`: two made-up bookies).
    pub ensemble: Option<Vec<String>>,
    /// Overrides of the quorums (by default 2, or the ensemble's size up to 2).
    pub write_quorum: Option<i32>,
    pub ack_quorum: Option<i32>,
}

impl OffloadOptions {
    /// Pulsar's default `maxBlockSizeInBytes` for ledger offloads.
    pub const DEFAULT_BLOCK_SIZE: usize = 64 * 1024 * 1024;
    /// Pulsar's default `minBlockSizeInBytes` for streaming offloads.
    pub const DEFAULT_STREAMING_BLOCK_SIZE: usize = 5 * 1024 * 1024;
    /// The managed ledger named when none is given.
    pub const DEFAULT_MANAGED_LEDGER: &'static str = "public/default/persistent/pulsar-entries";

    /// Options from their parts, checked ([`Self::validate`]).
    pub fn try_new(
        block_size: Option<usize>,
        managed_ledger_name: Option<String>,
        ensemble: Option<Vec<String>>,
        write_quorum: Option<i32>,
        ack_quorum: Option<i32>,
    ) -> Result<Self> {
        let name = managed_ledger_name.unwrap_or_else(|| Self::DEFAULT_MANAGED_LEDGER.into());
        Self::default()
            .with_block_size(block_size)
            .with_managed_ledger_name(name)
            .with_ensemble(ensemble)
            .with_quorums(write_quorum, ack_quorum)
            .checked()
    }

    /// A block size up to `i32::MAX`, an ensemble of at least one bookie, quorums positive.
    pub fn validate(&self) -> Result<()> {
        let bad = |why: String| Err(OffloadError::Write(why));
        if let Some(n) = self.block_size.filter(|&n| n > i32::MAX as usize) {
            return bad(format!("block size {n} exceeds {}", i32::MAX));
        }
        if self.ensemble.as_ref().is_some_and(Vec::is_empty) {
            return bad("ensemble: expected at least one bookie id".into());
        }
        if [self.write_quorum, self.ack_quorum]
            .iter()
            .flatten()
            .any(|&q| q < 1)
        {
            return bad("write_quorum and ack_quorum must be positive".into());
        }
        Ok(())
    }

    /// `self`, once [`Self::validate`] accepts it.
    pub fn checked(self) -> Result<Self> {
        self.validate().map(|()| self)
    }

    #[must_use]
    pub fn with_block_size(mut self, v: Option<usize>) -> Self {
        self.block_size = v;
        self
    }

    #[must_use]
    pub fn with_managed_ledger_name(mut self, v: String) -> Self {
        self.managed_ledger_name = v;
        self
    }

    #[must_use]
    pub fn with_ensemble(mut self, v: Option<Vec<String>>) -> Self {
        self.ensemble = v;
        self
    }

    #[must_use]
    pub fn with_quorums(mut self, write: Option<i32>, ack: Option<i32>) -> Self {
        (self.write_quorum, self.ack_quorum) = (write, ack);
        self
    }

    /// A ledger-based object's largest block.
    pub fn ledger_block_size(&self) -> usize {
        self.block_size.unwrap_or(Self::DEFAULT_BLOCK_SIZE)
    }

    /// A streaming object's smallest block.
    pub fn streaming_block_size(&self) -> usize {
        self.block_size
            .unwrap_or(Self::DEFAULT_STREAMING_BLOCK_SIZE)
    }

    /// The ledger metadata of a v1 index, for a ledger created at `ctime` (ms).
    pub fn ledger_spec(&self, ctime: i64) -> LedgerMetadataSpec {
        LedgerMetadataSpec::for_managed_ledger(&self.managed_ledger_name, ctime).with_ensemble(
            self.ensemble.clone(),
            self.write_quorum,
            self.ack_quorum,
        )
    }
}

impl Default for OffloadOptions {
    fn default() -> Self {
        Self {
            block_size: None,
            managed_ledger_name: Self::DEFAULT_MANAGED_LEDGER.into(),
            ensemble: None,
            write_quorum: None,
            ack_quorum: None,
        }
    }
}

/// The BookKeeper metadata written into a v1 index. The defaults are what a
/// broker with default settings gives a managed-ledger ledger: two bookies,
/// write and ack quorum 2, CRC32C digests, the managed-ledger custom metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerMetadataSpec {
    /// Bookie ids of the (single) ensemble, e.g. `bookie-1:3181`.
    pub ensemble: Vec<String>,
    pub write_quorum: i32,
    pub ack_quorum: i32,
    /// `DigestType` number: CRC32 1, HMAC 2, CRC32C 3, DUMMY 4.
    pub digest_type: i32,
    /// Creation time, ms since the epoch.
    pub ctime: i64,
    /// In the order to write them (Pulsar writes its map's order).
    pub custom_metadata: Vec<(String, Vec<u8>)>,
}

impl LedgerMetadataSpec {
    /// The metadata a broker creates for a ledger of `managed_ledger` (e.g.
    /// `public/default/persistent/my-topic`).
    pub fn for_managed_ledger(managed_ledger: &str, ctime: i64) -> Self {
        LedgerMetadataSpec {
            ensemble: vec!["bookie-1:3181".into(), "bookie-2:3181".into()],
            write_quorum: 2,
            ack_quorum: 2,
            digest_type: DigestType::Crc32c as i32,
            ctime,
            custom_metadata: vec![
                ("application".into(), b"pulsar".to_vec()),
                ("component".into(), b"managed-ledger".to_vec()),
                (
                    "pulsar/managed-ledger".into(),
                    managed_ledger.as_bytes().to_vec(),
                ),
            ],
        }
    }

    /// On the bookies of `ensemble` when given (both quorums then up to two of
    /// them), with the quorums given overriding either.
    pub fn with_ensemble(
        mut self,
        ensemble: Option<Vec<String>>,
        write_quorum: Option<i32>,
        ack_quorum: Option<i32>,
    ) -> Self {
        if let Some(e) = ensemble {
            let quorum = (e.len() as i32).min(2);
            (self.write_quorum, self.ack_quorum, self.ensemble) = (quorum, quorum, e);
        }
        self.write_quorum = write_quorum.unwrap_or(self.write_quorum);
        self.ack_quorum = ack_quorum.unwrap_or(self.ack_quorum);
        self
    }

    fn to_proto(&self, last_entry_id: i64, length: i64) -> LedgerMetadataFormat {
        LedgerMetadataFormat {
            quorum_size: self.write_quorum,
            ensemble_size: self.ensemble.len() as i32,
            length,
            last_entry_id: Some(last_entry_id),
            state: State::Closed as i32,
            segment: vec![Segment {
                ensemble_member: self.ensemble.clone(),
                first_entry_id: 0,
            }],
            digest_type: Some(self.digest_type),
            password: None,
            ack_quorum_size: Some(self.ack_quorum),
            ctime: Some(self.ctime),
            custom_metadata: self
                .custom_metadata
                .iter()
                .map(|(k, v)| CMetadataMapEntry {
                    key: Some(k.clone()),
                    value: Some(v.clone()),
                })
                .collect(),
            c_token: None,
        }
    }
}

/// What was written: the index object's bytes and the blocks of the data object.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenObject {
    pub index: Vec<u8>,
    pub data_length: u64,
    pub blocks: Vec<BlockRange>,
}

/// One ledger's entries for a streaming object: ids `first_entry_id..`.
#[derive(Debug, Clone)]
pub struct StreamingLedger<'a> {
    pub ledger_id: i64,
    pub first_entry_id: i64,
    pub entries: Vec<&'a [u8]>,
}

fn io(e: std::io::Error) -> OffloadError {
    OffloadError::Io(format!("writing the data object failed: {e}"))
}

fn entry_len(e: &[u8], ledger: i64, id: i64) -> Result<i64> {
    // Java writes the length as an int; blocks are int-sized too.
    if e.len() > i32::MAX as usize - BLOCK_HEADER_SIZE - ENTRY_HEADER_SIZE {
        return Err(OffloadError::Write(format!(
            "entry {id} of ledger {ledger} is {} bytes, more than a block can hold",
            e.len()
        )));
    }
    Ok(e.len() as i64)
}

/// Writes one block: header, `entries` (ids from `first`), padding to `size`.
fn write_block<W: Write>(
    out: &mut W,
    kind: BlockKind,
    ledger: i64,
    first: i64,
    entries: &[&[u8]],
    size: usize,
) -> Result<()> {
    let mut buf = Vec::with_capacity(size);
    buf.extend_from_slice(&BlockHeader::new(kind, size as i64, first, ledger).to_bytes());
    for (i, e) in entries.iter().enumerate() {
        buf.extend_from_slice(&(e.len() as i32).to_be_bytes());
        buf.extend_from_slice(&(first + i as i64).to_be_bytes());
        buf.extend_from_slice(e);
    }
    let used = buf.len();
    debug_assert!(used <= size);
    push_padding(&mut buf, size - used);
    out.write_all(&buf).map_err(io)
}

/// Writes a ledger-based data object (entries `0..n` of `ledger_id`) to
/// `out` and returns its v1 index. `max_block_size` is the offloader's
/// `maxBlockSizeInBytes` (64 MiB by default).
///
/// An entry that cannot fit in a block is an error: Pulsar's offloader would
/// write an empty block there and silently stop, leaving the rest of the
/// ledger out of the object.
pub fn write_ledger<W: Write>(
    out: &mut W,
    ledger_id: i64,
    entries: &[&[u8]],
    max_block_size: usize,
    metadata: &LedgerMetadataSpec,
) -> Result<WrittenObject> {
    let min = BLOCK_HEADER_SIZE + ENTRY_HEADER_SIZE;
    if !(min..=i32::MAX as usize).contains(&max_block_size) {
        return Err(OffloadError::Write(format!(
            "block size {max_block_size} must be between {min} and {}",
            i32::MAX
        )));
    }
    if entries.is_empty() {
        return Err(OffloadError::Write(
            "a ledger needs at least one entry (Pulsar never offloads an empty ledger)".into(),
        ));
    }
    if metadata.ensemble.is_empty() {
        return Err(OffloadError::Write("the ledger ensemble is empty".into()));
    }
    let lens = entries
        .iter()
        .enumerate()
        .map(|(i, e)| entry_len(e, ledger_id, i as i64))
        .collect::<Result<Vec<i64>>>()?;
    let length: i64 = lens.iter().sum();
    let last = entries.len() as i64 - 1;
    let mut index_entries = Vec::new();
    let (mut start, mut part, mut written, mut offset) = (0usize, 1i32, 0i64, 0i64);
    while start < entries.len() {
        // calculateBlockSize: what is left, headers included, capped at the maximum.
        let remaining = (last - start as i64 + 1) * ENTRY_HEADER_SIZE as i64
            + (length - written)
            + BLOCK_HEADER_SIZE as i64;
        let size = remaining.min(max_block_size as i64) as usize;
        let mut used = BLOCK_HEADER_SIZE;
        let mut end = start;
        while end < entries.len() && used + ENTRY_HEADER_SIZE + entries[end].len() <= size {
            used += ENTRY_HEADER_SIZE + entries[end].len();
            end += 1;
        }
        if end == start {
            return Err(OffloadError::Write(format!(
                "entry {start} of ledger {ledger_id} ({} bytes) does not fit in a {max_block_size}-byte block (needs {}); Pulsar's offloader would drop it and every later entry",
                entries[start].len(),
                entries[start].len() + BLOCK_HEADER_SIZE + ENTRY_HEADER_SIZE
            )));
        }
        write_block(
            out,
            BlockKind::Ledger,
            ledger_id,
            start as i64,
            &entries[start..end],
            size,
        )?;
        index_entries.push(IndexEntry {
            first_entry_id: start as i64,
            part_id: part,
            offset,
        });
        written += lens[start..end].iter().sum::<i64>();
        offset += size as i64;
        part += 1;
        start = end;
    }
    let index = OffloadIndex {
        version: IndexVersion::V1,
        index_block_length: 0,
        data_object_length: offset,
        data_header_length: BLOCK_HEADER_SIZE as i64,
        ledgers: vec![IndexedLedger {
            ledger_id: None,
            metadata: LedgerMeta::BookKeeper(metadata.to_proto(last, length)),
            entries: index_entries,
        }],
    };
    Ok(WrittenObject {
        index: index.to_bytes(),
        data_length: offset as u64,
        blocks: index.blocks(Some(ledger_id)),
    })
}

/// Writes a streaming (PIP-76) data object holding `ledgers` in order and
/// returns its v2 index. A block holds one ledger's entries until at least
/// `min_block_size` bytes of entries are in (the offloader's
/// `minBlockSizeInBytes`, 5 MiB by default), and is at least that large.
/// `timestamp` goes into each `LedgerInfo`.
pub fn write_streaming<W: Write>(
    out: &mut W,
    ledgers: &[StreamingLedger<'_>],
    min_block_size: usize,
    timestamp: i64,
) -> Result<WrittenObject> {
    if min_block_size > i32::MAX as usize {
        return Err(OffloadError::Write(format!(
            "block size {min_block_size} exceeds {}",
            i32::MAX
        )));
    }
    if ledgers.is_empty() || ledgers.iter().any(|l| l.entries.is_empty()) {
        return Err(OffloadError::Write(
            "every ledger of a streaming object needs at least one entry".into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let (mut part, mut offset) = (1i32, 0i64);
    let mut indexed = Vec::new();
    for l in ledgers {
        if !seen.insert(l.ledger_id) || l.ledger_id < 0 || l.first_entry_id < 0 {
            return Err(OffloadError::Write(format!(
                "ledger {} appears twice or has a negative ledger or entry id",
                l.ledger_id
            )));
        }
        let mut entries = Vec::new();
        let mut i = 0usize;
        let mut size_sum = 0i64;
        while i < l.entries.len() {
            let begin = i;
            let mut bytes = 0usize;
            loop {
                let id = l.first_entry_id + i as i64;
                bytes += entry_len(l.entries[i], l.ledger_id, id)? as usize;
                i += 1;
                if i == l.entries.len() || bytes >= min_block_size {
                    break;
                }
            }
            let needed = BLOCK_HEADER_SIZE + (i - begin) * ENTRY_HEADER_SIZE + bytes;
            if needed > i32::MAX as usize {
                return Err(OffloadError::Write(format!(
                    "a block of ledger {} would exceed {} bytes",
                    l.ledger_id,
                    i32::MAX
                )));
            }
            let size = needed.max(min_block_size);
            let first = l.first_entry_id + begin as i64;
            write_block(
                out,
                BlockKind::Streaming,
                l.ledger_id,
                first,
                &l.entries[begin..i],
                size,
            )?;
            entries.push(IndexEntry {
                first_entry_id: first,
                part_id: part,
                offset,
            });
            part += 1;
            offset += size as i64;
            size_sum += bytes as i64;
        }
        let last = l.first_entry_id + l.entries.len() as i64 - 1;
        indexed.push(IndexedLedger {
            ledger_id: Some(l.ledger_id),
            metadata: LedgerMeta::LedgerInfo(LedgerInfo {
                ledger_id: l.ledger_id,
                entries: Some(last + 1),
                size: Some(size_sum),
                timestamp: Some(timestamp),
                offload_context: None,
            }),
            entries,
        });
    }
    let index = OffloadIndex {
        version: IndexVersion::V2,
        index_block_length: 0,
        data_object_length: offset,
        data_header_length: BLOCK_HEADER_SIZE as i64,
        ledgers: indexed,
    };
    Ok(WrittenObject {
        index: index.to_bytes(),
        data_length: offset as u64,
        blocks: index.blocks(None),
    })
}

/// Groups `(ledger_id, entry_id, data)` rows (any order) into ledgers with
/// contiguous entry ids, ledgers in ascending id order: the input shape of
/// [`write_ledger`] (one ledger, ids from 0) and [`write_streaming`].
pub fn group_entries<'a>(rows: Vec<(i64, i64, &'a [u8])>) -> Result<Vec<StreamingLedger<'a>>> {
    let mut rows = rows;
    rows.sort_by_key(|&(l, e, _)| (l, e));
    let mut out: Vec<StreamingLedger<'a>> = Vec::new();
    for (ledger, entry, data) in rows {
        if ledger < 0 || entry < 0 {
            return Err(OffloadError::Write(format!(
                "negative ledger or entry id ({ledger}, {entry})"
            )));
        }
        match out.last_mut() {
            Some(l) if l.ledger_id == ledger => {
                let next = l.first_entry_id + l.entries.len() as i64;
                if entry != next {
                    return Err(OffloadError::Write(format!(
                        "ledger {ledger}: entry ids must be contiguous, found {entry} after {} (a duplicate or a gap)",
                        next - 1
                    )));
                }
                l.entries.push(data);
            }
            _ => out.push(StreamingLedger {
                ledger_id: ledger,
                first_entry_id: entry,
                entries: vec![data],
            }),
        }
    }
    Ok(out)
}

/// Writes an object to the local file `data_path` through `write`, then its
/// index (`index` of what `write` returns) to `index_path`. A file that
/// cannot be created or written is [`OffloadError::File`], naming its path.
pub fn write_files<T>(
    data_path: &str,
    index_path: &str,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
    index: impl FnOnce(&T) -> &[u8],
) -> Result<T> {
    let file_error = |path: &str, e: std::io::Error| OffloadError::File(format!("{path}: {e}"));
    let file = File::create(data_path).map_err(|e| file_error(data_path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let written = write(&mut out)?;
    out.flush().map_err(|e| file_error(data_path, e))?;
    std::fs::write(index_path, index(&written)).map_err(|e| file_error(index_path, e))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_options_default_build_and_check() {
        let d = OffloadOptions::default();
        assert_eq!(
            (d.ledger_block_size(), d.streaming_block_size()),
            (64 << 20, 5 << 20)
        );
        assert_eq!(
            OffloadOptions::try_new(None, None, None, None, None).unwrap(),
            d
        );
        let o = OffloadOptions::try_new(
            Some(1 << 20),
            Some("t/n/persistent/x".into()),
            Some(vec!["b:1".into()]),
            None,
            None,
        );
        let o = o.unwrap();
        assert_eq!(
            (o.ledger_block_size(), o.streaming_block_size()),
            (1 << 20, 1 << 20)
        );
        let spec = o.ledger_spec(7);
        assert_eq!(
            (
                spec.ctime,
                spec.ensemble.len(),
                spec.write_quorum,
                spec.ack_quorum
            ),
            (7, 1, 1, 1)
        );
        assert_eq!(spec.custom_metadata[2].1, b"t/n/persistent/x");
        for bad in [
            d.clone().with_block_size(Some(1 << 31)),
            d.clone().with_ensemble(Some(vec![])),
            d.clone().with_quorums(Some(0), None),
        ] {
            assert!(bad.checked().is_err());
        }
    }

    #[test]
    fn an_ensemble_sets_the_quorums_unless_they_are_given() {
        let quorums = |s: LedgerMetadataSpec| (s.ensemble.len(), s.write_quorum, s.ack_quorum);
        assert_eq!(quorums(meta().with_ensemble(None, None, None)), (2, 2, 2));
        assert_eq!(
            quorums(meta().with_ensemble(None, Some(1), None)),
            (2, 1, 2)
        );
        let one = Some(vec!["b:3181".to_string()]);
        assert_eq!(quorums(meta().with_ensemble(one, None, None)), (1, 1, 1));
        let three = Some(["a", "b", "c"].map(|b| format!("{b}:3181")).to_vec());
        assert_eq!(
            quorums(meta().with_ensemble(three.clone(), None, None)),
            (3, 2, 2)
        );
        assert_eq!(
            quorums(meta().with_ensemble(three, Some(3), Some(3))),
            (3, 3, 3)
        );
    }

    fn meta() -> LedgerMetadataSpec {
        LedgerMetadataSpec::for_managed_ledger("public/default/persistent/t", 1_700_000_000_000)
    }

    #[test]
    fn block_sizes_follow_calculate_block_size() {
        // Entries 10, 200, 3000, 50, 0, 1000 bytes; max block 2048: the 3000-byte entry cannot fit.
        let sizes = [10usize, 200, 3000, 50, 0, 1000];
        let data: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![7u8; n]).collect();
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let err = write_ledger(&mut Vec::new(), 42, &refs, 2048, &meta()).unwrap_err();
        assert!(
            err.to_string().contains(
                "entry 2 of ledger 42 (3000 bytes) does not fit in a 2048-byte block (needs 3140)"
            ),
            "{err}"
        );

        // With 8 KiB blocks everything fits in one block sized exactly to the data.
        let mut out = Vec::new();
        let w = write_ledger(&mut out, 42, &refs, 8192, &meta()).unwrap();
        let total: usize = sizes.iter().sum::<usize>() + 6 * 12 + 128;
        assert_eq!(out.len(), total);
        assert_eq!(w.data_length as usize, total);
        assert_eq!(w.blocks.len(), 1);

        // With 1.5 KiB blocks: [10, 200], then 3000 does not fit -> error; use smaller entries.
        let small: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; 100]).collect();
        let refs: Vec<&[u8]> = small.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        let w = write_ledger(&mut out, 1, &refs, 600, &meta()).unwrap();
        // 600-byte blocks hold (600-128)/112 = 4 entries; 20 entries -> 5 blocks; the last is
        // sized to what is left: 4 * 112 + 128 = 576.
        let layout: Vec<_> = w
            .blocks
            .iter()
            .map(|b| (b.first_entry_id, b.offset, b.length))
            .collect();
        assert_eq!(
            layout,
            [
                (0, 0, 600),
                (4, 600, 600),
                (8, 1200, 600),
                (12, 1800, 600),
                (16, 2400, 576)
            ]
        );
        assert_eq!(out.len(), 2976);
    }

    #[test]
    fn groups_entries_by_ledger_and_checks_contiguity() {
        let (a, b, c) = (&b"a"[..], &b"b"[..], &b"c"[..]);
        let g = group_entries(vec![(2, 1, b), (1, 0, a), (2, 0, a), (2, 2, c)]).unwrap();
        let shape: Vec<_> = g
            .iter()
            .map(|l| (l.ledger_id, l.first_entry_id, l.entries.clone()))
            .collect();
        assert_eq!(shape, [(1, 0, vec![a]), (2, 0, vec![a, b, c])]);
        let err = group_entries(vec![(1, 0, a), (1, 2, b)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ledger 1: entry ids must be contiguous, found 2 after 0"),
            "{err}"
        );
        assert!(group_entries(vec![(1, 0, a), (1, 0, b)]).is_err());
    }

    #[test]
    fn streaming_blocks_hold_min_block_size_of_entries() {
        let e: Vec<Vec<u8>> = (0..7).map(|i| vec![i as u8; 300]).collect();
        let refs: Vec<&[u8]> = e.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        let w = write_streaming(
            &mut out,
            &[
                StreamingLedger {
                    ledger_id: 9,
                    first_entry_id: 5,
                    entries: refs[..5].to_vec(),
                },
                StreamingLedger {
                    ledger_id: 10,
                    first_entry_id: 0,
                    entries: refs[5..].to_vec(),
                },
            ],
            1000,
            7,
        )
        .unwrap();
        let layout: Vec<_> = w
            .blocks
            .iter()
            .map(|b| {
                (
                    b.ledger_id.unwrap(),
                    b.first_entry_id,
                    b.last_entry_id.unwrap(),
                    b.length,
                )
            })
            .collect();
        // 4 entries = 1200 bytes >= 1000: block of 128 + 4*312 = 1376; then 1 entry -> 1000 (min).
        assert_eq!(layout, [(9, 5, 8, 1376), (9, 9, 9, 1000), (10, 0, 1, 1000)]);
        assert_eq!(out.len() as u64, w.data_length);
    }

    #[test]
    fn write_files_names_the_file_it_cannot_write() {
        let dir = std::env::temp_dir().join(format!("pe-write-files-{}", std::process::id()));
        let (data, index) = (dir.join("data"), dir.join("index"));
        let (data, index) = (data.to_str().unwrap(), index.to_str().unwrap());
        let write = |out: &mut BufWriter<File>| out.write_all(b"abc").map(|_| b"ix".to_vec());
        let io = |r: std::io::Result<Vec<u8>>| r.map_err(|e| OffloadError::Io(e.to_string()));
        let err = write_files(data, index, |o| io(write(o)), Vec::as_slice).unwrap_err();
        assert!(
            matches!(&err, OffloadError::File(t) if t.starts_with(data)),
            "{err}"
        );
        assert_eq!(err.kind(), crate::error::ErrorKind::Io);
        std::fs::create_dir_all(&dir).unwrap();
        let written = write_files(data, index, |o| io(write(o)), Vec::as_slice).unwrap();
        assert_eq!(written, b"ix");
        assert_eq!(std::fs::read(data).unwrap(), b"abc");
        assert_eq!(std::fs::read(index).unwrap(), b"ix");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
