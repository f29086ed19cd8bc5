//! The in-process compactor: phase one over every input batch, then phase two
//! over the same batches again, producing the compacted entries.
//!
//! Input: entry tables in topic order (strictly increasing `(ledger_id,
//! entry_id)` per partition; partitions are compacted independently).
//! Output: the compacted entries `(ledger_id, entry_id[, partition], data,
//! error)`, keeping their original ids, in input order.
//!
//! Memory is bounded by the number of live keys, not by the topic: phase one
//! keeps a [`KeyState`] per key (a position and an event time), phase two a
//! list of retained batch indexes per entry that has survivors.
//!
//! Bad input loses nothing: an entry that cannot be read (bad framing,
//! checksum, metadata, payload or batch record, or a null cell) is written
//! back unchanged, as the broker does with a batch it cannot decode, and its
//! `error` column says why. Such an entry contributes no key.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use foldhash::fast::RandomState;

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, Result};
use crate::format::compression::Decompressor;
use crate::format::frame::EntryView;

use super::keys::{KeyState, Observation};
use super::rebatch::rebatch;
use super::scan::{
    aborted_transactions, batch_records, is_readable_batch, scan_entry, EntryKind, KAFKA_KEPT,
};
use super::{CompactOptions, Position};

/// Pending output bytes after which an output batch is cut (keeps 32-bit offsets safe).
const FLUSH_BYTES: usize = 256 << 20;

type Keys = HashMap<Box<str>, KeyState, RandomState>;

/// `(partition, ledger_id, entry_id)`.
pub type EntryKey = (i32, i64, i64);

/// What phase two does with an entry that has something to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retain {
    /// Written back unchanged because it could not be read.
    Whole(String),
    /// The retained batch indexes (−1 for a non-batched entry).
    Indexes(Vec<i32>),
}

/// Counts that reconcile input and output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactStats {
    pub entries_read: u64,
    pub messages_read: u64,
    pub markers: u64,
    pub tombstones: u64,
    pub null_key_dropped: u64,
    /// Messages of aborted transactions, skipped.
    pub aborted_dropped: u64,
    /// Entries that could not be read (corrupt, truncated, null), kept unchanged.
    pub unreadable_entries: u64,
    /// Kafka-on-Pulsar entries (`entry.format=kafka`), readable but not
    /// Pulsar batches: kept unchanged, and not counted as unreadable.
    pub kafka_entries: u64,
    pub keys: u64,
    pub entries_written: u64,
    pub messages_written: u64,
}

/// Schema of the compacted output.
pub fn output_schema(with_partition: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
    ];
    if with_partition {
        fields.push(Field::new("partition", DataType::Int32, false));
    }
    fields.push(Field::new("data", DataType::Binary, true));
    fields.push(Field::new("error", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

/// Builds output batches of compacted entries.
pub(crate) struct Output {
    with_partition: bool,
    ledger: Int64Builder,
    entry: Int64Builder,
    partition: Int32Builder,
    data: BinaryBuilder,
    error: StringBuilder,
    rows: usize,
    bytes: usize,
    done: Vec<RecordBatch>,
}

impl Output {
    pub(crate) fn new(with_partition: bool) -> Self {
        Output {
            with_partition,
            ledger: Int64Builder::new(),
            entry: Int64Builder::new(),
            partition: Int32Builder::new(),
            data: BinaryBuilder::new(),
            error: StringBuilder::new(),
            rows: 0,
            bytes: 0,
            done: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, key: EntryKey, data: Option<&[u8]>, error: Option<&str>) {
        if self.bytes >= FLUSH_BYTES {
            let batch = self.cut();
            self.done.push(batch);
        }
        self.ledger.append_value(key.1);
        self.entry.append_value(key.2);
        self.partition.append_value(key.0);
        self.data.append_option(data);
        self.error.append_option(error);
        self.rows += 1;
        self.bytes += data.map_or(0, <[u8]>::len) + error.map_or(0, str::len);
    }

    fn cut(&mut self) -> RecordBatch {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
        ];
        let partition = self.partition.finish();
        if self.with_partition {
            columns.push(Arc::new(partition));
        }
        columns.push(Arc::new(self.data.finish()));
        columns.push(Arc::new(self.error.finish()));
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(output_schema(self.with_partition), columns)
            .expect("columns match the output schema")
    }

    /// Writes one entry's phase-two result: the rewritten entry (`Some(None)`:
    /// unchanged), nothing (`None`), or the entry unchanged with the error that
    /// stopped its rewrite. Returns whether a row was written.
    pub(crate) fn push_rewritten(
        &mut self,
        key: EntryKey,
        data: &[u8],
        rewritten: Result<Option<Option<Vec<u8>>>>,
    ) -> bool {
        match rewritten {
            Ok(Some(bytes)) => self.push(key, Some(bytes.as_deref().unwrap_or(data)), None),
            Ok(None) => return false,
            Err(e) => self.push(key, Some(data), Some(&e.to_string())),
        }
        true
    }

    pub(crate) fn finish(&mut self) -> Vec<RecordBatch> {
        if self.rows > 0 {
            let batch = self.cut();
            self.done.push(batch);
        }
        std::mem::take(&mut self.done)
    }
}

/// Checks that entries arrive in strictly increasing position per partition.
#[derive(Default)]
pub(crate) struct OrderCheck {
    last: HashMap<i32, (i64, i64)>,
}

impl OrderCheck {
    pub(crate) fn check(&mut self, rows: &EntryRows<'_>, i: usize) -> Result<EntryKey> {
        if rows.id_is_null(i) {
            return Err(EntryError::Schema(format!(
                "entry row {i} has a null ledger_id or entry_id; compaction needs every entry's position"
            )));
        }
        let id = rows.id(i);
        let pos = (id.ledger_id, id.entry_id);
        if let Some(&last) = self.last.get(&id.partition) {
            if pos <= last {
                return Err(EntryError::Order(format!(
                    "entries are not in topic order: {}:{} comes after {}:{} (partition {}); \
                     sort by ledger_id, entry_id and drop duplicates first",
                    pos.0, pos.1, last.0, last.1, id.partition
                )));
            }
        }
        self.last.insert(id.partition, pos);
        Ok((id.partition, id.ledger_id, id.entry_id))
    }
}

/// The transactions aborted by `TXN_ABORT` markers among the entries.
pub fn aborted_in(batches: &[RecordBatch]) -> Result<HashSet<(u64, u64)>> {
    let mut rows = Vec::with_capacity(batches.len());
    for b in batches {
        rows.push(EntryRows::new(b)?);
    }
    Ok(aborted_transactions(
        rows.iter()
            .flat_map(|r| (0..r.len()).filter_map(|i| r.data(i))),
    ))
}

/// Two-pass compactor: [`observe`](Compactor::observe) every batch, then
/// [`write`](Compactor::write) the same batches in the same order.
pub struct Compactor {
    opts: CompactOptions,
    decompressor: Decompressor,
    keys: HashMap<i32, Keys>,
    /// Entries kept for reasons other than a keyed survivor.
    special: HashMap<EntryKey, Retain>,
    retained: Option<HashMap<EntryKey, Retain>>,
    order: OrderCheck,
    with_partition: Option<bool>,
    stats: CompactStats,
    /// Transactions whose messages phase one skips (aborted ones).
    aborted: HashSet<(u64, u64)>,
}

impl Compactor {
    pub fn new(opts: CompactOptions) -> Self {
        Compactor {
            opts,
            decompressor: Decompressor::default(),
            keys: HashMap::new(),
            special: HashMap::new(),
            retained: None,
            order: OrderCheck::default(),
            with_partition: None,
            stats: CompactStats::default(),
            aborted: HashSet::new(),
        }
    }

    /// Skips the messages of these transactions, as the broker's compactor
    /// skips aborted ones: they never become a key's value, so the key keeps
    /// its last committed one. [`super::scan::aborted_transactions`] finds
    /// them from the topic's `TXN_ABORT` markers.
    pub fn with_aborted_transactions(mut self, aborted: HashSet<(u64, u64)>) -> Self {
        self.aborted = aborted;
        self
    }

    pub fn stats(&self) -> CompactStats {
        let mut s = self.stats;
        s.keys = match &self.retained {
            None => self.keys.values().map(|k| k.len() as u64).sum(),
            Some(_) => s.keys,
        };
        s
    }

    fn check_shape(&mut self, rows: &EntryRows<'_>) -> Result<()> {
        match self.with_partition {
            None => self.with_partition = Some(rows.has_partition()),
            Some(p) if p != rows.has_partition() => {
                return Err(EntryError::Schema(
                    "every input batch must have the same columns (partition or not)".into(),
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// Phase one over one batch of entries.
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.retained.is_some() {
            return Err(EntryError::Order(
                "observe() after write(): phase one is over".into(),
            ));
        }
        let rows = EntryRows::new(batch)?;
        self.check_shape(&rows)?;
        for i in 0..rows.len() {
            let key = self.order.check(&rows, i)?;
            self.stats.entries_read += 1;
            let Some(data) = rows.data(i) else {
                self.stats.unreadable_entries += 1;
                self.special
                    .insert(key, Retain::Whole("entry data is null".into()));
                continue;
            };
            self.observe_entry(key, data);
        }
        Ok(())
    }

    fn observe_entry(&mut self, key: EntryKey, data: &[u8]) {
        let (partition, ledger_id, entry_id) = key;
        let opts = self.opts;
        let keys = self.keys.entry(partition).or_default();
        let stats = &mut self.stats;
        let aborted = &self.aborted;
        let mut null_kept = Vec::new();
        let result = scan_entry(&mut self.decompressor, data, &opts, &mut |c| {
            stats.messages_read += 1;
            if c.txn.is_some_and(|t| aborted.contains(&t)) {
                stats.aborted_dropped += 1;
                return;
            }
            stats.tombstones += u64::from(c.tombstone);
            let Some(k) = c.key else {
                if opts.retain_null_key {
                    null_kept.push(c.batch_index);
                } else {
                    stats.null_key_dropped += 1;
                }
                return;
            };
            let o = Observation {
                position: Position::new(ledger_id, entry_id, c.batch_index),
                tombstone: c.tombstone,
                event_time: c.event_time,
                batched: c.batched,
                chunk: c.chunk,
            };
            match keys.get_mut(k) {
                Some(state) => {
                    state.observe(&o, opts.order);
                    if state.is_empty() {
                        keys.remove(k);
                    }
                }
                None => {
                    let mut state = KeyState::default();
                    state.observe(&o, opts.order);
                    if !state.is_empty() {
                        keys.insert(k.into(), state);
                    }
                }
            }
        });
        match result {
            Ok(EntryKind::Marker) => self.stats.markers += 1,
            Ok(EntryKind::Kafka) => {
                self.stats.kafka_entries += 1;
                self.special.insert(key, Retain::Whole(KAFKA_KEPT.into()));
            }
            Ok(_) if !null_kept.is_empty() => {
                self.special.insert(key, Retain::Indexes(null_kept));
            }
            Ok(_) => {}
            Err(e) => {
                self.stats.unreadable_entries += 1;
                self.special.insert(key, Retain::Whole(e.to_string()));
            }
        }
    }

    /// Ends phase one: turns the key states into per-entry retained indexes.
    fn retained(&mut self) -> &HashMap<EntryKey, Retain> {
        if self.retained.is_none() {
            self.stats.keys = self.keys.values().map(|k| k.len() as u64).sum();
            let mut retained = std::mem::take(&mut self.special);
            for (partition, keys) in std::mem::take(&mut self.keys) {
                for state in keys.values() {
                    for p in state.retained() {
                        let slot = retained
                            .entry((partition, p.ledger_id, p.entry_id))
                            .or_insert_with(|| Retain::Indexes(Vec::new()));
                        if let Retain::Indexes(list) = slot {
                            list.push(p.batch_index);
                        }
                    }
                }
            }
            for r in retained.values_mut() {
                if let Retain::Indexes(list) = r {
                    list.sort_unstable();
                }
            }
            self.retained = Some(retained);
        }
        self.retained.as_ref().unwrap()
    }

    /// Phase two over one batch of entries (the batches given to `observe`,
    /// in the same order).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let rows = EntryRows::new(batch)?;
        self.retained();
        let retained = self.retained.as_ref().unwrap();
        let mut out = Output::new(self.with_partition.unwrap_or(rows.has_partition()));
        for i in 0..rows.len() {
            let id = rows.id(i);
            let key = (id.partition, id.ledger_id, id.entry_id);
            let Some(retain) = retained.get(&key) else {
                continue;
            };
            let data = rows.data(i);
            let written = match (retain, data) {
                (Retain::Whole(error), _) => {
                    out.push(key, data, Some(error));
                    1
                }
                (Retain::Indexes(_), None) => 0, // not the batch observed
                (Retain::Indexes(list), Some(data)) => {
                    let r = rewrite_entry(&mut self.decompressor, data, list, &self.opts);
                    if let Ok(Some((_, messages))) = &r {
                        self.stats.messages_written += messages;
                    }
                    u64::from(out.push_rewritten(key, data, r.map(|k| k.map(|(b, _)| b))))
                }
            };
            self.stats.entries_written += written;
        }
        Ok(out.finish())
    }
}

/// Phase two for one entry with retained indexes: `Some((None, n))` writes
/// it unchanged, `Some((Some(bytes), n))` writes the rebatched entry.
pub fn rewrite_entry(
    decompressor: &mut Decompressor,
    data: &[u8],
    retained: &[i32],
    opts: &CompactOptions,
) -> Result<Option<(Option<Vec<u8>>, u64)>> {
    let entry = EntryView::parse(data, opts.verify_checksum)?;
    if entry.metadata.marker_type.is_some() {
        return Ok(None);
    }
    if !is_readable_batch(&entry.metadata) {
        let keep = retained.contains(&-1)
            || (entry.metadata.partition_key.is_none() && opts.retain_null_key);
        return Ok(keep.then_some((None, 1)));
    }
    let (codec, records) = batch_records(decompressor, &entry, opts.max_uncompressed_size)?;
    let kept = rebatch(
        &entry,
        codec,
        &records,
        retained,
        opts.retain_null_key,
        opts.max_uncompressed_size,
    )?;
    Ok(kept.map(|(bytes, n)| (Some(bytes), n as u64)))
}

/// Compacts entry batches in topic order, in one call.
pub fn compact_batches(batches: &[RecordBatch], opts: CompactOptions) -> Result<Vec<RecordBatch>> {
    let mut c = Compactor::new(opts).with_aborted_transactions(aborted_in(batches)?);
    for b in batches {
        c.observe(b)?;
    }
    let mut out = Vec::new();
    for b in batches {
        out.extend(c.write(b)?);
    }
    Ok(out)
}
