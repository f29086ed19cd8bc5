//! Phase two for a batch entry: the broker's `RawBatchConverter.rebatchMessage`
//! (spec compaction.md §6; behaviour checked against pulsar-broker 4.2.4).
//!
//! The output keeps one slot per original batch index. A retained message is
//! copied record for record (SingleMessageMetadata and payload unchanged); any
//! other slot becomes the placeholder `{payload_size: 0, compacted_out: true}`.
//! The payload is compressed again with the entry's own codec; in the metadata
//! only `uncompressed_size` (set even without compression, as 4.2.4 does) and
//! `compacted_batch_indexes` (field 31, the retained indexes) change. The
//! entry is framed with a fresh CRC32C and keeps its `0e 02` prefix. An entry
//! with nothing retained is not written.
//!
//! Unlike 4.2.4, an input in the PIP-429 retained-only shape (fewer records
//! than `num_messages_in_batch`) is read by its mapped indexes instead of
//! being misread as positions.

use prost::Message as _;

use crate::error::{EntryError, FormatError, Result};
use crate::format::batch::BatchRecord;
use crate::format::compression::{compress, Codec};
use crate::format::encode::frame_entry;
use crate::format::frame::EntryView;
use crate::proto;

/// The placeholder record: size 4, SingleMessageMetadata {payload_size 0, compacted_out true}.
pub const PLACEHOLDER: [u8; 8] = [0, 0, 0, 4, 0x18, 0x00, 0x20, 0x01];

/// Rewrites one readable batch. `retained` lists the keyed batch indexes
/// chosen by phase one (any order); key-less messages follow `retain_null_key`.
/// Returns the new entry and how many messages it keeps, or `None` when no
/// message is kept.
pub fn rebatch(
    entry: &EntryView<'_>,
    codec: Codec,
    records: &[BatchRecord<'_>],
    retained: &[i32],
    retain_null_key: bool,
    max_uncompressed_size: usize,
) -> Result<Option<(Vec<u8>, usize)>> {
    let md = &entry.metadata;
    let n = usize::try_from(md.num_messages()).unwrap_or(0);
    // Every slot is written, at least as an 8-byte placeholder: a count the
    // records do not back (retained-only shape) must not size the output.
    if n.saturating_mul(PLACEHOLDER.len()) > max_uncompressed_size {
        return Err(EntryError::from(FormatError::TooLarge {
            what: "rebatched payload of num_messages_in_batch placeholders",
            size: n as u64 * PLACEHOLDER.len() as u64,
            limit: max_uncompressed_size as u64,
            offset: entry.metadata_offset,
        }));
    }
    let mut slots: Vec<Option<&BatchRecord<'_>>> = vec![None; n];
    for r in records {
        if let Some(slot) = usize::try_from(r.index).ok().and_then(|i| slots.get_mut(i)) {
            *slot = Some(r);
        }
    }
    let mut wanted = vec![false; n];
    for &i in retained {
        if let Some(w) = usize::try_from(i).ok().and_then(|i| wanted.get_mut(i)) {
            *w = true;
        }
    }
    let mut kept = Vec::new();
    let mut buf = Vec::with_capacity(records.iter().map(|r| r.record.len()).sum());
    for (i, slot) in slots.iter().enumerate() {
        let keep = match slot {
            None => false,
            Some(r) if r.metadata.is_compacted_out() => false,
            Some(r) if r.metadata.partition_key.is_none() => retain_null_key,
            // The broker also requires a non-empty payload of a keyed message.
            Some(r) => !r.payload.is_empty() && wanted[i],
        };
        match slot {
            Some(r) if keep => {
                kept.push(i as i32);
                buf.extend_from_slice(r.record);
            }
            _ => buf.extend_from_slice(&PLACEHOLDER),
        }
    }
    if kept.is_empty() {
        return Ok(None);
    }
    let mut header = proto::MessageMetadata::decode(md.raw).map_err(|e| {
        EntryError::from(FormatError::Protobuf {
            message: "MessageMetadata",
            space: crate::error::Space::Entry,
            offset: entry.metadata_offset,
            reason: e.to_string(),
        })
    })?;
    let count = kept.len();
    header.compacted_batch_indexes = kept;
    header.uncompressed_size = Some(
        u32::try_from(buf.len())
            .map_err(|_| EntryError::Encode("rebatched payload is larger than 4 GiB".into()))?,
    );
    let payload = compress(codec, &buf)?;
    // The broker-entry-metadata prefix is carried over byte for byte.
    let prefix_end = entry.data.len() - entry.without_broker_entry_metadata().len();
    let framed = frame_entry(&header, &payload, true, None);
    let mut out = Vec::with_capacity(prefix_end + framed.len());
    out.extend_from_slice(&entry.data[..prefix_end]);
    out.extend_from_slice(&framed);
    Ok(Some((out, count)))
}
