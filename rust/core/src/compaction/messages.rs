//! Complete messages with their values, in topic order: what a strategy and a
//! TableView see. Batches are split, payloads decompressed, markers and
//! compaction placeholders skipped, and chunked messages reassembled (chunk 0
//! restarts a message, a repeated chunk id is a duplicate, a gap abandons
//! the message, as the Java consumer does).

use std::collections::{HashMap, HashSet};

use foldhash::fast::RandomState;

use crate::error::{EntryError, FormatError, Result};
use crate::format::compression::{Codec, Decompressor};
use crate::format::frame::EntryView;

use super::compactor::EntryKey;
use super::scan::{batch_records, decompressed_payload, is_readable_batch, single_candidate};
use super::{CompactOptions, Position};

/// One complete message.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub key: Option<&'a str>,
    /// The last chunk's position for a chunked message.
    pub position: Position,
    /// `None` for a tombstone (an empty payload).
    pub value: Option<&'a [u8]>,
    pub publish_time: u64,
    pub event_time: Option<u64>,
    /// Every chunk of a chunked message, in order.
    pub chunks: Option<&'a [Position]>,
    /// Set when a chunked message was complete but its payload could not be
    /// decompressed (`value` is then `None`).
    pub error: Option<&'a str>,
}

/// What became of one entry.
#[derive(Debug)]
pub enum Outcome {
    Marker,
    Read,
    /// A message of a transaction the reader was told is aborted: skipped,
    /// as the broker's dispatcher skips it.
    Aborted,
    /// Encrypted: no value can be read without the key.
    Encrypted,
    Unreadable(EntryError),
}

#[derive(Debug)]
struct Assembly {
    num_chunks: i32,
    last_chunk_id: i32,
    positions: Vec<Position>,
    data: Vec<u8>,
    publish_time: u64,
    event_time: Option<u64>,
}

/// Reads messages entry by entry, keeping chunked messages under assembly.
pub struct MessageReader {
    opts: CompactOptions,
    decompressor: Decompressor,
    assemblies: HashMap<(i32, Box<str>, Box<str>), Assembly, RandomState>,
    aborted: HashSet<(u64, u64)>,
}

impl MessageReader {
    pub fn new(opts: CompactOptions) -> Self {
        MessageReader {
            opts,
            decompressor: Decompressor::default(),
            assemblies: HashMap::default(),
            aborted: HashSet::new(),
        }
    }

    /// Skips the messages of these transactions (`(most, least)` id bits),
    /// as the broker's compactor never receives aborted messages.
    pub fn with_aborted_transactions(mut self, aborted: HashSet<(u64, u64)>) -> Self {
        self.aborted = aborted;
        self
    }

    /// Whether the entry belongs to a transaction this reader skips.
    pub fn is_aborted(&self, data: &[u8]) -> bool {
        !self.aborted.is_empty()
            && EntryView::parse(data, false)
                .is_ok_and(|e| e.metadata.txn().is_some_and(|t| self.aborted.contains(&t)))
    }

    /// Reads one entry and calls `f` for each message it completes. An error
    /// returned by `f` stops the read and is returned.
    pub fn read_entry(
        &mut self,
        key: EntryKey,
        data: &[u8],
        f: &mut dyn FnMut(Message<'_>) -> Result<()>,
    ) -> Result<Outcome> {
        let (partition, ledger_id, entry_id) = key;
        let entry = match EntryView::parse(data, self.opts.verify_checksum) {
            Ok(e) => e,
            Err(e) => return Ok(Outcome::Unreadable(e)),
        };
        let md = &entry.metadata;
        if md.marker_type.is_some() {
            return Ok(Outcome::Marker);
        }
        if md.txn().is_some_and(|t| self.aborted.contains(&t)) {
            return Ok(Outcome::Aborted);
        }
        if md.is_encrypted() {
            return Ok(Outcome::Encrypted);
        }
        let limit = self.opts.max_uncompressed_size;
        let position = Position::new(ledger_id, entry_id, -1);
        if is_readable_batch(md) {
            let records = match batch_records(&mut self.decompressor, &entry, limit) {
                Ok((_, r)) => r,
                Err(e) => return Ok(Outcome::Unreadable(e)),
            };
            for r in records.iter().filter(|r| !r.metadata.is_compacted_out()) {
                f(Message {
                    key: r.metadata.partition_key,
                    position: Position::new(ledger_id, entry_id, r.index),
                    value: (!r.payload.is_empty()).then_some(r.payload),
                    publish_time: md.publish_time,
                    event_time: r.metadata.event_time.or(md.event_time),
                    chunks: None,
                    error: None,
                })?;
            }
            return Ok(Outcome::Read);
        }
        let candidate = single_candidate(&entry);
        let message = |value| Message {
            key: md.partition_key,
            position,
            value,
            publish_time: md.publish_time,
            event_time: md.event_time,
            chunks: None,
            error: None,
        };
        let Some(chunk) = candidate.chunk else {
            let value = if candidate.tombstone {
                None
            } else {
                match decompressed_payload(&mut self.decompressor, &entry, limit) {
                    Ok((_, v)) => Some(v),
                    Err(e) => return Ok(Outcome::Unreadable(e)),
                }
            };
            f(message(value))?;
            return Ok(Outcome::Read);
        };
        let Some(k) = md.partition_key else {
            // A key-less chunk is never assembled: callers only keep or drop it.
            f(message(Some(entry.payload)))?;
            return Ok(Outcome::Read);
        };
        let id = (partition, Box::<str>::from(k), Box::<str>::from(chunk.uuid));
        if chunk.chunk_id == 0 {
            self.assemblies.insert(
                id.clone(),
                Assembly {
                    num_chunks: chunk.num_chunks,
                    last_chunk_id: 0,
                    positions: vec![position],
                    data: entry.payload.to_vec(),
                    publish_time: md.publish_time,
                    event_time: md.event_time,
                },
            );
        } else {
            let Some(a) = self.assemblies.get_mut(&id) else {
                return Ok(Outcome::Read); // orphan chunk: dropped
            };
            if chunk.chunk_id <= a.last_chunk_id {
                return Ok(Outcome::Read); // duplicate
            }
            if chunk.chunk_id != a.last_chunk_id + 1 || chunk.num_chunks != a.num_chunks {
                self.assemblies.remove(&id); // gap: abandoned
                return Ok(Outcome::Read);
            }
            a.last_chunk_id = chunk.chunk_id;
            a.positions.push(position);
            a.data.extend_from_slice(entry.payload);
        }
        let complete = self
            .assemblies
            .get(&id)
            .is_some_and(|a| a.last_chunk_id + 1 >= a.num_chunks);
        if !complete {
            return Ok(Outcome::Read);
        }
        let a = self.assemblies.remove(&id).expect("present");
        // Chunks are slices of the compressed stream: decompress the whole once.
        let raw = md.compression.unwrap_or(0);
        let value = Codec::from_proto(raw)
            .ok_or(EntryError::from(FormatError::UnknownCompression {
                value: raw,
                offset: entry.metadata_offset,
            }))
            .and_then(|codec| {
                let size = match codec {
                    Codec::None => a.data.len() as u32,
                    _ => md.uncompressed_size.unwrap_or(0),
                };
                self.decompressor.decompress(codec, &a.data, size, limit, 0)
            });
        let error = value
            .as_ref()
            .err()
            .map(|e| format!("chunked message {}: {e}", chunk.uuid));
        let value = value.ok().filter(|v| !v.is_empty());
        f(Message {
            key: Some(k),
            position,
            value,
            publish_time: a.publish_time,
            event_time: a.event_time,
            chunks: Some(&a.positions),
            error: error.as_deref(),
        })?;
        Ok(Outcome::Read)
    }

    /// Chunks of messages still incomplete, per partition, to be kept for a
    /// later run. Empties the reader's assemblies.
    pub fn take_pending(&mut self) -> Vec<(i32, Vec<Position>)> {
        std::mem::take(&mut self.assemblies)
            .into_iter()
            .map(|((p, _, _), a)| (p, a.positions))
            .collect()
    }
}
