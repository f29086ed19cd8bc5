//! Stage 2, [`StrategicFold`]: rows shuffled by `(partition, key)` → plan rows.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use foldhash::fast::RandomState;

use crate::error::{EntryError, Result};

use super::partition::read_entry;
use super::rows::{
    unpack_positions, RowBuilder, RowColumns, KIND_CHUNK, KIND_MESSAGE, KIND_PLAN, KIND_RESTART,
};
use crate::compaction::messages::MessageReader;
use crate::compaction::strategic::{process, Keys, StrategicStats};
use crate::compaction::strategy::Strategy;
use crate::compaction::{CompactOptions, Order, Position};

/// Folds rows shuffled by `(partition, key)` and sorted by `(partition, key,
/// ledger_id, entry_id, batch_index, kind)` with a strategy, one key at a
/// time, into plan rows; plan rows pass through.
pub struct StrategicFold<S: Strategy> {
    pub(super) opts: CompactOptions,
    pub(super) strategy: S,
    pub(super) current: Option<(i32, Box<str>)>,
    pub(super) last: Option<(Position, i32)>,
    pub(super) keys: Keys,
    pub(super) readers: HashMap<Box<str>, MessageReader, RandomState>,
    pub(super) stats: StrategicStats,
}

impl<S: Strategy> StrategicFold<S> {
    pub fn new(opts: CompactOptions, strategy: S) -> Result<Self> {
        if opts.order != Order::Publish {
            return Err(EntryError::Options(
                "a compaction strategy works in publishing order; order=\"event_time\" cannot be combined with it".into(),
            ));
        }
        Ok(StrategicFold {
            opts,
            strategy,
            current: None,
            last: None,
            keys: Keys::default(),
            readers: HashMap::default(),
            stats: StrategicStats::default(),
        })
    }

    pub fn strategy_mut(&mut self) -> &mut S {
        &mut self.strategy
    }

    pub fn push(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = RowColumns::new(batch)?;
        let mut out = RowBuilder::default();
        for i in 0..batch.num_rows() {
            let kind = rows.kind(i);
            if kind == KIND_PLAN {
                rows.copy_to(i, &mut out);
                continue;
            }
            let partition = rows.partition(i);
            let key = rows.key(i).ok_or_else(|| {
                EntryError::Schema(format!("row {i} of kind {kind} has a null key"))
            })?;
            if self
                .current
                .as_ref()
                .is_none_or(|(p, k)| *p != partition || **k != *key)
            {
                self.flush(&mut out);
                self.current = Some((partition, key.into()));
            }
            let position = rows.position(i);
            if let Some(last) = self.last {
                if (position, kind) < last {
                    return Err(EntryError::Order(format!(
                        "rows of key {key:?} are not sorted by position: {position} after {}",
                        last.0
                    )));
                }
            }
            self.last = Some((position, kind));
            match kind {
                KIND_RESTART => {
                    let uuid = rows.uuid(i).unwrap_or_default();
                    self.readers.remove(uuid);
                }
                KIND_CHUNK => {
                    let uuid = rows.uuid(i).unwrap_or_default();
                    let data = rows.value(i).ok_or_else(|| {
                        EntryError::Schema(format!("chunk row {position} has no entry bytes"))
                    })?;
                    let opts = self.opts;
                    let reader = self
                        .readers
                        .entry(uuid.into())
                        .or_insert_with(|| MessageReader::new(opts));
                    let (keys, strategy, stats) =
                        (&mut self.keys, &mut self.strategy, &mut self.stats);
                    let entry = (partition, position.ledger_id, position.entry_id);
                    read_entry(reader, &opts, entry, data, &mut out, &mut |k, p, v, c| {
                        process(
                            keys,
                            strategy,
                            stats,
                            partition,
                            k,
                            p,
                            v,
                            c.map(<[_]>::to_vec),
                        )
                    })?;
                }
                KIND_MESSAGE => {
                    let chunks = rows.chunks(i).map(unpack_positions).transpose()?;
                    process(
                        &mut self.keys,
                        &mut self.strategy,
                        &mut self.stats,
                        partition,
                        key,
                        position,
                        rows.value(i),
                        chunks,
                    )?;
                }
                other => {
                    return Err(EntryError::Schema(format!("unknown row kind {other}")));
                }
            }
        }
        Ok(out.finish())
    }

    /// Plans of the last key.
    pub fn finish(&mut self) -> RecordBatch {
        let mut out = RowBuilder::default();
        self.flush(&mut out);
        out.finish()
    }

    /// The current key's plans, as the in-process compactor derives them.
    pub(super) fn flush(&mut self, out: &mut RowBuilder) {
        self.last = None;
        let Some((partition, _)) = self.current.take() else {
            return;
        };
        for (_, kept) in self.keys.drain() {
            let p = kept.position;
            match (kept.merged, kept.chunks) {
                (false, Some(chunks)) => {
                    for c in chunks {
                        out.plan((partition, c.ledger_id, c.entry_id), -1, None, None);
                    }
                }
                (false, None) => out.plan(
                    (partition, p.ledger_id, p.entry_id),
                    p.batch_index,
                    None,
                    None,
                ),
                (true, _) => out.plan(
                    (partition, p.ledger_id, p.entry_id),
                    p.batch_index,
                    Some(&kept.value),
                    None,
                ),
            }
        }
        // Chunks of messages still incomplete at the topic's end stay for a later run.
        for (_, mut reader) in self.readers.drain() {
            for (p, positions) in reader.take_pending() {
                for c in positions {
                    out.plan((p, c.ledger_id, c.entry_id), -1, None, None);
                }
            }
        }
    }
}
