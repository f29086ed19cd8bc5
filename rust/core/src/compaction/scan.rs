//! Phase one's view of one entry (spec compaction.md §4.2–4.5): a candidate
//! per message with what the survivor choice needs, nothing else.
//!
//! Classification follows the broker: markers are skipped; a "readable batch"
//! (`num_messages_in_batch` present and no encryption keys) is opened and each
//! record that is not `compacted_out` is a candidate keyed by its
//! SingleMessageMetadata; everything else — single messages, chunks and
//! encrypted batches — is one candidate keyed by the entry's `partition_key`.

use std::collections::HashSet;

use crate::error::Result;
use crate::format::batch::{split_batch, BatchRecord};
use crate::format::compression::{Codec, Decompressor};
use crate::format::frame::EntryView;
use crate::format::metadata::{MessageMetadataView, MARKER_TXN_ABORT};
use crate::processor::kafka::{ENTRY_FORMAT_KAFKA, ENTRY_FORMAT_KEY};

use super::CompactOptions;

/// The chunk fields of a chunked message's entry (PIP-37).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo<'a> {
    pub uuid: &'a str,
    pub chunk_id: i32,
    pub num_chunks: i32,
}

/// One message as phase one sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Batch index; −1 for a non-batched entry.
    pub batch_index: i32,
    /// `partition_key` as written (base64 text stays text; `ordering_key` is
    /// never used). `None` when the field is absent.
    pub key: Option<&'a str>,
    /// Size 0: `uncompressed_size` / `payload_size` (or `null_value` on a
    /// single message, as the 4.2 broker does), never the batch's null flags.
    pub tombstone: bool,
    /// 0 when absent, as the broker reads it.
    pub event_time: u64,
    /// A member of a readable batch (the event-time tie rule differs).
    pub batched: bool,
    pub chunk: Option<ChunkInfo<'a>>,
    /// The transaction the entry was written in, `(most, least)` bits.
    pub txn: Option<(u64, u64)>,
}

/// What kind of entry was scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A server-only marker: no candidates, never written.
    Marker,
    /// One candidate keyed by the entry metadata (single message, chunk or
    /// encrypted batch), written byte for byte when retained.
    Single,
    /// A readable batch, rebuilt by phase two.
    Batch,
    /// A Kafka-on-Pulsar entry (`entry.format=kafka`): its payload is Kafka
    /// record batches, which Pulsar's compactor does not read. No
    /// candidates; kept unchanged.
    Kafka,
}

/// Why a Kafka-on-Pulsar entry is kept whole (its `error` text in the output).
pub const KAFKA_KEPT: &str = "Kafka-on-Pulsar entry (entry.format=kafka): its Kafka record batches are not compacted by Pulsar's compactor; kept unchanged";

/// A KoP entry: `entry.format=kafka`, not a marker, chunk or encrypted entry.
pub fn is_kafka_entry(md: &MessageMetadataView<'_>) -> bool {
    md.marker_type.is_none()
        && !md.is_encrypted()
        && !md.is_chunk()
        && md
            .properties
            .iter()
            .any(|(k, v)| k == ENTRY_FORMAT_KEY && v.eq_ignore_ascii_case(ENTRY_FORMAT_KAFKA))
}

/// Whether phase two rewrites this entry as a batch (`RawBatchConverter.isReadableBatch`).
pub fn is_readable_batch(md: &MessageMetadataView<'_>) -> bool {
    md.is_batch() && !md.is_encrypted()
}

/// The codec and decompressed payload of an entry that is not encrypted.
pub(crate) fn decompressed_payload<'a>(
    decompressor: &'a mut Decompressor,
    entry: &EntryView<'a>,
    limit: usize,
) -> Result<(Codec, &'a [u8])> {
    let (codec, size) = crate::decode::payload_codec(entry)?;
    let payload =
        decompressor.decompress(codec, entry.payload, size, limit, entry.payload_offset)?;
    Ok((codec, payload))
}

/// The records of a readable batch entry, validated as a whole.
pub(crate) fn batch_records<'a>(
    decompressor: &'a mut Decompressor,
    entry: &EntryView<'a>,
    limit: usize,
) -> Result<(Codec, Vec<BatchRecord<'a>>)> {
    let (codec, payload) = decompressed_payload(decompressor, entry, limit)?;
    let mut records = Vec::new();
    split_batch(payload, &entry.metadata, &mut records)?;
    Ok((codec, records))
}

/// The single-message candidate of a non-readable entry.
pub fn single_candidate<'a>(entry: &EntryView<'a>) -> Candidate<'a> {
    let md = &entry.metadata;
    let size = if md.null_value == Some(true) {
        0
    } else {
        md.uncompressed_size
            .map_or(entry.payload.len(), |s| s as usize)
    };
    let chunk = match (md.is_chunk(), md.uuid, md.chunk_id) {
        (true, Some(uuid), Some(chunk_id)) => Some(ChunkInfo {
            uuid,
            chunk_id,
            num_chunks: md.num_chunks_from_msg.unwrap_or(0),
        }),
        _ => None,
    };
    Candidate {
        batch_index: -1,
        key: md.partition_key,
        tombstone: size == 0,
        event_time: md.event_time.unwrap_or(0),
        batched: false,
        chunk,
        txn: md.txn(),
    }
}

/// The transactions that `TXN_ABORT` markers among `entries` abort. A reader
/// is never delivered their messages, and the broker's compactor skips them;
/// entries that cannot be read are passed over.
pub fn aborted_transactions<'a>(
    entries: impl IntoIterator<Item = &'a [u8]>,
) -> HashSet<(u64, u64)> {
    entries
        .into_iter()
        .filter_map(|data| EntryView::parse(data, false).ok())
        .filter(|e| e.metadata.marker_type == Some(MARKER_TXN_ABORT))
        .filter_map(|e| e.metadata.txn())
        .collect()
}

/// Scans one entry and calls `f` once per candidate, only after the whole
/// entry validated: a bad record anywhere yields an error and no candidate.
pub fn scan_entry(
    decompressor: &mut Decompressor,
    data: &[u8],
    opts: &CompactOptions,
    f: &mut dyn FnMut(Candidate<'_>),
) -> Result<EntryKind> {
    let entry = EntryView::parse(data, opts.verify_checksum)?;
    let md = &entry.metadata;
    if md.marker_type.is_some() {
        return Ok(EntryKind::Marker);
    }
    if is_kafka_entry(md) {
        return Ok(EntryKind::Kafka);
    }
    if !is_readable_batch(md) {
        f(single_candidate(&entry));
        return Ok(EntryKind::Single);
    }
    let (_, records) = batch_records(decompressor, &entry, opts.max_uncompressed_size)?;
    let txn = md.txn();
    for r in records.iter().filter(|r| !r.metadata.is_compacted_out()) {
        f(Candidate {
            batch_index: r.index,
            key: r.metadata.partition_key,
            tombstone: r.metadata.payload_size == 0,
            event_time: r.metadata.event_time.unwrap_or(0),
            batched: true,
            chunk: None,
            txn,
        });
    }
    Ok(EntryKind::Batch)
}
