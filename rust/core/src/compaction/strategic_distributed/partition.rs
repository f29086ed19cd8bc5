//! Stage 1, [`PartitionPass`]: one engine partition's entries → rows.

use std::collections::{HashMap, HashSet};

use arrow_array::RecordBatch;
use foldhash::fast::RandomState;

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, Result};
use crate::format::frame::EntryView;

use super::rows::{RowBuilder, KIND_CHUNK, KIND_MESSAGE, KIND_RESTART};
use crate::compaction::compactor::{EntryKey, OrderCheck};
use crate::compaction::messages::{MessageReader, Outcome};
use crate::compaction::scan::{is_readable_batch, single_candidate};
use crate::compaction::{CompactOptions, Order, Position};

/// The message id `(partition, key, uuid)` and chunk id of an entry that the
/// [`MessageReader`] would assemble as a chunk; `None` for any other entry.
/// Mirrors the reader's own classification, in its order.
pub(super) fn keyed_chunk(data: &[u8], opts: &CompactOptions) -> Option<(Box<str>, Box<str>, i32)> {
    let entry = EntryView::parse(data, opts.verify_checksum).ok()?;
    let md = &entry.metadata;
    if md.marker_type.is_some() || md.is_encrypted() || is_readable_batch(md) {
        return None;
    }
    let chunk = single_candidate(&entry).chunk?;
    let key = md.partition_key?;
    Some((key.into(), chunk.uuid.into(), chunk.chunk_id))
}

/// Receives a complete keyed message: key, position, value (`None`: a
/// tombstone), chunk positions.
pub(super) type OnMessage<'a> =
    dyn FnMut(&str, Position, Option<&[u8]>, Option<&[Position]>) -> Result<()> + 'a;

/// Reads one entry as the in-process phase one does: keyed messages go to
/// `on_message`, entry plans (kept whole, retained key-less slots, chunks of a
/// message that failed to decompress) to `plans`. Returns whether the entry
/// completed a chunked message.
pub(super) fn read_entry(
    reader: &mut MessageReader,
    opts: &CompactOptions,
    key: EntryKey,
    data: &[u8],
    plans: &mut RowBuilder,
    on_message: &mut OnMessage<'_>,
) -> Result<bool> {
    let mut null_kept = Vec::new();
    let mut failed_chunks = Vec::new();
    let mut completed = false;
    let outcome = reader.read_entry(key, data, &mut |m| {
        completed |= m.chunks.is_some();
        let Some(k) = m.key else {
            if opts.retain_null_key {
                null_kept.push(m.position.batch_index);
            }
            return Ok(());
        };
        if let Some(error) = m.error {
            failed_chunks.push((m.chunks.unwrap_or_default().to_vec(), error.to_owned()));
            return Ok(());
        }
        on_message(k, m.position, m.value, m.chunks)
    })?;
    match outcome {
        Outcome::Marker | Outcome::Read | Outcome::Aborted => {}
        Outcome::Encrypted => plans.plan(
            key,
            -1,
            None,
            Some("encrypted entry kept unchanged: a strategy cannot read its values"),
        ),
        Outcome::Unreadable(e) => plans.plan(key, -1, None, Some(&e.to_string())),
    }
    for index in null_kept {
        plans.plan(key, index, None, None);
    }
    for (positions, error) in failed_chunks {
        for p in positions {
            plans.plan((key.0, p.ledger_id, p.entry_id), -1, None, Some(&error));
        }
    }
    Ok(completed)
}

pub(super) type MessageId = (i32, Box<str>, Box<str>);

/// Phase one over one engine partition's entries (a contiguous range of each
/// topic partition, in topic order): see the module documentation.
pub struct PartitionPass {
    pub(super) opts: CompactOptions,
    pub(super) reader: MessageReader,
    pub(super) order: OrderCheck,
    /// Messages whose chunk 0 this partition has seen: from then on local.
    pub(super) started: HashSet<MessageId, RandomState>,
    /// Chunk entries of the local assembly of each message, kept to be sent
    /// on when the message is still incomplete at the partition's end.
    pub(super) local: HashMap<MessageId, Vec<(Position, Vec<u8>)>, RandomState>,
}

impl PartitionPass {
    pub fn new(opts: CompactOptions) -> Result<Self> {
        if opts.order != Order::Publish {
            return Err(EntryError::Options(
                "a compaction strategy works in publishing order; order=\"event_time\" cannot be combined with it".into(),
            ));
        }
        Ok(PartitionPass {
            opts,
            reader: MessageReader::new(opts),
            order: OrderCheck::default(),
            started: HashSet::default(),
            local: HashMap::default(),
        })
    }

    /// Skips the messages of these transactions (`(most, least)` id bits), as
    /// [`crate::compaction::strategic::StrategicCompactor::with_aborted_transactions`].
    pub fn with_aborted_transactions(
        mut self,
        aborted: std::collections::HashSet<(u64, u64)>,
    ) -> Self {
        self.reader = MessageReader::new(self.opts).with_aborted_transactions(aborted);
        self
    }

    pub fn push(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = EntryRows::new(batch)?;
        let mut out = RowBuilder::default();
        for i in 0..rows.len() {
            let key = self.order.check(&rows, i)?;
            let (partition, ledger_id, entry_id) = key;
            let position = Position::new(ledger_id, entry_id, -1);
            let Some(data) = rows.data(i) else {
                out.plan(key, -1, None, Some("entry data is null"));
                continue;
            };
            if self.reader.is_aborted(data) {
                continue; // never a message, nor a chunk to carry on
            }
            let chunk = keyed_chunk(data, &self.opts);
            if let Some((k, uuid, chunk_id)) = &chunk {
                let id = (partition, k.clone(), uuid.clone());
                if !self.started.contains(&id) {
                    if *chunk_id != 0 {
                        // Continues a message of an earlier partition (or is an orphan).
                        out.push(
                            KIND_CHUNK,
                            partition,
                            Some(k),
                            Some(uuid),
                            position,
                            Some(data),
                            None,
                            None,
                        );
                        continue;
                    }
                    out.push(
                        KIND_RESTART,
                        partition,
                        Some(k),
                        Some(uuid),
                        position,
                        None,
                        None,
                        None,
                    );
                    self.started.insert(id.clone());
                }
                if *chunk_id == 0 {
                    self.local.insert(id, vec![(position, data.to_vec())]);
                } else if let Some(held) = self.local.get_mut(&id) {
                    held.push((position, data.to_vec()));
                }
            }
            let mut messages = RowBuilder::default();
            let completed = read_entry(
                &mut self.reader,
                &self.opts,
                key,
                data,
                &mut out,
                &mut |k, p, value, chunks| {
                    messages.push(
                        KIND_MESSAGE,
                        partition,
                        Some(k),
                        None,
                        p,
                        value,
                        chunks,
                        None,
                    );
                    Ok(())
                },
            )?;
            out.append(&mut messages);
            if completed {
                if let Some((k, uuid, _)) = chunk {
                    self.local.remove(&(partition, k, uuid));
                }
            }
        }
        Ok(out.finish())
    }

    /// The chunks of messages still assembling at the partition's end.
    pub fn finish(&mut self) -> RecordBatch {
        let mut out = RowBuilder::default();
        let pending: HashSet<(i32, Position), RandomState> = self
            .reader
            .take_pending()
            .into_iter()
            .filter_map(|(p, positions)| positions.first().map(|first| (p, *first)))
            .collect();
        let mut local: Vec<_> = std::mem::take(&mut self.local).into_iter().collect();
        local.sort_by_key(|(id, held)| (id.0, held.first().map(|h| h.0)));
        for ((partition, k, uuid), held) in local {
            let Some((first, _)) = held.first() else {
                continue;
            };
            if !pending.contains(&(partition, *first)) {
                continue; // completed or abandoned
            }
            for (position, data) in &held {
                out.push(
                    KIND_CHUNK,
                    partition,
                    Some(&k),
                    Some(&uuid),
                    *position,
                    Some(data),
                    None,
                    None,
                );
            }
        }
        out.finish()
    }
}
