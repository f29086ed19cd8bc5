//! Entries → Arrow: one row per message, one error row per bad entry.
//!
//! An entry is validated completely (framing, checksum, metadata,
//! decompression, the processor's whole payload) before any of its rows is
//! appended, so a bad entry yields exactly one row carrying `error` and never
//! a partial set. Payloads are turned into messages by payload processors
//! (see [`crate::processor`]): Pulsar batches and KoP Kafka entries built in.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, MapBuilder,
    StringBuilder, StructBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::arrow_types::{
    properties_builder, properties_type, timestamp_builder as ts, timestamp_type,
};

use crate::compression::{Codec, Decompressor, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use crate::entries::EntryRows;
use crate::error::{EntryError, Result};
use crate::frame::EntryView;
use crate::processor::{
    base_offset, marker_message, single_message, EntryContext, Message, MessageHeaders,
    MessageProperties, Processors, PulsarProcessor, Sink, TxnKey, TxnOutcome,
};

/// The largest `max_uncompressed_size` accepted: keeps every output column's
/// 32-bit offsets safe whatever one entry holds.
pub const MAX_UNCOMPRESSED_SIZE_CAP: usize = 1 << 30;
/// Pending output bytes after which a record batch is cut.
const FLUSH_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy)]
pub struct DecodeOptions {
    pub verify_checksum: bool,
    pub keep_markers: bool,
    pub max_uncompressed_size: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            verify_checksum: true,
            keep_markers: false,
            max_uncompressed_size: DEFAULT_MAX_UNCOMPRESSED_SIZE,
        }
    }
}

fn header_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Binary, true),
    ])
}

fn headers_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(header_fields()),
        false,
    )))
}

/// Index of `txn_status`, which is filled when the decode finishes (read off
/// the schema so adding a column cannot misplace it).
fn txn_status_column() -> usize {
    static INDEX: OnceLock<usize> = OnceLock::new();
    *INDEX.get_or_init(|| {
        message_schema()
            .index_of("txn_status")
            .expect("txn_status is in the schema")
    })
}

/// Schema of the decode output, one row per message.
pub fn message_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let f = |name: &str, t: DataType| Field::new(name, t, true);
            let fields = vec![
                Field::new("ledger_id", DataType::Int64, false),
                Field::new("entry_id", DataType::Int64, false),
                Field::new("partition", DataType::Int32, false),
                f("batch_index", DataType::Int32),
                f("num_messages", DataType::Int32),
                f("producer_name", DataType::Utf8),
                f("sequence_id", DataType::Int64),
                f("publish_time", timestamp_type()),
                f("event_time", timestamp_type()),
                f("timestamp_type", DataType::Utf8),
                f("key", DataType::Utf8),
                f("key_b64_encoded", DataType::Boolean),
                f("ordering_key", DataType::Binary),
                f("properties", properties_type()),
                f("headers", headers_type()),
                f("value", DataType::Binary),
                f("compacted_out", DataType::Boolean),
                f("schema_version", DataType::Binary),
                f("compression", DataType::Utf8),
                f("uncompressed_size", DataType::Int64),
                f("encrypted", DataType::Boolean),
                f("broker_timestamp", timestamp_type()),
                f("broker_index", DataType::Int64),
                f("offset", DataType::Int64),
                f("uuid", DataType::Utf8),
                f("chunk_id", DataType::Int32),
                f("num_chunks", DataType::Int32),
                f("total_chunk_size", DataType::Int32),
                f("marker_type", DataType::Int32),
                f("txnid_most_bits", DataType::Int64),
                f("txnid_least_bits", DataType::Int64),
                f("txn_status", DataType::Utf8),
                f("replicated_from", DataType::Utf8),
                f("deliver_at_time", timestamp_type()),
                f("processor", DataType::Utf8),
                f("error", DataType::Utf8),
            ];
            Arc::new(Schema::new(fields))
        })
        .clone()
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy)]
pub struct EntryId {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
}

/// Column builders for the message schema (all but `txn_status`).
struct Columns {
    ledger_id: Int64Builder,
    entry_id: Int64Builder,
    partition: Int32Builder,
    batch_index: Int32Builder,
    num_messages: Int32Builder,
    producer_name: StringBuilder,
    sequence_id: Int64Builder,
    publish_time: TimestampMillisecondBuilder,
    event_time: TimestampMillisecondBuilder,
    timestamp_type: StringBuilder,
    key: StringBuilder,
    key_b64_encoded: BooleanBuilder,
    ordering_key: BinaryBuilder,
    properties: MapBuilder<StringBuilder, StringBuilder>,
    headers: ListBuilder<StructBuilder>,
    value: BinaryBuilder,
    compacted_out: BooleanBuilder,
    schema_version: BinaryBuilder,
    compression: StringBuilder,
    uncompressed_size: Int64Builder,
    encrypted: BooleanBuilder,
    broker_timestamp: TimestampMillisecondBuilder,
    broker_index: Int64Builder,
    offset: Int64Builder,
    uuid: StringBuilder,
    chunk_id: Int32Builder,
    num_chunks: Int32Builder,
    total_chunk_size: Int32Builder,
    marker_type: Int32Builder,
    txnid_most_bits: Int64Builder,
    txnid_least_bits: Int64Builder,
    replicated_from: StringBuilder,
    deliver_at_time: TimestampMillisecondBuilder,
    processor: StringBuilder,
    error: StringBuilder,
    rows: usize,
    bytes: usize,
}

fn headers_builder() -> ListBuilder<StructBuilder> {
    let fields = header_fields();
    let inner = StructBuilder::new(
        fields.clone(),
        vec![
            Box::new(StringBuilder::new()),
            Box::new(BinaryBuilder::new()),
        ],
    );
    ListBuilder::new(inner).with_field(Arc::new(Field::new(
        "item",
        DataType::Struct(fields),
        false,
    )))
}

/// What a row says beyond the entry: the message, or the error.
enum RowKind<'m, 'a> {
    Message(&'m Message<'a>, Option<i64>),
    Error(&'m str),
}

impl Columns {
    fn new() -> Self {
        Columns {
            ledger_id: Int64Builder::new(),
            entry_id: Int64Builder::new(),
            partition: Int32Builder::new(),
            batch_index: Int32Builder::new(),
            num_messages: Int32Builder::new(),
            producer_name: StringBuilder::new(),
            sequence_id: Int64Builder::new(),
            publish_time: ts(),
            event_time: ts(),
            timestamp_type: StringBuilder::new(),
            key: StringBuilder::new(),
            key_b64_encoded: BooleanBuilder::new(),
            ordering_key: BinaryBuilder::new(),
            properties: properties_builder(),
            headers: headers_builder(),
            value: BinaryBuilder::new(),
            compacted_out: BooleanBuilder::new(),
            schema_version: BinaryBuilder::new(),
            compression: StringBuilder::new(),
            uncompressed_size: Int64Builder::new(),
            encrypted: BooleanBuilder::new(),
            broker_timestamp: ts(),
            broker_index: Int64Builder::new(),
            offset: Int64Builder::new(),
            uuid: StringBuilder::new(),
            chunk_id: Int32Builder::new(),
            num_chunks: Int32Builder::new(),
            total_chunk_size: Int32Builder::new(),
            marker_type: Int32Builder::new(),
            txnid_most_bits: Int64Builder::new(),
            txnid_least_bits: Int64Builder::new(),
            replicated_from: StringBuilder::new(),
            deliver_at_time: ts(),
            processor: StringBuilder::new(),
            error: StringBuilder::new(),
            rows: 0,
            bytes: 0,
        }
    }

    /// Appends one row: entry-level columns from the entry (nulls when its
    /// metadata could not be read), message columns from `kind`.
    fn append(
        &mut self,
        id: EntryId,
        entry: Option<&EntryView<'_>>,
        processor: Option<&str>,
        kind: RowKind<'_, '_>,
    ) {
        self.rows += 1;
        self.ledger_id.append_value(id.ledger_id);
        self.entry_id.append_value(id.entry_id);
        self.partition.append_value(id.partition);
        let md = entry.map(|e| &e.metadata);
        let bem = entry.and_then(|e| e.broker_entry_metadata);
        let msg = match kind {
            RowKind::Message(m, _) => Some(m),
            RowKind::Error(_) => None,
        };
        self.num_messages
            .append_option(md.map(|m| m.num_messages()));
        self.producer_name
            .append_option(md.map(|m| m.producer_name));
        self.publish_time
            .append_option(md.map(|m| m.publish_time as i64));
        self.schema_version
            .append_option(md.and_then(|m| m.schema_version));
        self.compression
            .append_option(msg.and_then(|m| m.compression).or_else(|| {
                md.map(|m| {
                    Codec::from_proto(m.compression.unwrap_or(0)).map_or("unknown", Codec::name)
                })
            }));
        self.uncompressed_size
            .append_option(md.and_then(|m| m.uncompressed_size).map(i64::from));
        self.encrypted.append_option(md.map(|m| m.is_encrypted()));
        self.broker_timestamp
            .append_option(bem.and_then(|b| b.broker_timestamp).map(|t| t as i64));
        self.broker_index
            .append_option(bem.and_then(|b| b.index).map(|i| i as i64));
        let chunk = md.filter(|m| m.is_chunk());
        self.uuid.append_option(chunk.and_then(|m| m.uuid));
        self.chunk_id.append_option(chunk.and_then(|m| m.chunk_id));
        self.num_chunks
            .append_option(chunk.and_then(|m| m.num_chunks_from_msg));
        self.total_chunk_size
            .append_option(chunk.and_then(|m| m.total_chunk_msg_size));
        let marker = msg.and_then(|m| m.marker);
        self.marker_type.append_option(match marker {
            Some(mk) => mk.marker_type,
            None => md.and_then(|m| m.marker_type),
        });
        let (most, least) = match (msg.and_then(|m| m.txnid), md) {
            (Some((a, b)), _) => (Some(a), Some(b)),
            (None, Some(m)) => (
                m.txnid_most_bits.map(|v| v as i64),
                m.txnid_least_bits.map(|v| v as i64),
            ),
            (None, None) => (None, None),
        };
        self.txnid_most_bits.append_option(most);
        self.txnid_least_bits.append_option(least);
        self.replicated_from
            .append_option(md.and_then(|m| m.replicated_from));
        self.deliver_at_time
            .append_option(md.and_then(|m| m.deliver_at_time));
        self.processor.append_option(processor);
        match kind {
            RowKind::Message(m, offset) => {
                self.batch_index.append_option(m.batch_index);
                self.sequence_id.append_option(m.sequence_id);
                self.event_time.append_option(m.event_time);
                self.timestamp_type
                    .append_option(m.timestamp_type.map(|t| t.name()));
                self.key.append_option(m.key.as_deref());
                self.key_b64_encoded.append_value(m.key_b64_encoded);
                self.ordering_key.append_option(m.ordering_key);
                match &m.properties {
                    MessageProperties::Pulsar(p) => {
                        for (k, v) in p.iter() {
                            self.properties.keys().append_value(k);
                            self.properties.values().append_value(v);
                            self.bytes += k.len() + v.len();
                        }
                    }
                    MessageProperties::Pairs(pairs) => {
                        for (k, v) in pairs {
                            self.properties.keys().append_value(k);
                            self.properties.values().append_option(v.as_deref());
                            self.bytes += k.len() + v.as_deref().map_or(0, str::len);
                        }
                    }
                    MessageProperties::Headers(headers) => {
                        for (k, v) in headers.iter() {
                            self.properties
                                .keys()
                                .append_value(String::from_utf8_lossy(k));
                            self.properties
                                .values()
                                .append_option(v.map(String::from_utf8_lossy));
                            self.bytes += k.len() + v.map_or(0, <[u8]>::len);
                        }
                    }
                }
                self.properties
                    .append(true)
                    .expect("keys and values stay aligned");
                match &m.headers {
                    Some(MessageHeaders::Raw(headers)) => {
                        for (k, v) in headers.iter() {
                            self.append_header(&String::from_utf8_lossy(k), *v);
                        }
                        self.headers.append(true);
                    }
                    Some(MessageHeaders::Pairs(headers)) => {
                        for (k, v) in headers {
                            self.append_header(k, *v);
                        }
                        self.headers.append(true);
                    }
                    None => self.headers.append(false),
                }
                self.value.append_option(m.value);
                self.compacted_out.append_value(m.compacted_out);
                self.offset.append_option(offset);
                self.error.append_null();
                self.bytes +=
                    m.value.map_or(0, <[u8]>::len) + m.key.as_deref().map_or(0, str::len) + 64;
            }
            RowKind::Error(error) => {
                self.batch_index.append_null();
                self.sequence_id
                    .append_option(md.map(|m| m.sequence_id as i64));
                self.event_time.append_null();
                self.timestamp_type.append_null();
                self.key.append_null();
                self.key_b64_encoded.append_null();
                self.ordering_key.append_null();
                self.properties
                    .append(false)
                    .expect("keys and values stay aligned");
                self.headers.append(false);
                self.value.append_null();
                self.compacted_out.append_null();
                self.offset.append_null();
                self.error.append_value(error);
                self.bytes += error.len() + 64;
            }
        }
    }

    fn append_header(&mut self, key: &str, value: Option<&[u8]>) {
        let items = self.headers.values();
        items
            .field_builder::<StringBuilder>(0)
            .expect("header key builder")
            .append_value(key);
        items
            .field_builder::<BinaryBuilder>(1)
            .expect("header value builder")
            .append_option(value);
        items.append(true);
        self.bytes += key.len() + value.map_or(0, <[u8]>::len);
    }

    /// Finishes every column but `txn_status`, in schema order.
    fn finish(&mut self) -> (Vec<ArrayRef>, usize) {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.ledger_id.finish()),
            Arc::new(self.entry_id.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.batch_index.finish()),
            Arc::new(self.num_messages.finish()),
            Arc::new(self.producer_name.finish()),
            Arc::new(self.sequence_id.finish()),
            Arc::new(self.publish_time.finish()),
            Arc::new(self.event_time.finish()),
            Arc::new(self.timestamp_type.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.key_b64_encoded.finish()),
            Arc::new(self.ordering_key.finish()),
            Arc::new(self.properties.finish()),
            Arc::new(self.headers.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.compacted_out.finish()),
            Arc::new(self.schema_version.finish()),
            Arc::new(self.compression.finish()),
            Arc::new(self.uncompressed_size.finish()),
            Arc::new(self.encrypted.finish()),
            Arc::new(self.broker_timestamp.finish()),
            Arc::new(self.broker_index.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.chunk_id.finish()),
            Arc::new(self.num_chunks.finish()),
            Arc::new(self.total_chunk_size.finish()),
            Arc::new(self.marker_type.finish()),
            Arc::new(self.txnid_most_bits.finish()),
            Arc::new(self.txnid_least_bits.finish()),
            Arc::new(self.replicated_from.finish()),
            Arc::new(self.deliver_at_time.finish()),
            Arc::new(self.processor.finish()),
            Arc::new(self.error.finish()),
        ];
        let rows = self.rows;
        self.rows = 0;
        self.bytes = 0;
        (columns, rows)
    }
}

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

    fn array(&self, from: usize, len: usize) -> ArrayRef {
        let names = [None, Some("unknown"), Some("committed"), Some("aborted")];
        Arc::new(
            self.status[from..from + len]
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
            columns: Columns::new(),
            txn: TxnTracker::default(),
            done: Vec::new(),
        }
    }

    fn append_error(&mut self, id: EntryId, entry: Option<&EntryView<'_>>, error: &str) {
        self.txn.status.push(TxnTracker::NONE);
        self.columns.append(id, entry, None, RowKind::Error(error));
    }

    /// Appends the rows of one entry. `data: None` (a null cell) is an error row.
    pub fn decode_entry(&mut self, id: EntryId, data: Option<&[u8]>) {
        if self.columns.bytes >= FLUSH_BYTES {
            let batch = self.columns.finish();
            self.done.push(batch);
        }
        let Some(data) = data else {
            self.append_error(id, None, "entry data is null");
            return;
        };
        let entry = match EntryView::parse(data, self.opts.verify_checksum) {
            Ok(entry) => entry,
            Err(e) => {
                self.append_error(id, None, &e.to_string());
                return;
            }
        };
        if let Err(e) = self.decode_parsed(id, &entry) {
            self.append_error(id, Some(&entry), &e.to_string());
        }
    }

    fn decode_parsed(&mut self, id: EntryId, entry: &EntryView<'_>) -> Result<()> {
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
        let mut emit_as = |name: &str, messages: &[Message<'_>]| {
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
                columns.append(id, Some(entry), Some(name), RowKind::Message(m, offset));
            }
        };
        // Markers, encrypted payloads and single chunks are opaque: one row with
        // the stored payload. A chunk is a slice of the compressed stream, so it
        // is only decompressed after reassembly. None reaches a processor.
        if md.marker_type.is_some() {
            emit_as(PulsarProcessor::NAME, &[marker_message(md, entry.payload)]);
            return Ok(());
        }
        if md.is_encrypted() || md.is_chunk() {
            emit_as(PulsarProcessor::NAME, &[single_message(md, entry.payload)]);
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
        let raw = md.compression.unwrap_or(0);
        let codec = Codec::from_proto(raw).ok_or(EntryError::UnknownCompression {
            value: raw,
            offset: entry.metadata_offset,
        })?;
        let size = match (codec, md.uncompressed_size) {
            (Codec::None, _) => entry.payload.len() as u32,
            (_, Some(size)) => size,
            (_, None) => {
                return Err(EntryError::Decompress {
                    codec: codec.name(),
                    offset: entry.payload_offset,
                    reason: "compressed payload without uncompressed_size".into(),
                })
            }
        };
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
        let mut emit = |messages: &[Message<'_>]| emit_as(name, messages);
        processor.process(&ctx, payload, Sink { emit: &mut emit })
    }

    /// Decodes every entry of an input batch with columns `ledger_id`,
    /// `entry_id`, `data` (binary or large binary) and optional `partition`.
    pub fn decode_record_batch(&mut self, input: &RecordBatch) -> Result<()> {
        let rows = EntryRows::new(input)?;
        for i in 0..rows.len() {
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
            let batch = self.columns.finish();
            self.done.push(batch);
        }
        let mut from = 0;
        let batches = std::mem::take(&mut self.done)
            .into_iter()
            .map(|(mut columns, rows)| {
                columns.insert(txn_status_column(), self.txn.array(from, rows));
                from += rows;
                RecordBatch::try_new(message_schema(), columns)
                    .expect("columns match the message schema")
            })
            .collect();
        self.txn = TxnTracker::default();
        batches
    }
}

/// Decodes one input batch into message batches.
pub fn decode_record_batch(input: &RecordBatch, opts: DecodeOptions) -> Result<Vec<RecordBatch>> {
    let mut decoder = Decoder::new(opts);
    decoder.decode_record_batch(input)?;
    Ok(decoder.finish())
}
