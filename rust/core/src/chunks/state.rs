//! State: messages under assembly per partition, and how one is closed.

use std::collections::{BTreeMap, HashMap};

use arrow_array::{new_null_array, RecordBatch, UInt32Array};
use arrow_select::take::take_record_batch;

use super::options::{ReassemblyOptions, ROLE_RESTART, STATUS_COMPLETE};
use crate::error::{EntryError, FormatError, Result};
use crate::format::compression::{Codec, Decompressor};

/// One chunk a message holds.
#[derive(Clone)]
pub(super) struct Held {
    pub(super) ledger: i64,
    pub(super) entry: i64,
    pub(super) chunk_id: i32,
    /// Stream time when it was read (exported with leftovers).
    pub(super) watermark: i64,
    /// The whole input row, kept only by the partition pass (for export).
    pub(super) row: Option<RecordBatch>,
}

pub(super) enum Bytes {
    Buffer(Vec<u8>),
    /// No bytes are kept; the message can still complete, with this error.
    Failed(String),
}

pub(super) enum Kind {
    Live(Bytes),
    /// Can no longer complete; collects the uuid's chunks until it closes.
    Orphan(String),
}

pub(super) struct Ctx {
    pub(super) seq: u64,
    pub(super) uuid: String,
    pub(super) kind: Kind,
    /// The first held chunk's row, value nulled: the outcome row's metadata.
    pub(super) template: RecordBatch,
    pub(super) deadline: Option<i64>,
    pub(super) num_chunks: i32,
    pub(super) total: Option<i32>,
    pub(super) last_chunk_id: i32,
    pub(super) held: Vec<Held>,
    pub(super) last_compression: Option<String>,
    pub(super) last_uncompressed: Option<i64>,
    pub(super) last_broker_ts: Option<i64>,
    pub(super) last_broker_index: Option<i64>,
    pub(super) encrypted: bool,
    /// Partition pass: chunk 0 arrived with no local state, so it may close an
    /// earlier partition's message with the same uuid; exported as a restart
    /// marker when this message is decided locally.
    pub(super) marker: Option<Held>,
}

/// `0..3` for a contiguous run, else the list.
pub(super) fn describe_ids(ids: &[i32]) -> String {
    let contiguous = ids.windows(2).all(|w| w[1] == w[0] + 1);
    match ids {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if contiguous => format!("{first}..={last}"),
        _ => format!("{ids:?}"),
    }
}

#[derive(Default)]
pub(super) struct Part {
    pub(super) ctxs: HashMap<String, Ctx>,
    pub(super) live: BTreeMap<u64, String>,
    pub(super) orphans: BTreeMap<u64, String>,
    pub(super) deadlines: BTreeMap<(i64, u64), String>,
    /// Partition pass: uuids whose chunks continue an earlier partition's message.
    pub(super) deferred: std::collections::HashSet<String>,
    pub(super) watermark: Option<i64>,
}

impl Part {
    pub(super) fn remove(&mut self, uuid: &str) -> Option<Ctx> {
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
pub(super) struct Outcome {
    pub(super) status: &'static str,
    pub(super) template: RecordBatch,
    pub(super) held: Vec<(i64, i64)>,
    pub(super) value: Option<Vec<u8>>,
    pub(super) error: Option<String>,
    pub(super) broker_ts: Option<i64>,
    pub(super) broker_index: Option<i64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    InProcess,
    Partition,
    Finish,
}

pub(super) enum Event {
    Row(usize),
    Outcome(usize),
}

/// What one step produced.
#[derive(Default)]
pub(super) struct Sink {
    pub(super) outcomes: Vec<Outcome>,
    pub(super) events: Vec<Event>,
    /// Partition pass: rows handed on, with their role.
    pub(super) leftovers: Vec<(RecordBatch, i64, &'static str)>,
}

impl Sink {
    pub(super) fn emit(&mut self, o: Outcome) {
        self.events.push(Event::Outcome(self.outcomes.len()));
        self.outcomes.push(o);
    }
}

/// Fields of the chunk row being processed.
pub(super) struct Chunk<'a> {
    pub(super) partition: i32,
    pub(super) uuid: &'a str,
    pub(super) chunk_id: i32,
    pub(super) num_chunks: i32,
    pub(super) total: Option<i32>,
    pub(super) ledger: i64,
    pub(super) entry: i64,
    pub(super) publish_time: Option<i64>,
    pub(super) value: &'a [u8],
    pub(super) compression: Option<&'a str>,
    pub(super) uncompressed: Option<i64>,
    pub(super) encrypted: bool,
    pub(super) broker_ts: Option<i64>,
    pub(super) broker_index: Option<i64>,
    pub(super) restart_marker: bool,
}

pub(super) struct Machine {
    pub(super) opts: ReassemblyOptions,
    pub(super) mode: Mode,
    pub(super) parts: HashMap<i32, Part>,
    pub(super) next_seq: u64,
    pub(super) decompressor: Decompressor,
    /// Partition pass: stream time before this partition, per topic partition.
    pub(super) seeds: HashMap<i32, i64>,
}

/// One row copied out of its batch.
pub(super) fn copy_row(batch: &RecordBatch, row: usize) -> Result<RecordBatch> {
    take_record_batch(batch, &UInt32Array::from(vec![row as u32])).map_err(arrow_err)
}

/// A row's metadata, value nulled first so only the small columns are copied:
/// it outlives its batch without keeping the batch's buffers alive.
pub(super) fn template_of(batch: &RecordBatch, row: usize) -> Result<RecordBatch> {
    copy_row(&null_value(&batch.slice(row, 1))?, 0)
}

/// A row with its value nulled: outcome templates and restart markers keep
/// metadata, never payload.
pub(super) fn null_value(one: &RecordBatch) -> Result<RecordBatch> {
    let schema = one.schema();
    let (idx, field) = schema
        .column_with_name("value")
        .ok_or_else(|| EntryError::Schema("input has no `value` column".into()))?;
    let mut cols = one.columns().to_vec();
    cols[idx] = new_null_array(field.data_type(), one.num_rows());
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// Reports a message that will not complete.
pub(super) fn close(ctx: Ctx, status: &'static str, why: &str, sink: &mut Sink) {
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
pub(super) fn complete(d: &mut Decompressor, max_size: usize, mut ctx: Ctx, sink: &mut Sink) {
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
pub(super) fn join(
    d: &mut Decompressor,
    max_size: usize,
    ctx: &Ctx,
    buf: Vec<u8>,
) -> Result<Vec<u8>, String> {
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
            EntryError::Format(FormatError::Decompress { codec, reason, .. }) => {
                format!("{codec} decompression of the joined payload failed: {reason}")
            }
            other => other.to_string(),
        })
}

pub(super) fn arrow_err(e: arrow_schema::ArrowError) -> EntryError {
    EntryError::Schema(e.to_string())
}
