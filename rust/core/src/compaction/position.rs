//! Positions that depend on compaction (spec compaction.md §11–12): the last
//! message of a compacted ledger (PIP-429), the managed-ledger answer of
//! GetLastMessageId, and the publish-time predicate of the binary search.

use crate::error::{EntryError, Result};
use crate::format::compression::Decompressor;
use crate::format::frame::EntryView;

use super::scan::batch_records;

/// `MessagePosition(ledgerId, entryId, batchIndex, publishTime)` (PIP-429).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessagePosition {
    pub ledger_id: i64,
    pub entry_id: i64,
    /// −1 for a non-batched entry.
    pub batch_index: i32,
    /// The entry's batch-level `publish_time`.
    pub publish_time: u64,
}

impl MessagePosition {
    /// No message at all (final PIP-429 text).
    pub const EARLIEST: MessagePosition = MessagePosition {
        ledger_id: -1,
        entry_id: -1,
        batch_index: 0,
        publish_time: 0,
    };
}

/// How the batch index of a compacted entry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `num_messages_in_batch` ≤ 1 or absent: −1.
    NotBatched,
    /// The last element of `compacted_batch_indexes`; the payload is not read.
    CompactedBatchIndexes,
    /// Encrypted: never compacted, so n − 1; the payload is not read.
    Encrypted,
    /// Scan of the decompressed records for the last one not `compacted_out`.
    Scan,
}

/// The position of the last message in the last entry of a compacted ledger,
/// as PIP-429's `getLastMessagePosition` defines it.
///
/// Only the metadata is read when field 31 is present or the entry is
/// encrypted; the checksum is not verified (that would read the payload).
/// The scan reads the **decompressed** records (Pulsar #20087; the PIP-429
/// broker code scans the compressed buffer). An entry whose every slot is
/// compacted out is an error, as in PIP-429.
pub fn last_in_compacted_entry(
    ledger_id: i64,
    entry_id: i64,
    data: &[u8],
    max_uncompressed_size: usize,
) -> Result<(MessagePosition, Source)> {
    let entry = EntryView::parse(data, false)?;
    let md = &entry.metadata;
    let at = |batch_index| MessagePosition {
        ledger_id,
        entry_id,
        batch_index,
        publish_time: md.publish_time,
    };
    let n = md.num_messages_in_batch.unwrap_or(0);
    if n <= 1 {
        return Ok((at(-1), Source::NotBatched));
    }
    if let Some(last) = md.last_compacted_batch_index {
        return Ok((at(last), Source::CompactedBatchIndexes));
    }
    if md.is_encrypted() {
        return Ok((at(n - 1), Source::Encrypted));
    }
    let mut decompressor = Decompressor::default();
    let (_, records) = batch_records(&mut decompressor, &entry, max_uncompressed_size)?;
    match records
        .iter()
        .filter(|r| !r.metadata.is_compacted_out())
        .map(|r| r.index)
        .max()
    {
        Some(last) => Ok((at(last), Source::Scan)),
        None => Err(EntryError::Data(format!(
            "no valid message in compacted entry {ledger_id}:{entry_id}: all {n} slots are compacted out"
        ))),
    }
}

/// The managed-ledger answer of GetLastMessageId for the topic's last
/// dispatchable entry: batch index `n − 1` (`−1` when `num_messages_in_batch`
/// is absent), so a batch of one gives 0 here and −1 on the compacted path.
pub fn last_in_topic_entry(ledger_id: i64, entry_id: i64, data: &[u8]) -> Result<MessagePosition> {
    let entry = EntryView::parse(data, false)?;
    let md = &entry.metadata;
    Ok(MessagePosition {
        ledger_id,
        entry_id,
        batch_index: md.num_messages_in_batch.unwrap_or(0) - 1,
        publish_time: md.publish_time,
    })
}

/// What GetLastMessageId's reverse scan needs from an entry, metadata only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntrySummary {
    pub publish_time: u64,
    pub marker_type: Option<i32>,
    /// `(most, least)` transaction id bits.
    pub txn: Option<(u64, u64)>,
}

pub fn entry_summary(data: &[u8]) -> Result<EntrySummary> {
    let md = EntryView::parse(data, false)?.metadata;
    Ok(EntrySummary {
        publish_time: md.publish_time,
        marker_type: md.marker_type,
        txn: md.txn(),
    })
}

pub use crate::format::metadata::MARKER_TXN_ABORT;
