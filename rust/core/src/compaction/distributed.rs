//! Building blocks for running compaction on a distributed engine (Spark),
//! with results identical to the in-process [`Compactor`](super::compactor::Compactor):
//!
//! 1. [`candidates`]: entries → one row per message phase one cares about
//!    (keyed messages; key-less ones only when retained; one row per entry
//!    that must be kept whole because it cannot be read). Runs per batch.
//! 2. [`SurvivorFolder`]: candidate rows sorted by `(partition, key,
//!    ledger_id, entry_id, batch_index)` → the surviving positions, folding
//!    each key's run with the in-process [`KeyState`]. Needs the rows of one
//!    key together (after a shuffle by key); memory is one key's state.
//! 3. [`rebuild`]: entries joined with their retained batch indexes →
//!    compacted entries (phase two). Runs per batch.
//!
//! With publishing order the survivor of a key is simply its candidate with
//! the greatest position, unless that candidate is a tombstone (and, for a
//! chunked message, all of its chunks): an engine may use its own aggregation
//! (`max_by`) for keys without chunks. Event-time order is not an aggregate
//! (a tombstone resets the key), hence the fold.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::entries::{int_column, EntryRows};
use crate::error::{EntryError, Result};
use crate::format::compression::Decompressor;
use crate::format::frame::EntryView;

use super::compactor::{output_schema, rewrite_entry, Output};
use super::keys::{KeyState, Observation};
use super::scan::{is_kafka_entry, scan_entry, ChunkInfo, EntryKind, KAFKA_KEPT};
use super::{CompactOptions, Order, Position};

/// Schema of [`candidates`].
pub fn candidate_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("key", DataType::Utf8, true),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
        Field::new("tombstone", DataType::Boolean, false),
        Field::new("event_time", DataType::Int64, false),
        Field::new("batched", DataType::Boolean, false),
        Field::new("uuid", DataType::Utf8, true),
        Field::new("chunk_id", DataType::Int32, true),
        Field::new("num_chunks", DataType::Int32, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

/// Schema of the survivor rows.
pub fn survivor_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
    ]))
}

#[derive(Default)]
struct CandidateColumns {
    partition: Int32Builder,
    key: StringBuilder,
    ledger: Int64Builder,
    entry: Int64Builder,
    index: Int32Builder,
    tombstone: BooleanBuilder,
    event_time: Int64Builder,
    batched: BooleanBuilder,
    uuid: StringBuilder,
    chunk_id: Int32Builder,
    num_chunks: Int32Builder,
    error: StringBuilder,
}

impl CandidateColumns {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        id: (i32, i64, i64),
        key: Option<&str>,
        index: i32,
        tombstone: bool,
        event_time: u64,
        batched: bool,
        chunk: Option<ChunkInfo<'_>>,
        error: Option<&str>,
    ) {
        self.partition.append_value(id.0);
        self.key.append_option(key);
        self.ledger.append_value(id.1);
        self.entry.append_value(id.2);
        self.index.append_value(index);
        self.tombstone.append_value(tombstone);
        self.event_time.append_value(event_time as i64);
        self.batched.append_value(batched);
        self.uuid.append_option(chunk.map(|c| c.uuid));
        self.chunk_id.append_option(chunk.map(|c| c.chunk_id));
        self.num_chunks.append_option(chunk.map(|c| c.num_chunks));
        self.error.append_option(error);
    }

    fn finish(mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.partition.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.index.finish()),
            Arc::new(self.tombstone.finish()),
            Arc::new(self.event_time.finish()),
            Arc::new(self.batched.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.chunk_id.finish()),
            Arc::new(self.num_chunks.finish()),
            Arc::new(self.error.finish()),
        ];
        RecordBatch::try_new(candidate_schema(), columns).expect("columns match the schema")
    }
}

/// One candidate row, owned.
struct Row {
    id: (i32, i64, i64),
    key: Option<String>,
    index: i32,
    tombstone: bool,
    event_time: u64,
    batched: bool,
    chunk: Option<(String, i32, i32)>,
    error: Option<String>,
}

/// Phase one's candidate rows for one batch of entries. A row with a null
/// `key` is a survivor by itself: a retained key-less message, or (with
/// `error` set) an entry that will be kept whole.
///
/// With `reduce` (publishing order only), each key keeps only its last
/// candidate of the batch that is not a chunk, and every chunk: in
/// publishing order a later message of a key always overrides an earlier
/// one, so the others can never survive. This shrinks what a distributed
/// engine shuffles without changing the result, whatever rows the batch
/// holds.
///
/// Messages of `aborted` transactions (`(most, least)` id bits) give no
/// candidate, as the broker's compactor never receives them.
pub fn candidates(
    batch: &RecordBatch,
    opts: &CompactOptions,
    reduce: bool,
    aborted: &HashSet<(u64, u64)>,
) -> Result<RecordBatch> {
    if reduce && opts.order != Order::Publish {
        return Err(EntryError::Options(
            "candidates can only be reduced in publishing order".into(),
        ));
    }
    let rows = EntryRows::new(batch)?;
    let mut found: Vec<Row> = Vec::new();
    let mut decompressor = Decompressor::default();
    for i in 0..rows.len() {
        if rows.id_is_null(i) {
            return Err(EntryError::Schema(format!(
                "entry row {i} has a null ledger_id or entry_id; compaction needs every entry's position"
            )));
        }
        let e = rows.id(i);
        let id = (e.partition, e.ledger_id, e.entry_id);
        let whole = |error: String| Row {
            id,
            key: None,
            index: -1,
            tombstone: false,
            event_time: 0,
            batched: false,
            chunk: None,
            error: Some(error),
        };
        let Some(data) = rows.data(i) else {
            found.push(whole("entry data is null".into()));
            continue;
        };
        let mut pending = Vec::new();
        let result = scan_entry(&mut decompressor, data, opts, &mut |c| {
            if c.txn.is_some_and(|t| aborted.contains(&t)) {
                return;
            }
            if c.key.is_some() || opts.retain_null_key {
                pending.push(Row {
                    id,
                    key: c.key.map(str::to_owned),
                    index: c.batch_index,
                    tombstone: c.tombstone,
                    event_time: c.event_time,
                    batched: c.batched,
                    chunk: c
                        .chunk
                        .map(|k| (k.uuid.to_owned(), k.chunk_id, k.num_chunks)),
                    error: None,
                });
            }
        });
        match result {
            Ok(EntryKind::Marker) => {}
            Ok(EntryKind::Kafka) => found.push(whole(KAFKA_KEPT.into())),
            Ok(_) => found.append(&mut pending),
            Err(err) => found.push(whole(err.to_string())),
        }
    }
    let keep: Vec<bool> = if reduce {
        let mut last: HashMap<(i32, &str), (Position, usize)> = HashMap::new();
        for (n, r) in found.iter().enumerate() {
            if let (Some(k), None) = (&r.key, &r.chunk) {
                let p = Position::new(r.id.1, r.id.2, r.index);
                let slot = last.entry((r.id.0, k.as_str())).or_insert((p, n));
                if p >= slot.0 {
                    *slot = (p, n);
                }
            }
        }
        let mut keep = vec![false; found.len()];
        for r in found.iter().enumerate() {
            keep[r.0] = r.1.key.is_none() || r.1.chunk.is_some();
        }
        for (_, n) in last.values() {
            keep[*n] = true;
        }
        keep
    } else {
        vec![true; found.len()]
    };
    let mut out = CandidateColumns::default();
    for (r, _) in found.iter().zip(&keep).filter(|(_, k)| **k) {
        let chunk = r
            .chunk
            .as_ref()
            .map(|(uuid, chunk_id, num_chunks)| ChunkInfo {
                uuid,
                chunk_id: *chunk_id,
                num_chunks: *num_chunks,
            });
        out.push(
            r.id,
            r.key.as_deref(),
            r.index,
            r.tombstone,
            r.event_time,
            r.batched,
            chunk,
            r.error.as_deref(),
        );
    }
    Ok(out.finish())
}

#[derive(Default)]
struct SurvivorColumns {
    partition: Int32Builder,
    ledger: Int64Builder,
    entry: Int64Builder,
    index: Int32Builder,
}

impl SurvivorColumns {
    fn push(&mut self, partition: i32, p: Position) {
        self.partition.append_value(partition);
        self.ledger.append_value(p.ledger_id);
        self.entry.append_value(p.entry_id);
        self.index.append_value(p.batch_index);
    }

    fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.partition.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.index.finish()),
        ];
        RecordBatch::try_new(survivor_schema(), columns).expect("columns match the schema")
    }
}

/// Folds candidate rows sorted by `(partition, key, position)` into survivor
/// rows, one key at a time. Rows with a null key pass straight through.
pub struct SurvivorFolder {
    order: Order,
    current: Option<(i32, String)>,
    last: Option<Position>,
    state: KeyState,
    out: SurvivorColumns,
}

impl SurvivorFolder {
    pub fn new(order: Order) -> Self {
        SurvivorFolder {
            order,
            current: None,
            last: None,
            state: KeyState::default(),
            out: SurvivorColumns::default(),
        }
    }

    fn flush_key(&mut self) {
        if let Some((partition, _)) = &self.current {
            for p in self.state.retained() {
                self.out.push(*partition, p);
            }
        }
        self.state = KeyState::default();
        self.last = None;
    }

    /// Folds one sorted batch of candidate rows; returns the survivors of the
    /// keys it completed (the last key stays open for the next batch).
    pub fn push(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let col = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| EntryError::Schema(format!("candidates have no `{name}` column")))
        };
        let partition = int_column(batch, "partition", &DataType::Int32)?;
        let partition = partition.as_primitive::<Int32Type>();
        let key = arrow_cast::cast(col("key")?, &DataType::Utf8)
            .map_err(|e| EntryError::Schema(format!("`key`: {e}")))?;
        let key = key.as_string::<i32>();
        let ledger = int_column(batch, "ledger_id", &DataType::Int64)?;
        let ledger = ledger.as_primitive::<Int64Type>();
        let entry = int_column(batch, "entry_id", &DataType::Int64)?;
        let entry = entry.as_primitive::<Int64Type>();
        let index = int_column(batch, "batch_index", &DataType::Int32)?;
        let index = index.as_primitive::<Int32Type>();
        let tombstone = col("tombstone")?
            .as_boolean_opt()
            .ok_or_else(|| EntryError::Schema("`tombstone` must be a boolean column".into()))?;
        let batched = col("batched")?
            .as_boolean_opt()
            .ok_or_else(|| EntryError::Schema("`batched` must be a boolean column".into()))?;
        let event_time = int_column(batch, "event_time", &DataType::Int64)?;
        let event_time = event_time.as_primitive::<Int64Type>();
        let uuid = arrow_cast::cast(col("uuid")?, &DataType::Utf8)
            .map_err(|e| EntryError::Schema(format!("`uuid`: {e}")))?;
        let uuid = uuid.as_string::<i32>();
        let chunk_id = int_column(batch, "chunk_id", &DataType::Int32)?;
        let chunk_id = chunk_id.as_primitive::<Int32Type>();
        let num_chunks = int_column(batch, "num_chunks", &DataType::Int32)?;
        let num_chunks = num_chunks.as_primitive::<Int32Type>();
        for i in 0..batch.num_rows() {
            let position = Position::new(ledger.value(i), entry.value(i), index.value(i));
            let p = partition.value(i);
            if key.is_null(i) {
                self.out.push(p, position);
                continue;
            }
            let k = key.value(i);
            let same = matches!(&self.current, Some((cp, ck)) if *cp == p && ck == k);
            if !same {
                if let Some((cp, ck)) = &self.current {
                    if (p, k) < (*cp, ck.as_str()) {
                        return Err(EntryError::Order(format!(
                            "candidates are not sorted by partition and key: {k:?} (partition {p}) after {ck:?} (partition {cp})"
                        )));
                    }
                }
                self.flush_key();
                self.current = Some((p, k.to_owned()));
            }
            if self.last.is_some_and(|last| position <= last) {
                return Err(EntryError::Order(format!(
                    "candidates of key {k:?} are not sorted by position: {position} after {}",
                    self.last.unwrap()
                )));
            }
            self.last = Some(position);
            let chunk = (!uuid.is_null(i) && !chunk_id.is_null(i)).then(|| ChunkInfo {
                uuid: uuid.value(i),
                chunk_id: chunk_id.value(i),
                num_chunks: if num_chunks.is_null(i) {
                    0
                } else {
                    num_chunks.value(i)
                },
            });
            self.state.observe(
                &Observation {
                    position,
                    tombstone: tombstone.value(i),
                    event_time: event_time.value(i) as u64,
                    batched: batched.value(i),
                    chunk,
                },
                self.order,
            );
        }
        Ok(self.out.finish())
    }

    /// Survivors of the last key.
    pub fn finish(&mut self) -> RecordBatch {
        self.flush_key();
        self.current = None;
        self.out.finish()
    }
}

/// Phase two for entries carrying their retained batch indexes in a list
/// column `retained` (int32 or int64 items; −1 for a non-batched entry).
pub fn rebuild(batch: &RecordBatch, opts: &CompactOptions) -> Result<Vec<RecordBatch>> {
    let rows = EntryRows::new(batch)?;
    let retained = batch
        .column_by_name("retained")
        .ok_or_else(|| EntryError::Schema("input has no `retained` column".into()))?;
    let retained = match retained.data_type() {
        DataType::List(_) => arrow_cast::cast(
            retained,
            &DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
        ),
        DataType::LargeList(_) => arrow_cast::cast(
            retained,
            &DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
        ),
        other => {
            return Err(EntryError::Schema(format!(
                "`retained` must be a list of batch indexes, not {other}"
            )))
        }
    }
    .map_err(|e| EntryError::Schema(format!("`retained`: {e}")))?;
    let retained = retained.as_list::<i32>();
    let mut out = Output::new(rows.has_partition());
    let mut decompressor = Decompressor::default();
    for i in 0..rows.len() {
        let e = rows.id(i);
        let key = (e.partition, e.ledger_id, e.entry_id);
        let Some(data) = rows.data(i) else {
            out.push(key, None, Some("entry data is null"));
            continue;
        };
        let mut list: Vec<i32> = if retained.is_null(i) {
            Vec::new()
        } else {
            let v = retained.value(i);
            let v = v.as_primitive::<Int32Type>();
            v.iter().flatten().collect()
        };
        list.sort_unstable();
        list.dedup();
        // A KoP entry is kept whole with the same words as in process.
        if EntryView::parse(data, opts.verify_checksum).is_ok_and(|v| is_kafka_entry(&v.metadata)) {
            out.push(key, Some(data), Some(KAFKA_KEPT));
            continue;
        }
        let r = rewrite_entry(&mut decompressor, data, &list, opts);
        out.push_rewritten(key, data, r.map(|k| k.map(|(b, _)| b)));
    }
    Ok(out.finish())
}

/// Schema of [`rebuild`]'s output.
pub fn rebuilt_schema(with_partition: bool) -> SchemaRef {
    output_schema(with_partition)
}
