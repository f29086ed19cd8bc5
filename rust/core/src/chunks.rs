//! Chunked-message reassembly over decoded rows (spec
//! chunks-processors-offload.md §1.3), robust to what real topics hold:
//! duplicated, resent, interleaved and orphaned chunks.
//!
//! The input is the decode output (one row per entry for chunks, in topic
//! order). Chunk rows are grouped by `(partition, uuid)`; each whole message
//! becomes one row, and nothing is lost: every chunk row ends up in exactly
//! one output row's `chunk_ledger_ids` / `chunk_entry_ids`.
//!
//! | input | outcome (`status`) |
//! |---|---|
//! | chunk 0 … N−1 in order | `complete`: payload concatenated, decompressed once with the last chunk's codec and `uncompressed_size` |
//! | `chunk_id` ≤ the last one held | `duplicate`: one row for the ignored chunk; the message continues |
//! | a new chunk 0 for a pending uuid | the pending message is `incomplete`; a new one starts |
//! | a gap, or a chunk of an unknown uuid | `incomplete`: the message can no longer complete; its later chunks join it until its last chunk, a new chunk 0, expiry or the end |
//! | pending longer than `expire_after_ms` of stream time | `expired` |
//! | more than `max_pending` messages pending | the oldest is `evicted` |
//! | pending at the end of the input | `incomplete` |
//!
//! Stream time is the largest `publish_time` seen so far in the partition
//! (every chunk of a message carries the same publish time, so the clock must
//! come from the stream). Unlike Java, which stops its expiry walk at the first
//! live context, every context past its deadline expires: decisions then depend
//! only on one uuid's own chunks plus the stream clock, which is what lets
//! [`reassemble_partition`] and [`finish_leftovers`] reproduce the in-process
//! result on a partitioned input. Eviction is FIFO by start, so a message's
//! fate depends only on messages that started after it; the partition pass is
//! therefore exact for messages that start and end in its partition.
//!
//! Memory: at most `max_pending` live messages hold bytes, each at most
//! `max_message_size` (checked on chunk 0's `total_chunk_msg_size` before any
//! buffer is allocated). Incomplete messages keep chunk ids only, at most
//! [`ORPHAN_LIMIT`] of them per partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array,
    RecordBatch, StringArray, UInt32Array,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::concat::concat_batches;
use arrow_select::interleave::interleave;
use arrow_select::take::take_record_batch;

use crate::error::{EntryError, Result};
use crate::format::compression::{Codec, Decompressor, DEFAULT_MAX_UNCOMPRESSED_SIZE};

pub const STATUS_COMPLETE: &str = "complete";
pub const STATUS_INCOMPLETE: &str = "incomplete";
pub const STATUS_EXPIRED: &str = "expired";
pub const STATUS_EVICTED: &str = "evicted";
pub const STATUS_DUPLICATE: &str = "duplicate";

/// Incomplete messages (chunk ids only, no bytes) kept open per partition;
/// past it the oldest is reported early.
pub const ORPHAN_LIMIT: usize = 10_000;
/// Chunks one incomplete message may collect before it is reported.
const ORPHAN_CHUNK_LIMIT: usize = 1 << 16;

/// Columns [`reassemble_partition`] adds to the leftover rows.
pub const WATERMARK_COLUMN: &str = "_watermark";
pub const ROLE_COLUMN: &str = "_role";
const ROLE_CHUNK: &str = "chunk";
const ROLE_RESTART: &str = "restart";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyOptions {
    /// Live messages kept at once; `None` = unlimited. Pulsar's consumer
    /// default is 10, but a consumer gets evicted chunks redelivered, while an
    /// offline reader would lose them: the default is larger.
    pub max_pending: Option<usize>,
    /// Stream time (ms) after which a pending message expires; `None` = never.
    pub expire_after_ms: Option<i64>,
    /// Bound on `total_chunk_msg_size` and on the decompressed message.
    pub max_message_size: usize,
}

impl Default for ReassemblyOptions {
    fn default() -> Self {
        ReassemblyOptions {
            max_pending: Some(100),
            expire_after_ms: Some(60_000),
            max_message_size: DEFAULT_MAX_UNCOMPRESSED_SIZE,
        }
    }
}

impl ReassemblyOptions {
    fn validate(&self) -> Result<()> {
        if self.max_pending == Some(0) {
            return Err(EntryError::Input(
                "max_pending must be at least 1 (None means unlimited)".into(),
            ));
        }
        if self.expire_after_ms.is_some_and(|e| e < 0) {
            return Err(EntryError::Input(
                "expire_after_ms must not be negative (None means never)".into(),
            ));
        }
        Ok(())
    }
}

/// The columns reassembly adds to its input's.
fn added_fields() -> Vec<Field> {
    let list = || DataType::List(Arc::new(Field::new("item", DataType::Int64, true)));
    vec![
        Field::new("first_chunk_ledger_id", DataType::Int64, true),
        Field::new("first_chunk_entry_id", DataType::Int64, true),
        Field::new("status", DataType::Utf8, true),
        Field::new("chunk_ledger_ids", list(), true),
        Field::new("chunk_entry_ids", list(), true),
    ]
}

/// The output schema for a decoded input schema.
pub fn output_schema(input: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(added_fields());
    Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
}

const REQUIRED: [&str; 11] = [
    "ledger_id",
    "entry_id",
    "publish_time",
    "uuid",
    "chunk_id",
    "num_chunks",
    "total_chunk_size",
    "value",
    "compression",
    "uncompressed_size",
    "error",
];

fn check_input_schema(schema: &Schema) -> Result<()> {
    for name in REQUIRED {
        if schema.column_with_name(name).is_none() {
            return Err(EntryError::Input(format!(
                "input has no `{name}` column: reassembly reads the output of decode()"
            )));
        }
    }
    for f in added_fields() {
        if schema.column_with_name(f.name()).is_some() {
            return Err(EntryError::Input(format!(
                "input already has a `{}` column: it is already reassembled",
                f.name()
            )));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- column access

enum Values<'a> {
    Binary(&'a BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
    View(&'a arrow_array::BinaryViewArray),
}

impl Values<'_> {
    fn get(&self, i: usize) -> &[u8] {
        // A null value (null_value flag) on a chunk still stands for its bytes: none.
        match self {
            Values::Binary(a) if a.is_valid(i) => a.value(i),
            Values::Large(a) if a.is_valid(i) => a.value(i),
            Values::View(a) if a.is_valid(i) => a.value(i),
            _ => &[],
        }
    }
}

fn cast_to(batch: &RecordBatch, name: &str, to: &DataType) -> Result<Option<ArrayRef>> {
    let Some(col) = batch.column_by_name(name) else {
        return Ok(None);
    };
    if col.data_type() == to {
        return Ok(Some(col.clone()));
    }
    arrow_cast::cast(col, to)
        .map(Some)
        .map_err(|e| EntryError::Input(format!("column `{name}`: {e}")))
}

fn need(col: Option<ArrayRef>, name: &str) -> Result<ArrayRef> {
    col.ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))
}

/// The input columns reassembly reads, in uniform types.
struct Cols {
    ledger: Int64Array,
    entry: Int64Array,
    partition: Option<Int32Array>,
    publish: Int64Array,
    /// Stream time source: `publish_time`, or `_watermark` for leftovers.
    time: Int64Array,
    uuid: StringArray,
    chunk_id: Int32Array,
    num_chunks: Int32Array,
    total: Int32Array,
    value: ArrayRef,
    compression: StringArray,
    uncompressed: Int64Array,
    error: ArrayRef,
    encrypted: Option<BooleanArray>,
    broker_ts: Option<Int64Array>,
    broker_index: Option<Int64Array>,
    role: Option<StringArray>,
}

impl Cols {
    fn read(batch: &RecordBatch, time_column: &str) -> Result<Cols> {
        let i64s = |name: &str| -> Result<Option<Int64Array>> {
            Ok(cast_to(batch, name, &DataType::Int64)?
                .map(|a| a.as_primitive::<Int64Type>().clone()))
        };
        let i32s = |name: &str| -> Result<Option<Int32Array>> {
            Ok(cast_to(batch, name, &DataType::Int32)?
                .map(|a| a.as_primitive::<Int32Type>().clone()))
        };
        let strs = |name: &str| -> Result<Option<StringArray>> {
            Ok(cast_to(batch, name, &DataType::Utf8)?.map(|a| a.as_string::<i32>().clone()))
        };
        let value = need(batch.column_by_name("value").cloned(), "value")?;
        if !matches!(
            value.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ) {
            return Err(EntryError::Input(format!(
                "`value` must be binary, large_binary or binary_view, not {}",
                value.data_type()
            )));
        }
        let req_i64 = |name: &str| {
            i64s(name)?.ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))
        };
        let req_i32 = |name: &str| {
            i32s(name)?.ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))
        };
        let req_str = |name: &str| {
            strs(name)?.ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))
        };
        Ok(Cols {
            ledger: req_i64("ledger_id")?,
            entry: req_i64("entry_id")?,
            partition: i32s("partition")?,
            publish: req_i64("publish_time")?,
            time: req_i64(time_column)?,
            uuid: req_str("uuid")?,
            chunk_id: req_i32("chunk_id")?,
            num_chunks: req_i32("num_chunks")?,
            total: req_i32("total_chunk_size")?,
            value,
            compression: req_str("compression")?,
            uncompressed: req_i64("uncompressed_size")?,
            error: need(batch.column_by_name("error").cloned(), "error")?,
            encrypted: cast_to(batch, "encrypted", &DataType::Boolean)?
                .map(|a| a.as_boolean().clone()),
            broker_ts: i64s("broker_timestamp")?,
            broker_index: i64s("broker_index")?,
            role: strs(ROLE_COLUMN)?,
        })
    }

    fn values(&self) -> Values<'_> {
        match self.value.data_type() {
            DataType::Binary => Values::Binary(self.value.as_binary::<i32>()),
            DataType::LargeBinary => Values::Large(self.value.as_binary::<i64>()),
            _ => Values::View(self.value.as_binary_view()),
        }
    }

    fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
        a.is_valid(i).then(|| a.value(i))
    }

    /// A row is a chunk when decode marked it as one and it carries no error.
    fn is_chunk(&self, i: usize) -> bool {
        self.error.is_null(i)
            && self.uuid.is_valid(i)
            && self.chunk_id.is_valid(i)
            && self.num_chunks.is_valid(i)
            && self.num_chunks.value(i) > 1
    }

    fn partition(&self, i: usize) -> i32 {
        self.partition
            .as_ref()
            .filter(|p| p.is_valid(i))
            .map_or(-1, |p| p.value(i))
    }
}

// ---------------------------------------------------------------- state

/// One chunk a message holds.
#[derive(Clone)]
struct Held {
    ledger: i64,
    entry: i64,
    chunk_id: i32,
    /// Stream time when it was read (exported with leftovers).
    watermark: i64,
    /// The whole input row, kept only by the partition pass (for export).
    row: Option<RecordBatch>,
}

enum Bytes {
    Buffer(Vec<u8>),
    /// No bytes are kept; the message can still complete, with this error.
    Failed(String),
}

enum Kind {
    Live(Bytes),
    /// Can no longer complete; collects the uuid's chunks until it closes.
    Orphan(String),
}

struct Ctx {
    seq: u64,
    uuid: String,
    kind: Kind,
    /// The first held chunk's row, value nulled: the outcome row's metadata.
    template: RecordBatch,
    deadline: Option<i64>,
    num_chunks: i32,
    total: Option<i32>,
    last_chunk_id: i32,
    held: Vec<Held>,
    last_compression: Option<String>,
    last_uncompressed: Option<i64>,
    last_broker_ts: Option<i64>,
    last_broker_index: Option<i64>,
    encrypted: bool,
    /// Partition pass: chunk 0 arrived with no local state, so it may close an
    /// earlier partition's message with the same uuid; exported as a restart
    /// marker when this message is decided locally.
    marker: Option<Held>,
}

/// `0..3` for a contiguous run, else the list.
fn describe_ids(ids: &[i32]) -> String {
    let contiguous = ids.windows(2).all(|w| w[1] == w[0] + 1);
    match ids {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if contiguous => format!("{first}..={last}"),
        _ => format!("{ids:?}"),
    }
}

#[derive(Default)]
struct Part {
    ctxs: HashMap<String, Ctx>,
    live: BTreeMap<u64, String>,
    orphans: BTreeMap<u64, String>,
    deadlines: BTreeMap<(i64, u64), String>,
    /// Partition pass: uuids whose chunks continue an earlier partition's message.
    deferred: std::collections::HashSet<String>,
    watermark: Option<i64>,
}

impl Part {
    fn remove(&mut self, uuid: &str) -> Option<Ctx> {
        let ctx = self.ctxs.remove(uuid)?;
        self.live.remove(&ctx.seq);
        self.orphans.remove(&ctx.seq);
        if let Some(d) = ctx.deadline {
            self.deadlines.remove(&(d, ctx.seq));
        }
        Some(ctx)
    }
}

/// A decided message, turned into an output row.
struct Outcome {
    status: &'static str,
    template: RecordBatch,
    held: Vec<(i64, i64)>,
    value: Option<Vec<u8>>,
    error: Option<String>,
    broker_ts: Option<i64>,
    broker_index: Option<i64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    InProcess,
    Partition,
    Finish,
}

enum Event {
    Row(usize),
    Outcome(usize),
}

/// What one step produced.
#[derive(Default)]
struct Sink {
    outcomes: Vec<Outcome>,
    events: Vec<Event>,
    /// Partition pass: rows handed on, with their role.
    leftovers: Vec<(RecordBatch, i64, &'static str)>,
}

impl Sink {
    fn emit(&mut self, o: Outcome) {
        self.events.push(Event::Outcome(self.outcomes.len()));
        self.outcomes.push(o);
    }
}

/// Fields of the chunk row being processed.
struct Chunk<'a> {
    partition: i32,
    uuid: &'a str,
    chunk_id: i32,
    num_chunks: i32,
    total: Option<i32>,
    ledger: i64,
    entry: i64,
    publish_time: Option<i64>,
    value: &'a [u8],
    compression: Option<&'a str>,
    uncompressed: Option<i64>,
    encrypted: bool,
    broker_ts: Option<i64>,
    broker_index: Option<i64>,
    restart_marker: bool,
}

struct Machine {
    opts: ReassemblyOptions,
    mode: Mode,
    parts: HashMap<i32, Part>,
    next_seq: u64,
    decompressor: Decompressor,
    /// Partition pass: stream time before this partition, per topic partition.
    seeds: HashMap<i32, i64>,
}

/// One row copied out of its batch.
fn copy_row(batch: &RecordBatch, row: usize) -> Result<RecordBatch> {
    take_record_batch(batch, &UInt32Array::from(vec![row as u32])).map_err(arrow_err)
}

/// A row's metadata, value nulled first so only the small columns are copied:
/// it outlives its batch without keeping the batch's buffers alive.
fn template_of(batch: &RecordBatch, row: usize) -> Result<RecordBatch> {
    copy_row(&null_value(&batch.slice(row, 1))?, 0)
}

/// A row with its value nulled: outcome templates and restart markers keep
/// metadata, never payload.
fn null_value(one: &RecordBatch) -> Result<RecordBatch> {
    let schema = one.schema();
    let (idx, field) = schema
        .column_with_name("value")
        .ok_or_else(|| EntryError::Input("input has no `value` column".into()))?;
    let mut cols = one.columns().to_vec();
    cols[idx] = new_null_array(field.data_type(), one.num_rows());
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// Reports a message that will not complete.
fn close(ctx: Ctx, status: &'static str, why: &str, sink: &mut Sink) {
    let ids: Vec<i32> = ctx.held.iter().map(|h| h.chunk_id).collect();
    let what = match &ctx.kind {
        Kind::Orphan(reason) => format!("{reason}; reported when {why}"),
        Kind::Live(_) => why.to_owned(),
    };
    let error = format!(
        "{status} chunked message {}: holds chunks {} of {}; {what}",
        ctx.uuid,
        describe_ids(&ids),
        ctx.num_chunks
    );
    if let Some(Held {
        row: Some(row),
        watermark,
        ..
    }) = ctx.marker
    {
        sink.leftovers.push((row, watermark, ROLE_RESTART));
    }
    sink.emit(Outcome {
        status,
        template: ctx.template,
        held: ctx.held.iter().map(|h| (h.ledger, h.entry)).collect(),
        value: None,
        error: Some(error),
        broker_ts: ctx.last_broker_ts,
        broker_index: ctx.last_broker_index,
    });
}

/// Builds a whole message from a context holding chunks 0..N−1.
fn complete(d: &mut Decompressor, max_size: usize, mut ctx: Ctx, sink: &mut Sink) {
    if let Some(Held {
        row: Some(row),
        watermark,
        ..
    }) = &ctx.marker
    {
        sink.leftovers.push((row.clone(), *watermark, ROLE_RESTART));
    }
    let n = ctx.held.len();
    let kind = std::mem::replace(&mut ctx.kind, Kind::Live(Bytes::Failed(String::new())));
    let result = match kind {
        _ if ctx.encrypted => Err(format!(
            "it is encrypted: its {n} chunks are encrypted one by one and cannot be joined without decrypting"
        )),
        Kind::Live(Bytes::Failed(reason)) => Err(reason),
        Kind::Live(Bytes::Buffer(buf)) => join(d, max_size, &ctx, buf),
        Kind::Orphan(_) => unreachable!("orphans never complete"),
    };
    let (value, error) = match result {
        Ok(v) => (Some(v), None),
        Err(reason) => (
            None,
            Some(format!("chunked message {}: {reason}", ctx.uuid)),
        ),
    };
    sink.emit(Outcome {
        status: STATUS_COMPLETE,
        held: ctx.held.iter().map(|h| (h.ledger, h.entry)).collect(),
        template: ctx.template,
        value,
        error,
        broker_ts: ctx.last_broker_ts,
        broker_index: ctx.last_broker_index,
    });
}

/// The joined payload, decompressed once with the last chunk's codec and size.
fn join(d: &mut Decompressor, max_size: usize, ctx: &Ctx, buf: Vec<u8>) -> Result<Vec<u8>, String> {
    let total = ctx.total.unwrap_or(0) as usize;
    if buf.len() != total {
        return Err(format!(
            "its chunks hold {} bytes, total_chunk_msg_size is {total}",
            buf.len()
        ));
    }
    let name = ctx.last_compression.as_deref().unwrap_or("none");
    let codec: Codec = name
        .parse()
        .map_err(|_| format!("unknown compression {name:?} on its last chunk"))?;
    if codec == Codec::None {
        return Ok(buf); // the joined buffer is the message
    }
    let size = ctx
        .last_uncompressed
        .ok_or_else(|| format!("{codec} payload without uncompressed_size"))?;
    if size < 0 || size as u64 > max_size as u64 {
        return Err(format!(
            "uncompressed_size {size} exceeds the limit of {max_size} bytes"
        ));
    }
    d.decompress(codec, &buf, size as u32, max_size, 0)
        .map(<[u8]>::to_vec)
        .map_err(|e| match e {
            EntryError::Decompress { codec, reason, .. } => {
                format!("{codec} decompression of the joined payload failed: {reason}")
            }
            other => other.to_string(),
        })
}

impl Part {
    /// Expires every context whose deadline the stream clock has passed.
    fn sweep(&mut self, expire: i64, sink: &mut Sink) {
        let Some(now) = self.watermark else { return };
        while let Some((&(deadline, _), uuid)) = self.deadlines.first_key_value() {
            if deadline >= now {
                break;
            }
            let uuid = uuid.clone();
            let ctx = self.remove(&uuid).expect("deadlines index open contexts");
            // The clock's exact value depends on which row noticed; say only the rule.
            let why = format!(
                "the stream time passed its publish time {} + expire_after_ms={expire}",
                deadline - expire
            );
            let status = match ctx.kind {
                Kind::Live(_) => STATUS_EXPIRED,
                Kind::Orphan(_) => STATUS_INCOMPLETE,
            };
            close(ctx, status, &why, sink);
        }
    }

    fn insert(&mut self, ctx: Ctx) {
        if let Some(d) = ctx.deadline {
            self.deadlines.insert((d, ctx.seq), ctx.uuid.clone());
        }
        match ctx.kind {
            Kind::Live(_) => self.live.insert(ctx.seq, ctx.uuid.clone()),
            Kind::Orphan(_) => self.orphans.insert(ctx.seq, ctx.uuid.clone()),
        };
        self.ctxs.insert(ctx.uuid.clone(), ctx);
    }

    fn limit_orphans(&mut self, sink: &mut Sink) {
        while self.orphans.len() > ORPHAN_LIMIT {
            let (_, oldest) = self.orphans.pop_first().expect("non-empty");
            let ctx = self.remove(&oldest).expect("orphans index open contexts");
            let why = format!("more than {ORPHAN_LIMIT} incomplete messages were open");
            close(ctx, STATUS_INCOMPLETE, &why, sink);
        }
    }
}

impl Machine {
    fn new(opts: ReassemblyOptions, mode: Mode) -> Result<Self> {
        opts.validate()?;
        Ok(Machine {
            opts,
            mode,
            parts: HashMap::new(),
            next_seq: 0,
            decompressor: Decompressor::default(),
            seeds: HashMap::new(),
        })
    }

    /// Processes one input batch; `cols` are read from it.
    fn push(&mut self, batch: &RecordBatch, cols: &Cols, sink: &mut Sink) -> Result<()> {
        let values = cols.values();
        let expire = self.opts.expire_after_ms.unwrap_or(0);
        for i in 0..batch.num_rows() {
            let partition = cols.partition(i);
            let seed = self.seeds.get(&partition).copied();
            let part = self.parts.entry(partition).or_insert_with(|| Part {
                watermark: seed,
                ..Default::default()
            });
            if let Some(t) = Cols::opt_i64(&cols.time, i) {
                part.watermark = Some(part.watermark.map_or(t, |w| w.max(t)));
            }
            part.sweep(expire, sink);
            if !cols.is_chunk(i) {
                sink.events.push(Event::Row(i));
                continue;
            }
            let chunk = Chunk {
                partition,
                uuid: cols.uuid.value(i),
                chunk_id: cols.chunk_id.value(i),
                num_chunks: cols.num_chunks.value(i),
                total: cols.total.is_valid(i).then(|| cols.total.value(i)),
                ledger: cols.ledger.value(i),
                entry: cols.entry.value(i),
                publish_time: Cols::opt_i64(&cols.publish, i),
                value: values.get(i),
                compression: cols
                    .compression
                    .is_valid(i)
                    .then(|| cols.compression.value(i)),
                uncompressed: Cols::opt_i64(&cols.uncompressed, i),
                encrypted: cols
                    .encrypted
                    .as_ref()
                    .is_some_and(|e| e.is_valid(i) && e.value(i)),
                broker_ts: cols.broker_ts.as_ref().and_then(|a| Cols::opt_i64(a, i)),
                broker_index: cols.broker_index.as_ref().and_then(|a| Cols::opt_i64(a, i)),
                restart_marker: cols
                    .role
                    .as_ref()
                    .is_some_and(|r| r.is_valid(i) && r.value(i) == ROLE_RESTART),
            };
            self.on_chunk(&chunk, batch, i, sink)?;
        }
        Ok(())
    }

    fn on_chunk(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        sink: &mut Sink,
    ) -> Result<()> {
        let partition_pass = self.mode == Mode::Partition;
        let part = self.parts.get_mut(&c.partition).expect("created by push");
        let held = Held {
            ledger: c.ledger,
            entry: c.entry,
            chunk_id: c.chunk_id,
            watermark: part.watermark.unwrap_or(i64::MIN),
            row: if partition_pass {
                // A zero-copy slice: a partition's batches are in memory anyway.
                Some(batch.slice(row, 1))
            } else {
                None
            },
        };
        let at = format!("{}:{}", c.ledger, c.entry);
        if c.restart_marker {
            // Finishing pass: a chunk 0 decided in a later partition ends this uuid's message.
            if let Some(ctx) = part.remove(c.uuid) {
                close(
                    ctx,
                    STATUS_INCOMPLETE,
                    &format!("restarted by a new chunk 0 at {at}"),
                    sink,
                );
            }
            return Ok(());
        }
        if partition_pass && part.deferred.contains(c.uuid) {
            if c.chunk_id != 0 {
                sink.leftovers
                    .push((held.row.expect("copied"), held.watermark, ROLE_CHUNK));
                return Ok(());
            }
            part.deferred.remove(c.uuid);
        }
        let Some(ctx) = part.ctxs.get_mut(c.uuid) else {
            if c.chunk_id == 0 {
                return self.start(c, batch, row, held, true, sink);
            }
            if partition_pass {
                // May continue a message of an earlier partition: decided later.
                part.deferred.insert(c.uuid.to_owned());
                sink.leftovers
                    .push((held.row.expect("copied"), held.watermark, ROLE_CHUNK));
                return Ok(());
            }
            let reason = format!(
                "chunk 0 was never seen (the first chunk read is {} of {})",
                c.chunk_id, c.num_chunks
            );
            return self.start_orphan(c, batch, row, held, reason, sink);
        };
        if c.chunk_id == 0 {
            let ctx = part.remove(c.uuid).expect("present");
            close(
                ctx,
                STATUS_INCOMPLETE,
                &format!("restarted by a new chunk 0 at {at}"),
                sink,
            );
            return self.start(c, batch, row, held, false, sink);
        }
        let last_chunk = c.chunk_id == c.num_chunks - 1;
        match &mut ctx.kind {
            Kind::Orphan(_) => {
                absorb(ctx, c, held);
                if last_chunk || ctx.held.len() >= ORPHAN_CHUNK_LIMIT {
                    let ctx = part.remove(c.uuid).expect("present");
                    close(
                        ctx,
                        STATUS_INCOMPLETE,
                        &format!("chunk {} arrived at {at}", c.chunk_id),
                        sink,
                    );
                }
            }
            Kind::Live(_) if c.chunk_id <= ctx.last_chunk_id => {
                let first = ctx
                    .held
                    .iter()
                    .find(|h| h.chunk_id == c.chunk_id)
                    .map_or_else(|| "?".into(), |h| format!("{}:{}", h.ledger, h.entry));
                let error = format!(
                    "duplicate chunk {} of chunked message {} at {at} (already held from {first}); ignored",
                    c.chunk_id, c.uuid
                );
                sink.emit(Outcome {
                    status: STATUS_DUPLICATE,
                    template: template_of(batch, row)?,
                    held: vec![(c.ledger, c.entry)],
                    value: None,
                    error: Some(error),
                    broker_ts: c.broker_ts,
                    broker_index: c.broker_index,
                });
            }
            Kind::Live(_)
                if c.chunk_id != ctx.last_chunk_id + 1
                    || c.num_chunks != ctx.num_chunks
                    || c.total != ctx.total =>
            {
                let reason = if c.chunk_id != ctx.last_chunk_id + 1 {
                    format!(
                        "chunk {} arrived at {at} after chunk {} (missing {})",
                        c.chunk_id,
                        ctx.last_chunk_id,
                        describe_ids(&((ctx.last_chunk_id + 1)..c.chunk_id).collect::<Vec<_>>())
                    )
                } else {
                    format!(
                        "chunk {} at {at} says num_chunks {} and total_chunk_msg_size {:?}, chunk 0 said {} and {:?}",
                        c.chunk_id, c.num_chunks, c.total, ctx.num_chunks, ctx.total
                    )
                };
                // Keeps its deadline and its chunk ids; drops its bytes.
                ctx.kind = Kind::Orphan(reason);
                absorb(ctx, c, held);
                let seq = ctx.seq;
                let uuid = ctx.uuid.clone();
                part.live.remove(&seq);
                part.orphans.insert(seq, uuid);
                if last_chunk {
                    let ctx = part.remove(c.uuid).expect("present");
                    close(
                        ctx,
                        STATUS_INCOMPLETE,
                        &format!("chunk {} arrived at {at}", c.chunk_id),
                        sink,
                    );
                } else {
                    part.limit_orphans(sink);
                }
            }
            Kind::Live(bytes) => {
                if let Bytes::Buffer(buf) = bytes {
                    let total = ctx.total.unwrap_or(0).max(0) as usize;
                    if buf.len() + c.value.len() > total {
                        *bytes = Bytes::Failed(format!(
                            "its chunks hold more than total_chunk_msg_size={total} bytes"
                        ));
                    } else {
                        buf.extend_from_slice(c.value);
                    }
                }
                absorb(ctx, c, held);
                if c.chunk_id == ctx.num_chunks - 1 {
                    let ctx = part.remove(c.uuid).expect("present");
                    complete(
                        &mut self.decompressor,
                        self.opts.max_message_size,
                        ctx,
                        sink,
                    );
                }
            }
        }
        Ok(())
    }

    fn new_ctx(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        kind: Kind,
    ) -> Result<Ctx> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let deadline = self
            .opts
            .expire_after_ms
            .zip(c.publish_time)
            .map(|(e, p)| p.saturating_add(e));
        Ok(Ctx {
            seq,
            uuid: c.uuid.to_owned(),
            kind,
            template: template_of(batch, row)?,
            deadline,
            num_chunks: c.num_chunks,
            total: c.total,
            last_chunk_id: c.chunk_id - 1,
            held: Vec::new(),
            last_compression: None,
            last_uncompressed: None,
            last_broker_ts: None,
            last_broker_index: None,
            encrypted: false,
            marker: None,
        })
    }

    /// A new message from its chunk 0. `fresh`: no local state had the uuid.
    fn start(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        held: Held,
        fresh: bool,
        sink: &mut Sink,
    ) -> Result<()> {
        let max = self.opts.max_message_size;
        let bytes = match c.total {
            None => Bytes::Failed("chunk 0 has no total_chunk_msg_size".into()),
            Some(t) if t < 0 => Bytes::Failed(format!("chunk 0 has total_chunk_msg_size {t}")),
            Some(t) if t as usize > max => Bytes::Failed(format!(
                "total_chunk_msg_size {t} exceeds the limit of {max} bytes"
            )),
            Some(t) if c.value.len() > t as usize => Bytes::Failed(format!(
                "its chunks hold more than total_chunk_msg_size={t} bytes"
            )),
            Some(t) => {
                // Bounded above, so sized once, as Java sizes its buffer.
                let mut buf = Vec::with_capacity(t as usize);
                buf.extend_from_slice(c.value);
                Bytes::Buffer(buf)
            }
        };
        let mut ctx = self.new_ctx(c, batch, row, Kind::Live(bytes))?;
        if self.mode == Mode::Partition && fresh {
            let mut marker = held.clone();
            marker.row = held.row.as_ref().map(null_value).transpose()?;
            ctx.marker = Some(marker);
        }
        absorb(&mut ctx, c, held);
        let part = self.parts.get_mut(&c.partition).expect("exists");
        part.insert(ctx);
        if let Some(limit) = self.opts.max_pending {
            if part.live.len() > limit {
                let (_, oldest) = part.live.pop_first().expect("non-empty");
                let ctx = part.remove(&oldest).expect("live index open contexts");
                let why = format!("more than max_pending={limit} messages were pending");
                close(ctx, STATUS_EVICTED, &why, sink);
            }
        }
        Ok(())
    }

    fn start_orphan(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        held: Held,
        reason: String,
        sink: &mut Sink,
    ) -> Result<()> {
        let mut ctx = self.new_ctx(c, batch, row, Kind::Orphan(reason))?;
        absorb(&mut ctx, c, held);
        if c.chunk_id == c.num_chunks - 1 {
            let at = format!("{}:{}", c.ledger, c.entry);
            close(
                ctx,
                STATUS_INCOMPLETE,
                &format!("chunk {} arrived at {at}", c.chunk_id),
                sink,
            );
            return Ok(());
        }
        let part = self.parts.get_mut(&c.partition).expect("exists");
        part.insert(ctx);
        part.limit_orphans(sink);
        Ok(())
    }

    /// End of input: expire by the final clock, then report what is left (or,
    /// in the partition pass, hand it on).
    fn finish(&mut self, final_watermarks: &HashMap<i32, i64>, sink: &mut Sink) {
        let expire = self.opts.expire_after_ms.unwrap_or(0);
        let mut partitions: Vec<i32> = self.parts.keys().copied().collect();
        partitions.sort_unstable();
        for p in partitions {
            let part = self.parts.get_mut(&p).expect("listed");
            if let Some(&w) = final_watermarks.get(&p) {
                part.watermark = Some(part.watermark.map_or(w, |x| x.max(w)));
            }
            if self.mode != Mode::Partition {
                part.sweep(expire, sink);
            }
            let mut left: Vec<Ctx> = part.ctxs.drain().map(|(_, c)| c).collect();
            part.live.clear();
            part.orphans.clear();
            part.deadlines.clear();
            part.deferred.clear();
            left.sort_by_key(|c| c.seq);
            for ctx in left {
                if self.mode == Mode::Partition {
                    // Decided by the finishing pass, which sees what follows.
                    for h in ctx.held {
                        if let Some(row) = h.row {
                            sink.leftovers.push((row, h.watermark, ROLE_CHUNK));
                        }
                    }
                } else {
                    close(ctx, STATUS_INCOMPLETE, "the input ended", sink);
                }
            }
        }
    }
}

/// Records a chunk as held.
fn absorb(ctx: &mut Ctx, c: &Chunk<'_>, held: Held) {
    ctx.last_chunk_id = ctx.last_chunk_id.max(c.chunk_id);
    ctx.last_compression = c.compression.map(str::to_owned);
    ctx.last_uncompressed = c.uncompressed;
    ctx.last_broker_ts = c.broker_ts;
    ctx.last_broker_index = c.broker_index;
    ctx.encrypted |= c.encrypted;
    ctx.held.push(held);
}

// ---------------------------------------------------------------- output

fn arrow_err(e: arrow_schema::ArrowError) -> EntryError {
    EntryError::Input(e.to_string())
}

/// Input rows plus the added columns, all null.
fn passthrough(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut cols = batch.columns().to_vec();
    for f in added_fields() {
        cols.push(new_null_array(f.data_type(), batch.num_rows()));
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// Values at least this large are handed to Arrow without a copy, in a
/// batch of their own.
const LARGE_VALUE: usize = 64 * 1024;

/// The outcome rows, in the output schema. Values are copied once into a
/// pre-sized buffer.
fn outcome_batch(input: &SchemaRef, out: &SchemaRef, outcomes: &[Outcome]) -> Result<RecordBatch> {
    let bytes: usize = outcomes
        .iter()
        .map(|o| o.value.as_ref().map_or(0, Vec::len))
        .sum();
    let mut values = BinaryBuilder::with_capacity(outcomes.len(), bytes);
    for o in outcomes {
        values.append_option(o.value.as_deref());
    }
    outcome_rows(input, out, outcomes, Arc::new(values.finish()))
}

/// One outcome whose value becomes the Arrow buffer as is (no copy).
fn large_outcome_batch(input: &SchemaRef, out: &SchemaRef, mut o: Outcome) -> Result<RecordBatch> {
    let value = o.value.take().expect("large outcomes have a value");
    let len =
        i32::try_from(value.len()).map_err(|_| EntryError::Input("a message over 2 GiB".into()))?;
    let array = BinaryArray::new(
        OffsetBuffer::new(ScalarBuffer::from(vec![0, len])),
        Buffer::from_vec(value),
        None,
    );
    outcome_rows(input, out, std::slice::from_ref(&o), Arc::new(array))
}

fn outcome_rows(
    input: &SchemaRef,
    out: &SchemaRef,
    outcomes: &[Outcome],
    values: ArrayRef,
) -> Result<RecordBatch> {
    let templates: Vec<&RecordBatch> = outcomes.iter().map(|o| &o.template).collect();
    let base = concat_batches(input, templates).map_err(arrow_err)?;
    let n = outcomes.len();
    let last = |o: &Outcome| *o.held.last().expect("an outcome holds a chunk");
    let mut cols = base.columns().to_vec();
    let mut set = |name: &str, array: ArrayRef| -> Result<()> {
        if let Some((i, f)) = input.column_with_name(name) {
            cols[i] = if array.data_type() == f.data_type() {
                array
            } else {
                arrow_cast::cast(&array, f.data_type()).map_err(arrow_err)?
            };
        }
        Ok(())
    };
    set(
        "ledger_id",
        Arc::new(Int64Array::from_iter_values(
            outcomes.iter().map(|o| last(o).0),
        )),
    )?;
    set(
        "entry_id",
        Arc::new(Int64Array::from_iter_values(
            outcomes.iter().map(|o| last(o).1),
        )),
    )?;
    set("value", values)?;
    set(
        "error",
        Arc::new(StringArray::from_iter(
            outcomes.iter().map(|o| o.error.as_deref()),
        )),
    )?;
    set(
        "broker_timestamp",
        Arc::new(Int64Array::from_iter(outcomes.iter().map(|o| o.broker_ts))),
    )?;
    set(
        "broker_index",
        Arc::new(Int64Array::from_iter(
            outcomes.iter().map(|o| o.broker_index),
        )),
    )?;
    let mut status = StringBuilder::with_capacity(n, n * 10);
    let mut ledgers = ListBuilder::new(Int64Builder::new());
    let mut entries = ListBuilder::new(Int64Builder::new());
    for o in outcomes {
        status.append_value(o.status);
        for &(l, e) in &o.held {
            ledgers.values().append_value(l);
            entries.values().append_value(e);
        }
        ledgers.append(true);
        entries.append(true);
    }
    cols.push(Arc::new(Int64Array::from_iter_values(
        outcomes.iter().map(|o| o.held[0].0),
    )));
    cols.push(Arc::new(Int64Array::from_iter_values(
        outcomes.iter().map(|o| o.held[0].1),
    )));
    cols.push(Arc::new(status.finish()));
    cols.push(Arc::new(ledgers.finish()));
    cols.push(Arc::new(entries.finish()));
    RecordBatch::try_new(out.clone(), cols).map_err(arrow_err)
}

/// Every outcome as output batches: large values zero-copy, one batch each;
/// the rest together.
fn outcome_batches(
    input: &SchemaRef,
    out: &SchemaRef,
    outcomes: Vec<Outcome>,
) -> Result<Vec<RecordBatch>> {
    let (large, small): (Vec<Outcome>, Vec<Outcome>) = outcomes
        .into_iter()
        .partition(|o| o.value.as_ref().is_some_and(|v| v.len() >= LARGE_VALUE));
    let mut batches = Vec::new();
    if !small.is_empty() {
        batches.push(outcome_batch(input, out, &small)?);
    }
    for o in large {
        batches.push(large_outcome_batch(input, out, o)?);
    }
    Ok(batches)
}

/// Segments of small rows above which one step's rows are copied into a
/// single batch instead of being returned as many small slices.
const MAX_SEGMENTS: usize = 32;

/// Lays out one step's rows in event order: runs of input rows stay
/// zero-copy slices, large reassembled values stay zero-copy batches, and
/// the remaining outcomes share one batch; when that would make too many
/// small batches, everything is copied into one.
fn assemble(
    batch: &RecordBatch,
    input: &SchemaRef,
    out: &SchemaRef,
    sink: &mut Sink,
) -> Result<Vec<RecordBatch>> {
    let rows = passthrough(batch, out)?;
    // Sources: 0 = input rows, 1 = small outcomes, 2.. = one large outcome each.
    let outcomes = std::mem::take(&mut sink.outcomes);
    let mut place = Vec::with_capacity(outcomes.len()); // outcome -> (source, row)
    let (mut large, mut small) = (Vec::new(), Vec::new());
    for o in outcomes {
        if o.value.as_ref().is_some_and(|v| v.len() >= LARGE_VALUE) {
            place.push((2 + large.len(), 0));
            large.push(o);
        } else {
            place.push((1, small.len()));
            small.push(o);
        }
    }
    let mut sources = vec![rows];
    sources.push(if small.is_empty() {
        RecordBatch::new_empty(out.clone())
    } else {
        outcome_batch(input, out, &small)?
    });
    for o in large {
        sources.push(large_outcome_batch(input, out, o)?);
    }
    let indices: Vec<(usize, usize)> = sink
        .events
        .iter()
        .map(|e| match e {
            Event::Row(i) => (0, *i),
            Event::Outcome(k) => place[*k],
        })
        .collect();
    sink.events.clear();
    // Runs of consecutive rows of one source: (source, start, len).
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(src, i) in &indices {
        match runs.last_mut() {
            Some((s, start, len)) if *s == src && *start + *len == i => *len += 1,
            _ => runs.push((src, i, 1)),
        }
    }
    if runs.iter().filter(|r| r.0 < 2).count() <= MAX_SEGMENTS {
        return Ok(runs
            .iter()
            .map(|&(s, start, len)| sources[s].slice(start, len))
            .collect());
    }
    let cols = (0..out.fields().len())
        .map(|c| {
            let arrays: Vec<&dyn Array> = sources.iter().map(|b| b.column(c).as_ref()).collect();
            interleave(&arrays, &indices)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(arrow_err)?;
    Ok(vec![
        RecordBatch::try_new(out.clone(), cols).map_err(arrow_err)?
    ])
}

// ---------------------------------------------------------------- public API

/// Runs one input batch (of the stream's schema) through the state machine,
/// with publish time as the clock.
fn feed(machine: &mut Machine, input: &SchemaRef, batch: &RecordBatch) -> Result<Sink> {
    if batch.schema().fields() != input.fields() {
        return Err(EntryError::Input(
            "every input batch must have the schema of the first".into(),
        ));
    }
    let cols = Cols::read(batch, "publish_time")?;
    let mut sink = Sink::default();
    machine.push(batch, &cols, &mut sink)?;
    Ok(sink)
}

/// Streaming reassembly over decoded batches, in topic order.
pub struct Reassembler {
    machine: Machine,
    input: SchemaRef,
    output: SchemaRef,
}

impl Reassembler {
    pub fn new(input: SchemaRef, opts: ReassemblyOptions) -> Result<Self> {
        check_input_schema(&input)?;
        Ok(Reassembler {
            machine: Machine::new(opts, Mode::InProcess)?,
            output: output_schema(&input),
            input,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// The rows decided while reading `batch` (its non-chunk rows, and every
    /// message completed, reported or ignored on the way), in order.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let mut sink = feed(&mut self.machine, &self.input, batch)?;
        assemble(batch, &self.input, &self.output, &mut sink)
    }

    /// Reports the messages still pending at the end of the input.
    pub fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        let mut sink = Sink::default();
        self.machine.finish(&HashMap::new(), &mut sink);
        outcome_batches(&self.input, &self.output, sink.outcomes)
    }
}

/// Reassembles decoded batches (topic order) in one call.
pub fn reassemble(batches: &[RecordBatch], opts: ReassemblyOptions) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(vec![]);
    };
    let mut r = Reassembler::new(first.schema(), opts)?;
    let mut out = Vec::new();
    for b in batches {
        out.extend(r.push(b)?);
    }
    out.extend(r.finish()?);
    out.retain(|b| b.num_rows() > 0);
    Ok(out)
}

/// The partition pass of a distributed reassembly.
pub struct PartitionResult {
    /// Final output rows: non-chunk rows and every message decided here.
    pub done: Vec<RecordBatch>,
    /// Chunk rows whose message is decided by [`finish_leftovers`]: the input
    /// columns plus `_watermark` (stream time when read) and `_role` (`chunk`,
    /// or `restart` for a value-less chunk-0 marker that ends an earlier
    /// partition's message with the same uuid).
    pub leftovers: RecordBatch,
}

/// Schema of [`PartitionResult::leftovers`].
pub fn leftover_schema(input: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(WATERMARK_COLUMN, DataType::Int64, false));
    fields.push(Field::new(ROLE_COLUMN, DataType::Utf8, false));
    Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
}

/// The partition pass of a distributed reassembly, streaming: one partition of
/// a topic-ordered input (a contiguous range of each topic partition) is
/// reassembled as far as it can be on its own, batch by batch.
///
/// `seeds` is the stream time (largest `publish_time`) of everything before
/// this partition, per topic partition: with it, every decision made here is
/// the one [`reassemble`] makes over the whole input. Messages still open at
/// the partition's end, and chunks continuing an earlier partition's message,
/// are handed on as leftovers. Memory is that of the in-process pass: the
/// pending messages' chunks, not the partition.
pub struct PartitionReassembler {
    machine: Machine,
    input: SchemaRef,
    output: SchemaRef,
}

impl PartitionReassembler {
    pub fn new(
        input: SchemaRef,
        opts: ReassemblyOptions,
        seeds: &HashMap<i32, i64>,
    ) -> Result<Self> {
        check_input_schema(&input)?;
        let mut machine = Machine::new(opts, Mode::Partition)?;
        machine.seeds = seeds.clone();
        Ok(PartitionReassembler {
            machine,
            output: output_schema(&input),
            input,
        })
    }

    /// Schema of the final rows ([`output_schema`] of the input).
    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// Schema of the leftovers ([`leftover_schema`] of the input).
    pub fn leftover_schema(&self) -> SchemaRef {
        leftover_schema(&self.input)
    }

    /// The rows decided while reading `batch`, and the rows it hands on.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<PartitionResult> {
        let mut sink = feed(&mut self.machine, &self.input, batch)?;
        let rows = std::mem::take(&mut sink.leftovers);
        let mut done = assemble(batch, &self.input, &self.output, &mut sink)?;
        done.retain(|b| b.num_rows() > 0);
        Ok(PartitionResult {
            done,
            leftovers: leftover_batch(&self.input, rows)?,
        })
    }

    /// End of the partition: the messages still open are handed on.
    pub fn finish(&mut self) -> Result<PartitionResult> {
        let mut sink = Sink::default();
        self.machine.finish(&HashMap::new(), &mut sink);
        let rows = std::mem::take(&mut sink.leftovers);
        let mut done = outcome_batches(&self.input, &self.output, sink.outcomes)?;
        done.retain(|b| b.num_rows() > 0);
        Ok(PartitionResult {
            done,
            leftovers: leftover_batch(&self.input, rows)?,
        })
    }
}

/// [`PartitionReassembler`] over a whole partition at once.
pub fn reassemble_partition(
    batches: &[RecordBatch],
    opts: ReassemblyOptions,
    seeds: &HashMap<i32, i64>,
) -> Result<PartitionResult> {
    let Some(first) = batches.first() else {
        return Err(EntryError::Input(
            "reassemble_partition needs at least one batch (it fixes the schema)".into(),
        ));
    };
    let input = first.schema();
    let mut r = PartitionReassembler::new(input.clone(), opts, seeds)?;
    let mut done = Vec::new();
    let mut left = Vec::new();
    for batch in batches {
        let part = r.push(batch)?;
        done.extend(part.done);
        left.push(part.leftovers);
    }
    let part = r.finish()?;
    done.extend(part.done);
    left.push(part.leftovers);
    let leftovers = concat_batches(&leftover_schema(&input), &left).map_err(arrow_err)?;
    Ok(PartitionResult { done, leftovers })
}

fn leftover_batch(
    input: &SchemaRef,
    rows: Vec<(RecordBatch, i64, &'static str)>,
) -> Result<RecordBatch> {
    let schema = leftover_schema(input);
    let base = concat_batches(input, rows.iter().map(|(b, _, _)| b)).map_err(arrow_err)?;
    let mut cols = base.columns().to_vec();
    cols.push(Arc::new(Int64Array::from_iter_values(
        rows.iter().map(|r| r.1),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r.2),
    )));
    RecordBatch::try_new(schema, cols).map_err(arrow_err)
}

/// Finishes the leftovers of every partition: groups them by
/// `(partition, uuid)`, orders each group by position, and decides each
/// message as [`reassemble`] would. Rows of one uuid must all be present
/// (e.g. after a shuffle keyed by partition and uuid); groups are independent.
///
/// `final_watermarks` is the stream time at the end of the whole input per
/// topic partition (its largest `publish_time`).
///
/// One decision needs the whole stream and is not reproduced: evicting a
/// message that spans a partition boundary because `max_pending` others
/// started after it (see the module notes).
pub fn finish_leftovers(
    batches: &[RecordBatch],
    opts: ReassemblyOptions,
    final_watermarks: &HashMap<i32, i64>,
) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(vec![]);
    };
    let schema = first.schema();
    for name in [WATERMARK_COLUMN, ROLE_COLUMN] {
        if schema.column_with_name(name).is_none() {
            return Err(EntryError::Input(format!(
                "leftovers have no `{name}` column: pass the leftovers of reassemble_partition"
            )));
        }
    }
    let all = concat_batches(&schema, batches).map_err(arrow_err)?;
    // The original columns, without the two bookkeeping ones.
    let keep: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name() != WATERMARK_COLUMN && f.name() != ROLE_COLUMN)
        .map(|(i, _)| i)
        .collect();
    let input = Arc::new(schema.project(&keep).map_err(arrow_err)?);
    check_input_schema(&input)?;
    let output = output_schema(&input);
    let cols = Cols::read(&all, WATERMARK_COLUMN)?;
    // Group rows by (partition, uuid), each in position order.
    let mut order: Vec<usize> = (0..all.num_rows()).filter(|&i| cols.is_chunk(i)).collect();
    order.sort_by(|&a, &b| {
        (
            cols.partition(a),
            cols.uuid.value(a),
            cols.ledger.value(a),
            cols.entry.value(a),
        )
            .cmp(&(
                cols.partition(b),
                cols.uuid.value(b),
                cols.ledger.value(b),
                cols.entry.value(b),
            ))
    });
    let projected = all.project(&keep).map_err(arrow_err)?;
    let sorted = take_record_batch(
        &projected,
        &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)),
    )
    .map_err(arrow_err)?;
    let sorted_time = take_record_batch(
        &all,
        &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)),
    )
    .map_err(arrow_err)?;
    let scols = Cols::read(&sorted_time, WATERMARK_COLUMN)?;
    let opts = ReassemblyOptions {
        max_pending: None,
        ..opts
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < sorted.num_rows() {
        let key = (scols.partition(start), scols.uuid.value(start));
        let mut end = start + 1;
        while end < sorted.num_rows() && (scols.partition(end), scols.uuid.value(end)) == key {
            end += 1;
        }
        let group = sorted.slice(start, end - start);
        let group_cols = Cols::read(&sorted_time.slice(start, end - start), WATERMARK_COLUMN)?;
        let mut machine = Machine::new(opts, Mode::Finish)?;
        let mut sink = Sink::default();
        machine.push(&group, &group_cols, &mut sink)?;
        machine.finish(final_watermarks, &mut sink);
        out.extend(outcome_batches(&input, &output, sink.outcomes)?);
        start = end;
    }
    Ok(out)
}
