//! The strategic compactor (PIP-215, `StrategicTwoPhaseCompactor`; spec
//! compaction.md §9.3), with the project's merge extension.
//!
//! Phase one folds every keyed message through a [`Strategy`] and keeps, per
//! key, the accepted value (merged when the strategy merges). Phase two
//! writes, for each original entry holding survivors, one new entry:
//! - an unmerged survivor of a non-batched entry (or every chunk of an
//!   unmerged chunked message) is copied byte for byte;
//! - survivors of a batch are packed into a **new** batch with fresh indexes
//!   0..n−1, its header initialised from the first message as Pulsar's batch
//!   container does; a lone survivor becomes a non-batched message;
//! - a merged value is written as a new message at the position of the
//!   latest contributing message, with that message's metadata.
//!
//! One original entry is never split across two compacted entries (Pulsar
//! #21091); retained messages are emitted in topic order, which is the order
//! of each key's last accepted update.
//!
//! Differences from Pulsar, on purpose: a lone survivor keeps its properties
//! and event time (Pulsar's container copies only the batch-header fields);
//! unmerged single messages keep their bytes, broker prefix included;
//! encrypted entries, whose values no strategy can read without a key, are
//! kept unchanged instead of failing the run; key-less messages follow
//! `retain_null_key` (Pulsar's strategic compactor always drops them).
//!
//! Memory: phase one holds each key's current value (as Pulsar's cache of
//! whole messages does) plus chunked messages still being assembled.

use std::collections::{HashMap, HashSet};

use arrow_array::RecordBatch;
use foldhash::fast::RandomState;
use prost::Message as _;

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, FormatError, Result, Space};
use crate::format::compression::{compress, Codec, Decompressor};
use crate::format::encode::frame_entry;
use crate::format::frame::EntryView;
use crate::format::metadata::MessageMetadataView;
use crate::proto;

use super::compactor::{EntryKey, OrderCheck, Output};
use super::messages::{MessageReader, Outcome};
use super::scan::{batch_records, is_readable_batch};
use super::strategy::Strategy;
use super::{CompactOptions, Order, Position};

/// A key's kept value (shared with the distributed fold).
#[derive(Debug)]
pub(crate) struct Kept {
    pub(crate) position: Position,
    pub(crate) value: Vec<u8>,
    pub(crate) merged: bool,
    /// Every chunk of an unmerged chunked survivor.
    pub(crate) chunks: Option<Vec<Position>>,
}

pub(crate) type Keys = HashMap<(i32, Box<str>), Kept, RandomState>;

/// Survivor of one slot: the original value, or a merged one.
pub(crate) type Slot = (i32, Option<Vec<u8>>);

#[derive(Debug)]
enum Plan {
    Whole(String),
    Slots(Vec<Slot>),
}

/// Counts of a strategic run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StrategicStats {
    pub entries_read: u64,
    pub messages_read: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub merged: u64,
    pub kept_unchanged: u64,
    pub entries_written: u64,
}

/// Two-pass strategic compactor: `observe` every batch, then `write` them.
pub struct StrategicCompactor<S: Strategy> {
    opts: CompactOptions,
    strategy: S,
    decompressor: Decompressor,
    reader: MessageReader,
    keys: Keys,
    special: HashMap<EntryKey, Plan>,
    plans: Option<HashMap<EntryKey, Plan>>,
    order: OrderCheck,
    with_partition: Option<bool>,
    stats: StrategicStats,
}

impl<S: Strategy> StrategicCompactor<S> {
    pub fn new(opts: CompactOptions, strategy: S) -> Result<Self> {
        if opts.order != Order::Publish {
            return Err(EntryError::Options(
                "a compaction strategy works in publishing order; order=\"event_time\" cannot be combined with it".into(),
            ));
        }
        Ok(StrategicCompactor {
            opts,
            strategy,
            decompressor: Decompressor::default(),
            reader: MessageReader::new(opts),
            keys: HashMap::default(),
            special: HashMap::new(),
            plans: None,
            order: OrderCheck::default(),
            with_partition: None,
            stats: StrategicStats::default(),
        })
    }

    /// Skips the messages of these transactions (`(most, least)` id bits):
    /// the broker's compactors never receive aborted messages, so a key keeps
    /// its last committed value. [`super::compactor::aborted_in`] finds them.
    pub fn with_aborted_transactions(mut self, aborted: HashSet<(u64, u64)>) -> Self {
        self.reader = MessageReader::new(self.opts).with_aborted_transactions(aborted);
        self
    }

    pub fn stats(&self) -> StrategicStats {
        self.stats
    }

    pub fn strategy_mut(&mut self) -> &mut S {
        &mut self.strategy
    }

    /// Phase one over one batch. A strategy error stops the run.
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.plans.is_some() {
            return Err(EntryError::Order(
                "observe() after write(): phase one is over".into(),
            ));
        }
        let rows = EntryRows::new(batch)?;
        match self.with_partition {
            None => self.with_partition = Some(rows.has_partition()),
            Some(p) if p != rows.has_partition() => {
                return Err(EntryError::Schema(
                    "every input batch must have the same columns (partition or not)".into(),
                ))
            }
            _ => {}
        }
        for i in 0..rows.len() {
            let key = self.order.check(&rows, i)?;
            self.stats.entries_read += 1;
            match rows.data(i) {
                None => {
                    self.special
                        .insert(key, Plan::Whole("entry data is null".into()));
                }
                Some(data) => self.observe_entry(key, data)?,
            }
        }
        Ok(())
    }

    fn observe_entry(&mut self, key: EntryKey, data: &[u8]) -> Result<()> {
        let partition = key.0;
        let retain_null_key = self.opts.retain_null_key;
        let (keys, strategy, stats) = (&mut self.keys, &mut self.strategy, &mut self.stats);
        let mut null_kept = Vec::new();
        let mut failed_chunks = Vec::new();
        let outcome = self.reader.read_entry(key, data, &mut |m| {
            stats.messages_read += 1;
            let Some(k) = m.key else {
                if retain_null_key {
                    null_kept.push(m.position.batch_index);
                }
                return Ok(());
            };
            if let Some(error) = m.error {
                failed_chunks.push((m.chunks.unwrap_or_default().to_vec(), error.to_owned()));
                return Ok(());
            }
            let chunks = m.chunks.map(<[Position]>::to_vec);
            process(
                keys, strategy, stats, partition, k, m.position, m.value, chunks,
            )
        })?;
        match outcome {
            Outcome::Marker | Outcome::Read | Outcome::Aborted => {}
            Outcome::Encrypted => {
                self.stats.kept_unchanged += 1;
                self.special.insert(
                    key,
                    Plan::Whole(
                        "encrypted entry kept unchanged: a strategy cannot read its values".into(),
                    ),
                );
            }
            Outcome::Unreadable(e) => {
                self.special.insert(key, Plan::Whole(e.to_string()));
            }
        }
        if !null_kept.is_empty() {
            let slots = null_kept.into_iter().map(|i| (i, None)).collect();
            self.special.insert(key, Plan::Slots(slots));
        }
        for (positions, error) in failed_chunks {
            for p in positions {
                self.special.insert(
                    (partition, p.ledger_id, p.entry_id),
                    Plan::Whole(error.clone()),
                );
            }
        }
        Ok(())
    }

    fn plans(&mut self) {
        if self.plans.is_some() {
            return;
        }
        let mut plans = std::mem::take(&mut self.special);
        let mut add = |key: EntryKey, slot: Slot| {
            if let Plan::Slots(s) = plans.entry(key).or_insert_with(|| Plan::Slots(Vec::new())) {
                s.push(slot);
            }
        };
        for ((partition, _), kept) in std::mem::take(&mut self.keys) {
            let p = kept.position;
            match (kept.merged, kept.chunks) {
                (false, Some(chunks)) => {
                    for c in chunks {
                        add((partition, c.ledger_id, c.entry_id), (-1, None));
                    }
                }
                (false, None) => add((partition, p.ledger_id, p.entry_id), (p.batch_index, None)),
                (true, _) => add(
                    (partition, p.ledger_id, p.entry_id),
                    (p.batch_index, Some(kept.value)),
                ),
            }
        }
        // Chunks of messages still incomplete stay for a later run.
        for (partition, positions) in self.reader.take_pending() {
            for c in positions {
                add((partition, c.ledger_id, c.entry_id), (-1, None));
            }
        }
        for plan in plans.values_mut() {
            if let Plan::Slots(s) = plan {
                s.sort_by_key(|slot| slot.0);
                s.dedup_by_key(|slot| slot.0);
            }
        }
        self.plans = Some(plans);
    }

    /// Phase two over one batch (the batches given to `observe`, in order).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let rows = EntryRows::new(batch)?;
        self.plans();
        let plans = self.plans.as_ref().unwrap();
        let mut out = Output::new(self.with_partition.unwrap_or(rows.has_partition()));
        for i in 0..rows.len() {
            let id = rows.id(i);
            let key = (id.partition, id.ledger_id, id.entry_id);
            let Some(plan) = plans.get(&key) else {
                continue;
            };
            let data = rows.data(i);
            let written = match (plan, data) {
                (Plan::Whole(note), _) => {
                    out.push(key, data, Some(note));
                    true
                }
                (Plan::Slots(_), None) => false,
                (Plan::Slots(slots), Some(data)) => {
                    let r = write_entry(&mut self.decompressor, data, slots, &self.opts);
                    out.push_rewritten(key, data, r)
                }
            };
            self.stats.entries_written += u64::from(written);
        }
        Ok(out.finish())
    }
}

/// Folds one keyed message through the strategy (`StrategicTwoPhaseCompactor`
/// phase one, plus the merge hook).
#[allow(clippy::too_many_arguments)]
pub(crate) fn process<S: Strategy>(
    keys: &mut Keys,
    strategy: &mut S,
    stats: &mut StrategicStats,
    partition: i32,
    key: &str,
    position: Position,
    value: Option<&[u8]>,
    chunks: Option<Vec<Position>>,
) -> Result<()> {
    let id = (partition, Box::<str>::from(key));
    let prev = keys.get(&id).map(|k| k.value.as_slice());
    if strategy.should_keep_left(prev, value)? {
        stats.rejected += 1;
        return Ok(());
    }
    stats.accepted += 1;
    let Some(value) = value else {
        keys.remove(&id);
        return Ok(());
    };
    let kept = match prev {
        Some(prev) if strategy.is_merge_enabled() => {
            stats.merged += 1;
            Kept {
                position,
                value: strategy.merge(prev, value)?,
                merged: true,
                chunks: None,
            }
        }
        _ => Kept {
            position,
            value: value.to_vec(),
            merged: false,
            chunks,
        },
    };
    keys.insert(id, kept);
    Ok(())
}

fn protobuf_error(
    e: prost::DecodeError,
    offset: usize,
    space: Space,
    message: &'static str,
) -> EntryError {
    EntryError::from(FormatError::Protobuf {
        message,
        space,
        offset,
        reason: e.to_string(),
    })
}

/// Phase two for one entry: `Some(None)` copies it, `Some(Some(bytes))` writes a new entry.
pub(crate) fn write_entry(
    decompressor: &mut Decompressor,
    data: &[u8],
    slots: &[Slot],
    opts: &CompactOptions,
) -> Result<Option<Option<Vec<u8>>>> {
    let entry = EntryView::parse(data, opts.verify_checksum)?;
    let md = &entry.metadata;
    let header = || {
        proto::MessageMetadata::decode(md.raw)
            .map_err(|e| protobuf_error(e, entry.metadata_offset, Space::Entry, "MessageMetadata"))
    };
    let codec = Codec::from_proto(md.compression.unwrap_or(0)).unwrap_or(Codec::None);
    if !is_readable_batch(md) {
        return Ok(match slots.first() {
            None => None,
            Some((_, None)) => Some(None),
            Some((_, Some(merged))) => {
                // A merged value replaces the message: no longer a chunk.
                let mut h = header()?;
                h.uuid = None;
                h.num_chunks_from_msg = None;
                h.total_chunk_msg_size = None;
                h.chunk_id = None;
                h.null_value = None;
                Some(Some(single_entry(h, merged, codec)?))
            }
        });
    }
    let (codec, records) = batch_records(decompressor, &entry, opts.max_uncompressed_size)?;
    let mut messages = Vec::new();
    for (index, merged) in slots {
        let Some(r) = records.iter().find(|r| r.index == *index) else {
            continue;
        };
        let smm =
            proto::SingleMessageMetadata::decode(&r.record[4..r.record.len() - r.payload.len()])
                .map_err(|e| protobuf_error(e, 0, Space::BatchBuffer, "SingleMessageMetadata"))?;
        let value = merged.as_deref().unwrap_or(r.payload);
        messages.push((smm, value, *index));
    }
    if messages.is_empty() {
        return Ok(None);
    }
    let batch_header = header()?;
    let seq = |smm: &proto::SingleMessageMetadata, index: i32| {
        smm.sequence_id
            .unwrap_or(batch_header.sequence_id.wrapping_add(index as u64))
    };
    if messages.len() == 1 {
        let (smm, value, index) = &messages[0];
        let h = lone_message_header(md, &batch_header, smm, seq(smm, *index));
        return Ok(Some(Some(single_entry(h, value, codec)?)));
    }
    // A new batch, header initialised from the first message (Commands.initBatchMessageMetadata).
    let (first, _, first_index) = &messages[0];
    let (last, _, last_index) = &messages[messages.len() - 1];
    let mut h = proto::MessageMetadata {
        producer_name: batch_header.producer_name.clone(),
        sequence_id: seq(first, *first_index),
        publish_time: batch_header.publish_time,
        replicated_from: batch_header.replicated_from.clone(),
        replicate_to: batch_header.replicate_to.clone(),
        schema_version: batch_header.schema_version.clone(),
        schema_id: batch_header.schema_id.clone(),
        num_messages_in_batch: Some(messages.len() as i32),
        highest_sequence_id: Some(seq(last, *last_index)),
        ..Default::default()
    };
    if let Some(k) = &first.partition_key {
        h.partition_key = Some(k.clone());
        h.partition_key_b64_encoded = Some(first.partition_key_b64_encoded.unwrap_or(false));
    }
    h.ordering_key = first.ordering_key.clone();
    let mut buf = Vec::new();
    for (smm, value, _) in &mut messages {
        smm.payload_size = i32::try_from(value.len())
            .map_err(|_| EntryError::Encode("merged value larger than 2 GiB".into()))?;
        smm.compacted_out = None;
        if !value.is_empty() {
            smm.null_value = None;
        }
        buf.extend_from_slice(&(smm.encoded_len() as u32).to_be_bytes());
        smm.encode(&mut buf).expect("Vec grows");
        buf.extend_from_slice(value);
    }
    if codec != Codec::None {
        h.compression = Some(codec.to_proto());
        h.uncompressed_size = Some(buf.len() as u32);
    }
    let payload = compress(codec, &buf)?;
    Ok(Some(Some(frame_entry(&h, &payload, true, None))))
}

/// The metadata of a batch member written as a non-batched message: the batch
/// header's entry-level fields plus the member's own.
fn lone_message_header(
    view: &MessageMetadataView<'_>,
    batch: &proto::MessageMetadata,
    smm: &proto::SingleMessageMetadata,
    sequence_id: u64,
) -> proto::MessageMetadata {
    proto::MessageMetadata {
        producer_name: batch.producer_name.clone(),
        sequence_id,
        publish_time: view.publish_time,
        properties: smm.properties.clone(),
        replicated_from: batch.replicated_from.clone(),
        partition_key: smm.partition_key.clone(),
        replicate_to: batch.replicate_to.clone(),
        event_time: smm.event_time,
        schema_version: batch.schema_version.clone(),
        partition_key_b64_encoded: smm.partition_key_b64_encoded,
        ordering_key: smm.ordering_key.clone(),
        txnid_least_bits: batch.txnid_least_bits,
        txnid_most_bits: batch.txnid_most_bits,
        null_partition_key: smm.null_partition_key,
        schema_id: batch.schema_id.clone(),
        ..Default::default()
    }
}

/// A non-batched entry with `value`, compressed with `codec`.
fn single_entry(mut h: proto::MessageMetadata, value: &[u8], codec: Codec) -> Result<Vec<u8>> {
    h.compression = (codec != Codec::None).then_some(codec.to_proto());
    h.uncompressed_size = Some(
        u32::try_from(value.len())
            .map_err(|_| EntryError::Encode("value larger than 4 GiB".into()))?,
    );
    h.num_messages_in_batch = None;
    h.compacted_batch_indexes.clear();
    let payload = compress(codec, value)?;
    Ok(frame_entry(&h, &payload, true, None))
}
