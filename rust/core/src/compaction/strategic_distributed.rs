//! Building blocks for running the [strategic compactor](super::strategic)
//! on a distributed engine (Spark) with results identical to the in-process
//! [`StrategicCompactor`](super::strategic::StrategicCompactor):
//!
//! 1. [`PartitionPass`]: one engine partition's entries, in topic order →
//!    [rows](row_schema) of four kinds: complete keyed messages with their
//!    values ([`KIND_MESSAGE`]), per-entry plans ([`KIND_PLAN`]: an entry kept
//!    whole with a note, a retained key-less slot), and the chunks the
//!    partition cannot finish on its own ([`KIND_CHUNK`], with the entry bytes)
//!    plus restart markers ([`KIND_RESTART`]).
//! 2. [`StrategicFold`]: those rows shuffled by `(partition, key)` and sorted
//!    by `(partition, key, ledger_id, entry_id, batch_index, kind)` → plan rows.
//!    Each key is folded with the strategy exactly as phase one does
//!    in-process; leftover chunks are assembled there, in position order, with
//!    the same [`MessageReader`], so a chunked message crossing partitions
//!    enters the fold at its last chunk as it does in-process. Memory: one
//!    key's state and its chunked messages under assembly.
//! 3. [`rebuild`]: entries joined with their plans (a `note`, or a `slots`
//!    list of `(batch_index, value)`) → compacted entries, written by the
//!    in-process phase two.
//!
//! Why the partition pass is exact: chunks of different messages never
//! interact, and a chunk 0 always restarts its message. So, per message id
//! `(partition, key, uuid)`, everything from the first chunk 0 a partition
//! holds onwards can be assembled locally; what comes before it in the
//! partition (continuations of an earlier partition's message) and what is
//! still assembling at the partition's end are sent on, with a restart
//! marker at that first chunk 0 so the fold abandons an earlier partition's
//! assembly there, as the in-process reader does. This needs each engine
//! partition to hold a contiguous range of the topic partition's entries.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use foldhash::fast::RandomState;

use crate::decode::entries::{int_column, EntryRows};
use crate::error::{EntryError, Result};
use crate::format::compression::Decompressor;
use crate::format::frame::EntryView;

use super::compactor::{output_schema, EntryKey, OrderCheck, Output};
use super::messages::{MessageReader, Outcome};
use super::scan::{is_readable_batch, single_candidate};
use super::strategic::{process, write_entry, Keys, Slot, StrategicStats};
use super::strategy::Strategy;
use super::{CompactOptions, Order, Position};

/// A chunk 0 that restarts its message: earlier partitions' assembly of it is abandoned.
pub const KIND_RESTART: i32 = 0;
/// A chunk the partition could not finish (its entry bytes in `value`).
pub const KIND_CHUNK: i32 = 1;
/// A complete keyed message (`value` null for a tombstone).
pub const KIND_MESSAGE: i32 = 2;
/// A plan for one entry: a slot to keep (`batch_index`, merged `value`), or
/// the whole entry with a `note`.
pub const KIND_PLAN: i32 = 3;

/// Schema of the rows exchanged between the stages. `chunks` packs the
/// positions of a chunked message's chunks as big-endian `(ledger_id,
/// entry_id)` pairs.
pub fn row_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("kind", DataType::Int32, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("key", DataType::Utf8, true),
        Field::new("uuid", DataType::Utf8, true),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
        Field::new("value", DataType::Binary, true),
        Field::new("chunks", DataType::Binary, true),
        Field::new("note", DataType::Utf8, true),
    ]))
}

#[derive(Default)]
struct RowBuilder {
    kind: Int32Builder,
    partition: Int32Builder,
    key: StringBuilder,
    uuid: StringBuilder,
    ledger: Int64Builder,
    entry: Int64Builder,
    index: Int32Builder,
    value: BinaryBuilder,
    chunks: BinaryBuilder,
    note: StringBuilder,
}

impl RowBuilder {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: i32,
        partition: i32,
        key: Option<&str>,
        uuid: Option<&str>,
        position: Position,
        value: Option<&[u8]>,
        chunks: Option<&[Position]>,
        note: Option<&str>,
    ) {
        self.kind.append_value(kind);
        self.partition.append_value(partition);
        self.key.append_option(key);
        self.uuid.append_option(uuid);
        self.ledger.append_value(position.ledger_id);
        self.entry.append_value(position.entry_id);
        self.index.append_value(position.batch_index);
        self.value.append_option(value);
        self.chunks.append_option(chunks.map(pack_positions));
        self.note.append_option(note);
    }

    fn plan(&mut self, entry: EntryKey, slot: i32, value: Option<&[u8]>, note: Option<&str>) {
        let position = Position::new(entry.1, entry.2, slot);
        self.push(KIND_PLAN, entry.0, None, None, position, value, None, note);
    }

    fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.kind.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.index.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.chunks.finish()),
            Arc::new(self.note.finish()),
        ];
        RecordBatch::try_new(row_schema(), columns).expect("columns match the row schema")
    }
}

fn pack_positions(positions: &[Position]) -> Vec<u8> {
    let mut out = Vec::with_capacity(positions.len() * 16);
    for p in positions {
        out.extend_from_slice(&p.ledger_id.to_be_bytes());
        out.extend_from_slice(&p.entry_id.to_be_bytes());
    }
    out
}

fn unpack_positions(raw: &[u8]) -> Result<Vec<Position>> {
    if !raw.len().is_multiple_of(16) {
        return Err(EntryError::Input(format!(
            "`chunks` holds {} bytes, not a multiple of 16",
            raw.len()
        )));
    }
    Ok(raw
        .chunks_exact(16)
        .map(|c| {
            let ledger = i64::from_be_bytes(c[..8].try_into().expect("8 bytes"));
            let entry = i64::from_be_bytes(c[8..].try_into().expect("8 bytes"));
            Position::new(ledger, entry, -1)
        })
        .collect())
}

/// The message id `(partition, key, uuid)` and chunk id of an entry that the
/// [`MessageReader`] would assemble as a chunk; `None` for any other entry.
/// Mirrors the reader's own classification, in its order.
fn keyed_chunk(data: &[u8], opts: &CompactOptions) -> Option<(Box<str>, Box<str>, i32)> {
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
type OnMessage<'a> =
    dyn FnMut(&str, Position, Option<&[u8]>, Option<&[Position]>) -> Result<()> + 'a;

/// Reads one entry as the in-process phase one does: keyed messages go to
/// `on_message`, entry plans (kept whole, retained key-less slots, chunks of a
/// message that failed to decompress) to `plans`. Returns whether the entry
/// completed a chunked message.
fn read_entry(
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
        Outcome::Marker | Outcome::Read => {}
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

type MessageId = (i32, Box<str>, Box<str>);

/// Phase one over one engine partition's entries (a contiguous range of each
/// topic partition, in topic order): see the module documentation.
pub struct PartitionPass {
    opts: CompactOptions,
    reader: MessageReader,
    order: OrderCheck,
    /// Messages whose chunk 0 this partition has seen: from then on local.
    started: HashSet<MessageId, RandomState>,
    /// Chunk entries of the local assembly of each message, kept to be sent
    /// on when the message is still incomplete at the partition's end.
    local: HashMap<MessageId, Vec<(Position, Vec<u8>)>, RandomState>,
}

impl PartitionPass {
    pub fn new(opts: CompactOptions) -> Result<Self> {
        if opts.order != Order::Publish {
            return Err(EntryError::Input(
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

impl RowBuilder {
    /// Moves `other`'s rows after this builder's.
    fn append(&mut self, other: &mut RowBuilder) {
        let batch = other.finish();
        let rows = RowColumns::new(&batch).expect("own schema");
        for i in 0..batch.num_rows() {
            rows.copy_to(i, self);
        }
    }
}

/// Typed access to a batch of [`row_schema`] rows (as an engine hands them
/// back: binary or large binary, string or large string).
struct RowColumns {
    kind: ArrayRef,
    partition: ArrayRef,
    key: ArrayRef,
    uuid: ArrayRef,
    ledger: ArrayRef,
    entry: ArrayRef,
    index: ArrayRef,
    value: ArrayRef,
    chunks: ArrayRef,
    note: ArrayRef,
}

fn column(batch: &RecordBatch, name: &str, to: &DataType) -> Result<ArrayRef> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))?;
    if col.data_type() == to {
        return Ok(col.clone());
    }
    arrow_cast::cast(col, to).map_err(|e| EntryError::Input(format!("`{name}`: {e}")))
}

impl RowColumns {
    fn new(batch: &RecordBatch) -> Result<Self> {
        Ok(RowColumns {
            kind: int_column(batch, "kind", &DataType::Int32)?,
            partition: int_column(batch, "partition", &DataType::Int32)?,
            key: column(batch, "key", &DataType::Utf8)?,
            uuid: column(batch, "uuid", &DataType::Utf8)?,
            ledger: int_column(batch, "ledger_id", &DataType::Int64)?,
            entry: int_column(batch, "entry_id", &DataType::Int64)?,
            index: int_column(batch, "batch_index", &DataType::Int32)?,
            value: column(batch, "value", &DataType::Binary)?,
            chunks: column(batch, "chunks", &DataType::Binary)?,
            note: column(batch, "note", &DataType::Utf8)?,
        })
    }

    fn int32(a: &ArrayRef, i: usize) -> i32 {
        a.as_primitive::<Int32Type>().value(i)
    }

    fn kind(&self, i: usize) -> i32 {
        Self::int32(&self.kind, i)
    }
    fn partition(&self, i: usize) -> i32 {
        Self::int32(&self.partition, i)
    }
    fn position(&self, i: usize) -> Position {
        Position::new(
            self.ledger.as_primitive::<Int64Type>().value(i),
            self.entry.as_primitive::<Int64Type>().value(i),
            Self::int32(&self.index, i),
        )
    }
    fn string(a: &ArrayRef, i: usize) -> Option<&str> {
        let a = a.as_string::<i32>();
        (!a.is_null(i)).then(|| a.value(i))
    }
    fn binary(a: &ArrayRef, i: usize) -> Option<&[u8]> {
        let a = a.as_binary::<i32>();
        (!a.is_null(i)).then(|| a.value(i))
    }
    fn key(&self, i: usize) -> Option<&str> {
        Self::string(&self.key, i)
    }
    fn uuid(&self, i: usize) -> Option<&str> {
        Self::string(&self.uuid, i)
    }
    fn value(&self, i: usize) -> Option<&[u8]> {
        Self::binary(&self.value, i)
    }
    fn chunks(&self, i: usize) -> Option<&[u8]> {
        Self::binary(&self.chunks, i)
    }
    fn note(&self, i: usize) -> Option<&str> {
        Self::string(&self.note, i)
    }

    fn copy_to(&self, i: usize, out: &mut RowBuilder) {
        let p = self.position(i);
        out.kind.append_value(self.kind(i));
        out.partition.append_value(self.partition(i));
        out.key.append_option(self.key(i));
        out.uuid.append_option(self.uuid(i));
        out.ledger.append_value(p.ledger_id);
        out.entry.append_value(p.entry_id);
        out.index.append_value(p.batch_index);
        out.value.append_option(self.value(i));
        out.chunks.append_option(self.chunks(i));
        out.note.append_option(self.note(i));
    }
}

/// Folds rows shuffled by `(partition, key)` and sorted by `(partition, key,
/// ledger_id, entry_id, batch_index, kind)` with a strategy, one key at a
/// time, into plan rows; plan rows pass through.
pub struct StrategicFold<S: Strategy> {
    opts: CompactOptions,
    strategy: S,
    current: Option<(i32, Box<str>)>,
    last: Option<(Position, i32)>,
    keys: Keys,
    readers: HashMap<Box<str>, MessageReader, RandomState>,
    stats: StrategicStats,
}

impl<S: Strategy> StrategicFold<S> {
    pub fn new(opts: CompactOptions, strategy: S) -> Result<Self> {
        if opts.order != Order::Publish {
            return Err(EntryError::Input(
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
                EntryError::Input(format!("row {i} of kind {kind} has a null key"))
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
                    return Err(EntryError::Input(format!(
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
                        EntryError::Input(format!("chunk row {position} has no entry bytes"))
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
                    return Err(EntryError::Input(format!("unknown row kind {other}")));
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
    fn flush(&mut self, out: &mut RowBuilder) {
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

/// Phase two over entries joined with their plans: `ledger_id`, `entry_id`,
/// `partition`, `data`, `note` (the entry is kept whole with it) and `slots`
/// (a list of `(batch_index, value)` structs, `value` a merged value or null).
/// Returns the compacted entries with a `partition` column.
pub fn rebuild(batch: &RecordBatch, opts: &CompactOptions) -> Result<Vec<RecordBatch>> {
    let rows = EntryRows::new(batch)?;
    let note = column(batch, "note", &DataType::Utf8)?;
    let note = note.as_string::<i32>();
    let slots = batch
        .column_by_name("slots")
        .ok_or_else(|| EntryError::Input("input has no `slots` column".into()))?;
    let slots = SlotLists::new(slots)?;
    let mut decompressor = Decompressor::default();
    let mut out = Output::new(true);
    for i in 0..rows.len() {
        if rows.id_is_null(i) {
            return Err(EntryError::Input(format!(
                "entry row {i} has a null ledger_id or entry_id"
            )));
        }
        let id = rows.id(i);
        let key = (id.partition, id.ledger_id, id.entry_id);
        let data = rows.data(i);
        if !note.is_null(i) {
            out.push(key, data, Some(note.value(i)));
            continue;
        }
        let Some(data) = data else { continue };
        let mut plan = slots.get(i)?;
        plan.sort_by_key(|s| s.0);
        plan.dedup_by_key(|s| s.0);
        if plan.is_empty() {
            continue;
        }
        match write_entry(&mut decompressor, data, &plan, opts) {
            Ok(Some(bytes)) => out.push(key, Some(bytes.as_deref().unwrap_or(data)), None),
            Ok(None) => {}
            Err(e) => out.push(key, Some(data), Some(&e.to_string())),
        }
    }
    Ok(out.finish())
}

/// Schema of [`rebuild`]'s output.
pub fn rebuild_schema() -> SchemaRef {
    output_schema(true)
}

/// A `slots` column: list (or large list) of `(batch_index, value)` structs.
enum SlotLists<'a> {
    Small(&'a GenericListArray<i32>),
    Large(&'a GenericListArray<i64>),
    Null,
}

impl<'a> SlotLists<'a> {
    fn new(col: &'a ArrayRef) -> Result<Self> {
        match col.data_type() {
            DataType::List(_) => Ok(SlotLists::Small(col.as_list::<i32>())),
            DataType::LargeList(_) => Ok(SlotLists::Large(col.as_list::<i64>())),
            DataType::Null => Ok(SlotLists::Null),
            other => Err(EntryError::Input(format!(
                "`slots` must be a list of (batch_index, value) structs, not {other}"
            ))),
        }
    }

    fn get(&self, i: usize) -> Result<Vec<Slot>> {
        match self {
            SlotLists::Small(l) => slots_of(*l, i),
            SlotLists::Large(l) => slots_of(*l, i),
            SlotLists::Null => Ok(Vec::new()),
        }
    }
}

fn slots_of<O: OffsetSizeTrait>(list: &GenericListArray<O>, i: usize) -> Result<Vec<Slot>> {
    if list.is_null(i) {
        return Ok(Vec::new());
    }
    let items = list.value(i);
    let items: &StructArray = items
        .as_struct_opt()
        .ok_or_else(|| EntryError::Input("`slots` items must be structs".into()))?;
    let field = |name: &str, to: &DataType| -> Result<ArrayRef> {
        let col = items
            .column_by_name(name)
            .ok_or_else(|| EntryError::Input(format!("`slots` items have no `{name}`")))?;
        arrow_cast::cast(col, to).map_err(|e| EntryError::Input(format!("`slots.{name}`: {e}")))
    };
    let index = field("batch_index", &DataType::Int32)?;
    let index = index.as_primitive::<Int32Type>();
    let value = field("value", &DataType::Binary)?;
    let value = value.as_binary::<i32>();
    Ok((0..items.len())
        .filter(|&j| !index.is_null(j))
        .map(|j| {
            let v = (!value.is_null(j)).then(|| value.value(j).to_vec());
            (index.value(j), v)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::strategic::StrategicCompactor;
    use crate::compaction::strategy::{FirstWins, LatestWins};
    use arrow_array::{BinaryArray, Int64Array};

    #[test]
    fn row_positions_round_trip() {
        let ps = vec![Position::new(1, 2, -1), Position::new(-1, i64::MAX, -1)];
        assert_eq!(unpack_positions(&pack_positions(&ps)).unwrap(), ps);
        assert!(unpack_positions(&[0; 15]).is_err());
    }

    #[test]
    fn event_time_order_is_refused() {
        let opts = CompactOptions {
            order: Order::EventTime,
            ..Default::default()
        };
        assert!(PartitionPass::new(opts).is_err());
        assert!(StrategicFold::new(opts, LatestWins).is_err());
        // The in-process compactor refuses it too.
        assert!(StrategicCompactor::new(opts, FirstWins).is_err());
    }

    #[test]
    fn null_data_is_a_whole_plan() {
        let batch = RecordBatch::try_from_iter(vec![
            ("ledger_id", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
            ("entry_id", Arc::new(Int64Array::from(vec![0])) as ArrayRef),
            (
                "data",
                Arc::new(BinaryArray::from(vec![None::<&[u8]>])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut pass = PartitionPass::new(CompactOptions::default()).unwrap();
        let rows = pass.push(&batch).unwrap();
        let cols = RowColumns::new(&rows).unwrap();
        assert_eq!(rows.num_rows(), 1);
        assert_eq!(cols.kind(0), KIND_PLAN);
        assert_eq!(cols.note(0), Some("entry data is null"));
    }
}
