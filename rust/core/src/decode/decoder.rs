//! Entries → Arrow: one row per message, one error row per bad entry.
//!
//! An entry is validated completely (framing, checksum, metadata,
//! decompression, the processor's whole payload) before any of its rows is
//! appended, so a bad entry yields exactly one row carrying `error` and never
//! a partial set. Payloads are turned into messages by payload processors
//! (see [`crate::processor`]): Pulsar batches and KoP Kafka entries built in.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{new_empty_array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use arrow_schema::{DataType, SchemaRef};

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, FormatError, Result};
use crate::format::batch::{split_batch, BatchRecord, RecordBuf};
use crate::format::compression::{first_output, Codec, Decompressor};
use crate::format::crypto::CryptoKeys;
use crate::format::frame::EntryView;
use crate::format::metadata::MessageMetadataView;
use crate::format::wire::Lossy;
use crate::processor::api::{
    base_offset, DecodeOptions, EntryContext, EntryId, Message, Sink, TxnKey, TxnOutcome,
};
use crate::processor::pulsar::{marker_message, pulsar_txn, single_message, PulsarProcessor};
use crate::processor::registry::Processors;

use super::columns::{null_array, Columns, RowKind, Span, ValueColumn, Want, COLUMNS};
use super::schema::{message_schema, txn_status_column};

pub use crate::format::compression::MAX_UNCOMPRESSED_SIZE_CAP;
/// Pending output bytes after which a record batch is cut.
const FLUSH_BYTES: usize = 64 << 20;

/// Transaction status per output row, resolved as end markers are seen.
#[derive(Default)]
struct TxnTracker {
    /// 0 = not transactional, 1 = unknown, 2 = committed, 3 = aborted.
    status: Vec<u8>,
    pending: HashMap<TxnKey, Vec<usize>>,
}

impl TxnTracker {
    const NONE: u8 = 0;
    const UNKNOWN: u8 = 1;

    fn code(outcome: TxnOutcome) -> u8 {
        match outcome {
            TxnOutcome::Committed => 2,
            TxnOutcome::Aborted => 3,
        }
    }

    fn end(&mut self, key: TxnKey, outcome: TxnOutcome) {
        if let Some(rows) = self.pending.remove(&key) {
            for row in rows {
                self.status[row] = Self::code(outcome);
            }
        }
    }

    /// `n` rows of messages that belong to `key` (or to no transaction).
    fn append(&mut self, key: Option<TxnKey>, n: usize) {
        let first = self.status.len();
        match key {
            Some(key) => {
                self.status.resize(first + n, Self::UNKNOWN);
                self.pending
                    .entry(key)
                    .or_default()
                    .extend(first..first + n);
            }
            None => self.status.resize(first + n, Self::NONE),
        }
    }

    fn array(&self, from: usize, len: usize) -> ArrayRef {
        let names = [None, Some("unknown"), Some("committed"), Some("aborted")];
        let status = &self.status[from..from + len];
        if status.iter().all(|&c| c == Self::NONE) {
            return null_array(&DataType::Utf8, len);
        }
        Arc::new(
            status
                .iter()
                .map(|&c| names[c as usize])
                .collect::<StringArray>(),
        )
    }
}

/// Decodes entries into message rows, reusing its buffers across entries.
pub struct Decoder {
    opts: DecodeOptions,
    processors: Processors,
    decompressor: Decompressor,
    columns: Columns,
    txn: TxnTracker,
    done: Vec<(Vec<ArrayRef>, usize)>,
    /// Reused per entry by the built-in Pulsar path.
    records: RecordBuf,
    spans: Vec<Span>,
    /// Value bytes to reserve for the next output batch.
    value_hint: usize,
    /// Input bytes decoded into the pending rows, and input bytes of the
    /// current record batch still to come: they project the value bytes
    /// still to come when the value buffer must grow.
    in_done: usize,
    in_left: usize,
    /// Decompressed payload bytes since the last `finish`, against
    /// `max_output_bytes`.
    out_bytes: usize,
    /// The output's columns (schema positions, in output order) when
    /// projected, and which columns are built.
    projection: Option<(Vec<usize>, SchemaRef)>,
    want: Want,
    /// The consumer's private keys: encrypted entries are decrypted first.
    keys: Option<Arc<CryptoKeys>>,
}

impl Decoder {
    /// A decoder with the default processors (`[kafka, pulsar]`).
    pub fn new(opts: DecodeOptions) -> Self {
        Self::with_processors(opts, Processors::default())
    }

    pub fn with_processors(mut opts: DecodeOptions, processors: Processors) -> Self {
        opts.max_uncompressed_size = opts.max_uncompressed_size.min(MAX_UNCOMPRESSED_SIZE_CAP);
        Decoder {
            opts,
            processors,
            decompressor: Decompressor::default(),
            columns: Columns::new(0, [true; COLUMNS], 0),
            txn: TxnTracker::default(),
            done: Vec::new(),
            records: RecordBuf::default(),
            spans: Vec::new(),
            value_hint: 0,
            in_done: 0,
            in_left: 0,
            out_bytes: 0,
            projection: None,
            want: [true; COLUMNS],
            keys: None,
        }
    }

    /// Decrypts end-to-end encrypted entries with `keys` (Pulsar's
    /// `CryptoKeyReader`) before anything else; one that cannot be decrypted
    /// stays one row of its stored bytes, with `encrypted` set and the reason
    /// in `error` (`ConsumerCryptoFailureAction.CONSUME`).
    pub fn with_crypto_keys(mut self, keys: Option<Arc<CryptoKeys>>) -> Self {
        self.keys = keys.filter(|k| !k.is_empty());
        self
    }

    /// Builds only `columns` of the message schema, in that order: the same
    /// values as the full output's columns, without the work for the others.
    /// Call before decoding; an unknown or repeated name is an error.
    pub fn project(&mut self, columns: &[&str]) -> Result<()> {
        let schema = message_schema();
        let mut want = [false; COLUMNS];
        let mut order = Vec::with_capacity(columns.len());
        for name in columns {
            let i = schema.index_of(name).map_err(|_| {
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                EntryError::Options(format!(
                    "unknown decode column {name:?}; the columns are {}",
                    names.join(", ")
                ))
            })?;
            if want[i] {
                return Err(EntryError::Options(format!(
                    "decode column {name:?} is requested twice"
                )));
            }
            want[i] = true;
            order.push(i);
        }
        if self.columns.rows > 0 || !self.done.is_empty() {
            return Err(EntryError::Options(
                "project() must be called before decoding".into(),
            ));
        }
        let projected = Arc::new(schema.project(&order).expect("indices from the schema"));
        self.projection = Some((order, projected));
        self.want = want;
        self.columns.want = want;
        Ok(())
    }

    /// The schema of the record batches `finish` returns.
    pub fn schema(&self) -> SchemaRef {
        match &self.projection {
            Some((_, schema)) => schema.clone(),
            None => message_schema(),
        }
    }

    fn append_error(&mut self, id: EntryId, entry: Option<&EntryView<'_>>, error: &str) {
        self.txn.status.push(TxnTracker::NONE);
        self.columns.append(id, entry, None, RowKind::Error(error));
    }

    /// Cuts the pending rows into a finished batch; the next one reserves
    /// `value_bytes` for its values.
    fn flush(&mut self, value_bytes: usize) {
        self.in_done = 0;
        let next = Columns::new(value_bytes, self.want, 0);
        let batch = std::mem::replace(&mut self.columns, next).finish();
        self.done.push(batch);
    }

    /// Appends the rows of one entry. `data: None` (a null cell) is an error row.
    pub fn decode_entry(&mut self, id: EntryId, data: Option<&[u8]>) {
        if self.columns.bytes >= FLUSH_BYTES {
            self.flush(self.value_hint);
        }
        let Some(data) = data else {
            self.append_error(id, None, "entry data is null");
            return;
        };
        self.in_done += data.len();
        self.in_left = self.in_left.saturating_sub(data.len());
        // Replacement text for fields that are not UTF-8 (allocates only then).
        let lossy = Lossy::default();
        let parsed = EntryView::parse_with(
            data,
            self.opts.verify_checksum,
            self.opts.utf8_errors.arena(&lossy),
        );
        let entry = match parsed {
            Ok(entry) => entry,
            Err(e) => {
                self.append_error(id, None, &e.to_string());
                return;
            }
        };
        let plain;
        let mut undecrypted = None;
        let entry = match self.decrypt(&entry) {
            None => entry,
            Some(Ok(p)) => {
                plain = p;
                EntryView {
                    metadata: entry.metadata.decrypted(),
                    payload: &plain,
                    ..entry
                }
            }
            Some(Err(why)) => {
                undecrypted = Some(why);
                entry
            }
        };
        if let Err(e) = self
            .spend_budget(&entry)
            .and_then(|()| self.decode_parsed(id, &entry, undecrypted.as_deref()))
        {
            self.append_error(id, Some(&entry), &e.to_string());
        }
    }

    /// An encrypted entry's payload decrypted with the keys, or why it
    /// could not be; `None` when there is nothing to decrypt (or no keys).
    /// A marker is never encrypted by a producer and is left as it is.
    fn decrypt(&self, entry: &EntryView<'_>) -> Option<std::result::Result<Vec<u8>, String>> {
        let md = &entry.metadata;
        let keys = self.keys.as_ref()?;
        (md.is_encrypted() && md.marker_type.is_none()).then(|| keys.decrypt(md, entry.payload))
    }

    /// Counts the entry's decompressed payload against `max_output_bytes`;
    /// past the budget the entry is an error row and costs nothing.
    fn spend_budget(&mut self, entry: &EntryView<'_>) -> Result<()> {
        let Some(budget) = self.opts.max_output_bytes else {
            return Ok(());
        };
        let md = &entry.metadata;
        let opaque = md.marker_type.is_some() || md.is_encrypted() || md.is_chunk();
        let size = match payload_codec(entry) {
            Ok((_, size)) if !opaque => size as usize,
            _ => entry.payload.len(),
        };
        let left = budget.saturating_sub(self.out_bytes);
        if size > left {
            return Err(EntryError::from(FormatError::TooLarge {
                what: "payload would exceed max_output_bytes: uncompressed_size",
                size: size as u64,
                limit: left as u64,
                offset: entry.payload_offset,
            }));
        }
        self.out_bytes += size;
        Ok(())
    }

    fn decode_parsed(
        &mut self,
        id: EntryId,
        entry: &EntryView<'_>,
        undecrypted: Option<&str>,
    ) -> Result<()> {
        let md = &entry.metadata;
        let opaque = md.marker_type.is_some() || md.is_encrypted() || md.is_chunk();
        if !opaque
            && self
                .processors
                .select(md)
                .is_some_and(|p| p.is_builtin_pulsar())
        {
            let (codec, size) = payload_codec(entry)?;
            if md.is_batch() {
                return self.decode_pulsar_batch(id, entry, codec, size);
            }
            let payload = self.decompressor.decompress(
                codec,
                entry.payload,
                size,
                self.opts.max_uncompressed_size,
                entry.payload_offset,
            )?;
            self.txn.append(pulsar_txn(md), 1);
            self.columns.append_pulsar_single(id, entry, codec, payload);
            return Ok(());
        }
        let Decoder {
            opts,
            processors,
            decompressor,
            columns,
            txn,
            ..
        } = self;
        let md = &entry.metadata;
        let base = base_offset(entry);
        let keep_markers = opts.keep_markers;
        let mut emit_as = |name: &str, messages: &[Message<'_>], error: Option<&str>| {
            for m in messages {
                if let Some(marker) = m.marker {
                    if let Some((key, outcome)) = marker.ends {
                        txn.end(key, outcome);
                    }
                    if !keep_markers {
                        continue;
                    }
                }
                let row = txn.status.len();
                txn.status
                    .push(match (m.marker.and_then(|mk| mk.ends), m.txn) {
                        (Some((_, outcome)), _) => TxnTracker::code(outcome),
                        (None, Some(key)) => {
                            txn.pending.entry(key).or_default().push(row);
                            TxnTracker::UNKNOWN
                        }
                        (None, None) => TxnTracker::NONE,
                    });
                let offset = m
                    .offset
                    .or_else(|| base.map(|b| b + i64::from(m.batch_index.unwrap_or(0).max(0))));
                columns.append(
                    id,
                    Some(entry),
                    Some(name),
                    RowKind::Message(m, offset, error),
                );
                columns.value.append_copy(m.value);
            }
        };
        // Markers, encrypted payloads and single chunks are opaque: one row with
        // the stored payload. A chunk is a slice of the compressed stream, so it
        // is only decompressed after reassembly. None reaches a processor.
        if md.marker_type.is_some() {
            emit_as(
                PulsarProcessor::NAME,
                &[marker_message(md, entry.payload)],
                None,
            );
            return Ok(());
        }
        if md.is_encrypted() || md.is_chunk() {
            let row = single_message(md, entry.payload);
            emit_as(PulsarProcessor::NAME, &[row], undecrypted);
            return Ok(());
        }
        let processor = processors
            .select(md)
            .ok_or_else(|| EntryError::NoProcessor {
                processors: processors.names().join(", "),
                properties: md
                    .properties
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let (codec, size) = payload_codec(entry)?;
        let payload = decompressor.decompress(
            codec,
            entry.payload,
            size,
            opts.max_uncompressed_size,
            entry.payload_offset,
        )?;
        let ctx = EntryContext {
            id,
            entry,
            options: opts,
        };
        let name = processor.name();
        let mut emit = |messages: &[Message<'_>]| emit_as(name, messages, None);
        processor.process(&ctx, payload, Sink { emit: &mut emit })
    }

    /// A batch for the built-in Pulsar processor. The same rows as
    /// `PulsarProcessor::process` through `emit_as`, built without the
    /// per-message `Message`s and value copies: the payload is decompressed
    /// into the value column's spare space, split there, and each value moved
    /// down over the record headers before it (an uncompressed payload's
    /// values are copied from the input once).
    fn decode_pulsar_batch(
        &mut self,
        id: EntryId,
        entry: &EntryView<'_>,
        codec: Codec,
        size: u32,
    ) -> Result<()> {
        let Decoder {
            opts,
            decompressor,
            columns,
            txn,
            records,
            spans,
            in_done,
            in_left,
            ..
        } = self;
        let md = &entry.metadata;
        let at = columns.value.end();
        if codec != Codec::None && size as usize <= opts.max_uncompressed_size {
            // Grow once, to what the rest of the input projects at this
            // entry's expansion so far, instead of doubling (each doubling
            // copies the column or faults in fresh pages). Only as far as the
            // payload can prove: a stream codec's claimed size is not evidence.
            let need = at + first_output(codec, entry.payload.len(), size as usize);
            let data = &mut columns.value.data;
            if data.capacity() < need {
                let rest = (need as u128 * *in_left as u128 / (*in_done).max(1) as u128) as usize;
                data.reserve(need + rest.min(FLUSH_BYTES) - data.len());
            }
        }
        let staged = codec != Codec::None;
        // Out of the column while records borrow it; put back on every path.
        let mut data = std::mem::take(&mut columns.value.data);
        let split = (|| -> Result<usize> {
            let payload: &[u8] = if staged {
                decompressor.decompress_at(
                    codec,
                    entry.payload,
                    size,
                    opts.max_uncompressed_size,
                    entry.payload_offset,
                    &mut data,
                    at,
                )?;
                &data[at..at + size as usize]
            } else {
                entry.payload
            };
            records.with(|list| {
                split_batch(payload, md, list)?;
                columns.append_pulsar_batch(id, entry, codec, list);
                spans.clear();
                spans.extend(list.iter().map(|r| value_span(md, r, payload)));
                Ok(list.len())
            })
        })();
        columns.value.data = data;
        let n = split?;
        txn.append(pulsar_txn(md), n);
        let values = &mut columns.value;
        if !staged {
            values.append_spans(entry.payload, spans);
            return Ok(());
        }
        for &span in spans.iter() {
            match span {
                Span::Null => values.append_copy(None),
                Span::At(src, len) => values.commit(at + src, len),
            }
        }
        Ok(())
    }

    /// Decodes every entry of an input batch with columns `ledger_id`,
    /// `entry_id`, `data` (binary or large binary) and optional `partition`.
    pub fn decode_record_batch(&mut self, input: &RecordBatch) -> Result<()> {
        // Values take about the stored size (uncompressed) or more
        // (decompressed; the buffer then doubles once or twice). Reserving the
        // stored size up front saves the small doublings. Measured: reserving
        // 2x instead made glibc map and unmap the buffer on every same-sized
        // decode (~1,000 page faults per 4 MB output; decode NONE b1000
        // 0.75 -> 3 ms), reserving nothing costs 3-13 %.
        let stored = input
            .column_by_name("data")
            .map_or(0, |d| d.get_buffer_memory_size());
        self.value_hint = stored.min(FLUSH_BYTES);
        self.in_left = stored;
        if self.columns.rows == 0 && self.columns.value.data.capacity() < self.value_hint {
            self.columns.value.data.reserve(self.value_hint);
        }
        let rows = EntryRows::new(input)?;
        if self.columns.rows == 0 {
            // Size every column once, for the rows the input projects at its
            // first entry's messages per byte.
            let expect = expected_rows(&rows, stored);
            if expect > 0 {
                let value =
                    std::mem::replace(&mut self.columns.value, ValueColumn::with_capacity(0));
                self.columns = Columns::new(0, self.want, expect);
                self.columns.value = value;
            }
        }
        for i in 0..rows.len() {
            if rows.id_is_null(i) {
                // Its position is unknown: one error row, never a message at −1.
                self.append_error(rows.id(i), None, "ledger_id or entry_id is null");
                continue;
            }
            self.decode_entry(rows.id(i), rows.data(i));
        }
        Ok(())
    }

    /// Rows decoded so far that have not been taken.
    pub fn pending_rows(&self) -> usize {
        self.columns.rows
    }

    /// Takes every finished record batch, cutting the pending rows into one.
    /// Transactions still open at this point keep status `unknown`.
    pub fn finish(&mut self) -> Vec<RecordBatch> {
        if self.columns.rows > 0 || self.done.is_empty() {
            // Sized by the next `decode_record_batch`, if any.
            self.flush(0);
        }
        let mut from = 0;
        let batches = std::mem::take(&mut self.done)
            .into_iter()
            .map(|(mut columns, rows)| {
                let txn = txn_status_column();
                columns.insert(
                    txn,
                    if self.want[txn] {
                        self.txn.array(from, rows)
                    } else {
                        new_empty_array(message_schema().field(txn).data_type())
                    },
                );
                from += rows;
                match &self.projection {
                    None => RecordBatch::try_new(message_schema(), columns),
                    Some((order, schema)) => RecordBatch::try_new_with_options(
                        schema.clone(),
                        order.iter().map(|&i| columns[i].clone()).collect(),
                        &RecordBatchOptions::new().with_row_count(Some(rows)),
                    ),
                }
                .expect("columns match the message schema")
            })
            .collect();
        self.txn = TxnTracker::default();
        self.out_bytes = 0;
        batches
    }
}

/// Rows a batch of input entries will give, projected from its first entry
/// (topics are mostly homogeneous); capped so that one odd entry cannot
/// reserve much. Reading its metadata costs one parse without the checksum.
fn expected_rows(rows: &EntryRows<'_>, stored: usize) -> usize {
    const CAP: usize = FLUSH_BYTES / 64;
    let Some(first) = (0..rows.len().min(4)).find_map(|i| rows.data(i)) else {
        return 0;
    };
    let Ok(entry) = EntryView::parse(first, false) else {
        return 0;
    };
    let per_entry = entry.metadata.num_messages().max(1) as usize;
    let projected = per_entry as u128 * stored as u128 / first.len().max(1) as u128;
    (projected as usize).clamp(rows.len(), CAP.max(rows.len()))
}

/// The payload's codec and uncompressed size (the stored size for NONE).
pub(crate) fn payload_codec(entry: &EntryView<'_>) -> Result<(Codec, u32)> {
    let md = &entry.metadata;
    let raw = md.compression.unwrap_or(0);
    let codec =
        Codec::from_proto(raw).ok_or(EntryError::from(FormatError::UnknownCompression {
            value: raw,
            offset: entry.metadata_offset,
        }))?;
    let size = match (codec, md.uncompressed_size) {
        (Codec::None, _) => entry.payload.len() as u32,
        (_, Some(size)) => size,
        (_, None) => {
            return Err(EntryError::from(FormatError::Decompress {
                codec: codec.name(),
                offset: entry.payload_offset,
                reason: "compressed payload without uncompressed_size".into(),
            }))
        }
    };
    Ok((codec, size))
}

/// Where `r`'s value lies in `payload` (a record's payload is a sub-slice of it).
fn value_span(md: &MessageMetadataView<'_>, r: &BatchRecord<'_>, payload: &[u8]) -> Span {
    if r.metadata.null_value.or(md.null_value) == Some(true) {
        return Span::Null;
    }
    let src = r.payload.as_ptr() as usize - payload.as_ptr() as usize;
    debug_assert!(src + r.payload.len() <= payload.len());
    Span::At(src, r.payload.len())
}

/// Decodes one input batch into message batches.
pub fn decode_record_batch(input: &RecordBatch, opts: DecodeOptions) -> Result<Vec<RecordBatch>> {
    let mut decoder = Decoder::new(opts);
    decoder.decode_record_batch(input)?;
    Ok(decoder.finish())
}

#[cfg(test)]
mod tests;
