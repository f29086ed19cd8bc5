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
use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::decode::arrow_types::{
    properties_builder, properties_type, timestamp_builder as ts, timestamp_type,
};

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, Result};
use crate::format::batch::{split_batch, BatchRecord, RecordBuf};
use crate::format::compression::{Codec, Decompressor};
use crate::format::frame::EntryView;
use crate::format::metadata::MessageMetadataView;
use crate::processor::api::{
    base_offset, DecodeOptions, EntryContext, EntryId, Message, MessageHeaders, MessageProperties,
    Sink, TxnKey, TxnOutcome,
};
use crate::processor::pulsar::{marker_message, pulsar_txn, single_message, PulsarProcessor};
use crate::processor::registry::Processors;

/// The largest `max_uncompressed_size` accepted: keeps every output column's
/// 32-bit offsets safe whatever one entry holds.
pub const MAX_UNCOMPRESSED_SIZE_CAP: usize = 1 << 30;
/// Pending output bytes after which a record batch is cut.
const FLUSH_BYTES: usize = 64 << 20;

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
    value: ValueColumn,
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

/// The `value` column, built by hand so that a payload can be decompressed
/// straight into its data buffer and compacted there: a value is written
/// once, by the decompressor, and moved once within cache-hot memory, where
/// a `BinaryBuilder` would copy it out of a separate decompression buffer.
struct ValueColumn {
    /// Committed values up to `end()`; the bytes after it are scratch, zeroed
    /// once and reused by the next entry's decompression.
    data: Vec<u8>,
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
}

impl ValueColumn {
    fn with_capacity(bytes: usize) -> Self {
        ValueColumn {
            data: Vec::with_capacity(bytes),
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
        }
    }

    /// End of the committed values (offsets fit i32: see `FLUSH_BYTES`).
    #[inline]
    fn end(&self) -> usize {
        self.offsets[self.offsets.len() - 1] as usize
    }

    /// Appends a value copied from elsewhere.
    #[inline]
    fn append_copy(&mut self, value: Option<&[u8]>) {
        let Some(v) = value else {
            self.offsets.push(self.end() as i32);
            self.nulls.append_null();
            return;
        };
        let at = self.end();
        let end = at + v.len();
        if self.data.len() >= end {
            self.data[at..end].copy_from_slice(v);
        } else {
            self.data.truncate(at);
            self.data.extend_from_slice(v);
        }
        self.offsets.push(end as i32);
        self.nulls.append_non_null();
    }

    /// Commits `data[end()..end() + len]` as the next value, or moves
    /// `data[src..src + len]` there first (`src >= end()`).
    #[inline]
    fn commit(&mut self, src: usize, len: usize) {
        let at = self.end();
        if src != at {
            self.data.copy_within(src..src + len, at);
        }
        self.offsets.push((at + len) as i32);
        self.nulls.append_non_null();
    }

    fn finish(&mut self) -> BinaryArray {
        let end = self.end();
        let mut data = std::mem::take(&mut self.data);
        data.truncate(end);
        // The capacity reserved from the input's size lives as long as the
        // array; give it back only when most of it went unused. Shrinking
        // always would return memory to the OS that the next batch faults in
        // again (measured: 2x the decode time).
        if data.capacity() / 3 > data.len() {
            data.shrink_to_fit();
        }
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        BinaryArray::new(offsets, Buffer::from_vec(data), self.nulls.finish())
    }
}

/// Where a batch record's value is, while the entry's rows are appended.
#[derive(Clone, Copy)]
enum Span {
    Null,
    /// Offset in the batch payload and length.
    At(usize, usize),
}

/// What a row says beyond the entry: the message, or the error.
enum RowKind<'m, 'a> {
    Message(&'m Message<'a>, Option<i64>),
    Error(&'m str),
}

fn prim_n<T: arrow_array::types::ArrowPrimitiveType>(
    b: &mut arrow_array::builder::PrimitiveBuilder<T>,
    v: Option<T::Native>,
    n: usize,
) {
    match v {
        Some(v) => b.append_value_n(v, n),
        None => b.append_nulls(n),
    }
}

fn bytes_n<T: arrow_array::types::ByteArrayType>(
    b: &mut arrow_array::builder::GenericByteBuilder<T>,
    v: Option<&T::Native>,
    n: usize,
) {
    match v {
        Some(v) => b.append_value_n(v, n),
        None => b.append_nulls(n),
    }
}

impl Columns {
    /// `value_bytes`: expected value bytes, reserved up front.
    fn new(value_bytes: usize) -> Self {
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
            value: ValueColumn::with_capacity(value_bytes),
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
                // The caller appends the value (copied or already in place).
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
                self.value.append_copy(None);
                self.compacted_out.append_null();
                self.offset.append_null();
                self.error.append_value(error);
                self.bytes += error.len() + 64;
            }
        }
    }

    /// The built-in Pulsar processor's rows for one entry, minus `value`: the
    /// entry-level columns once for all `records` (they are the same for every
    /// message), then each record's own columns. Row for row this equals
    /// `batch_message` + [`Columns::append`] (tested below).
    fn append_pulsar_batch(
        &mut self,
        id: EntryId,
        entry: &EntryView<'_>,
        codec: Codec,
        records: &[BatchRecord<'_>],
    ) {
        let n = records.len();
        let md = &entry.metadata;
        let bem = entry.broker_entry_metadata;
        self.rows += n;
        self.ledger_id.append_value_n(id.ledger_id, n);
        self.entry_id.append_value_n(id.entry_id, n);
        self.partition.append_value_n(id.partition, n);
        self.num_messages.append_value_n(md.num_messages(), n);
        self.producer_name.append_value_n(md.producer_name, n);
        self.publish_time.append_value_n(md.publish_time as i64, n);
        bytes_n(&mut self.schema_version, md.schema_version, n);
        self.compression.append_value_n(codec.name(), n);
        prim_n(
            &mut self.uncompressed_size,
            md.uncompressed_size.map(i64::from),
            n,
        );
        self.encrypted.append_n(n, md.is_encrypted());
        prim_n(
            &mut self.broker_timestamp,
            bem.and_then(|b| b.broker_timestamp).map(|t| t as i64),
            n,
        );
        prim_n(
            &mut self.broker_index,
            bem.and_then(|b| b.index).map(|i| i as i64),
            n,
        );
        let chunk = Some(md).filter(|m| m.is_chunk());
        bytes_n(&mut self.uuid, chunk.and_then(|m| m.uuid), n);
        prim_n(&mut self.chunk_id, chunk.and_then(|m| m.chunk_id), n);
        prim_n(
            &mut self.num_chunks,
            chunk.and_then(|m| m.num_chunks_from_msg),
            n,
        );
        prim_n(
            &mut self.total_chunk_size,
            chunk.and_then(|m| m.total_chunk_msg_size),
            n,
        );
        prim_n(&mut self.marker_type, md.marker_type, n);
        prim_n(
            &mut self.txnid_most_bits,
            md.txnid_most_bits.map(|v| v as i64),
            n,
        );
        prim_n(
            &mut self.txnid_least_bits,
            md.txnid_least_bits.map(|v| v as i64),
            n,
        );
        bytes_n(&mut self.replicated_from, md.replicated_from, n);
        prim_n(&mut self.deliver_at_time, md.deliver_at_time, n);
        self.processor.append_value_n(PulsarProcessor::NAME, n);
        self.timestamp_type.append_nulls(n);
        self.headers.append_nulls(n);
        self.error.append_nulls(n);
        let base = base_offset(entry);
        if base.is_none() {
            self.offset.append_nulls(n);
        }
        // Header fallbacks, as `batch_message` applies them.
        let null_key_default = md.null_partition_key;
        let null_value_default = md.null_value;
        for r in records {
            let smm = &r.metadata;
            self.batch_index.append_value(r.index);
            self.sequence_id
                .append_value(smm.sequence_id.unwrap_or(md.sequence_id) as i64);
            self.event_time.append_option(
                smm.event_time
                    .or(md.event_time)
                    .filter(|&t| t != 0)
                    .map(|t| t as i64),
            );
            let null_key = smm.null_partition_key.or(null_key_default) == Some(true);
            let key = smm.partition_key.filter(|_| !null_key);
            self.key.append_option(key);
            self.key_b64_encoded
                .append_value(smm.partition_key_b64_encoded == Some(true));
            self.ordering_key.append_option(smm.ordering_key);
            for (k, v) in smm.properties.iter() {
                self.properties.keys().append_value(k);
                self.properties.values().append_value(v);
                self.bytes += k.len() + v.len();
            }
            self.properties
                .append(true)
                .expect("keys and values stay aligned");
            self.compacted_out.append_value(smm.is_compacted_out());
            if let Some(b) = base {
                self.offset.append_value(b + i64::from(r.index.max(0)));
            }
            let null_value = smm.null_value.or(null_value_default) == Some(true);
            let value_len = if null_value { 0 } else { r.payload.len() };
            self.bytes += value_len + key.map_or(0, str::len) + 64;
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
            columns: Columns::new(0),
            txn: TxnTracker::default(),
            done: Vec::new(),
            records: RecordBuf::default(),
            spans: Vec::new(),
            value_hint: 0,
            in_done: 0,
            in_left: 0,
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
        let next = Columns::new(value_bytes);
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
        let md = &entry.metadata;
        let opaque = md.marker_type.is_some() || md.is_encrypted() || md.is_chunk();
        if !opaque
            && md.is_batch()
            && self
                .processors
                .select(md)
                .is_some_and(|p| p.is_builtin_pulsar())
        {
            let (codec, size) = payload_codec(entry)?;
            return self.decode_pulsar_batch(id, entry, codec, size);
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
                columns.value.append_copy(m.value);
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
        let mut emit = |messages: &[Message<'_>]| emit_as(name, messages);
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
            // copies the column or faults in fresh pages).
            let need = at + size as usize;
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
        for &span in spans.iter() {
            match span {
                Span::Null => values.append_copy(None),
                Span::At(src, len) if staged => values.commit(at + src, len),
                Span::At(src, len) => values.append_copy(Some(&entry.payload[src..src + len])),
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
            // Sized by the next `decode_record_batch`, if any.
            self.flush(0);
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

/// The payload's codec and uncompressed size (the stored size for NONE).
pub(crate) fn payload_codec(entry: &EntryView<'_>) -> Result<(Codec, u32)> {
    let md = &entry.metadata;
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
mod tests {
    use super::*;
    use crate::format::encode::{encode_entry, frame_entry, EncodeOptions, Key, MessageInput};
    use crate::processor::{PayloadProcessor, Selector};
    use crate::proto;
    use arrow_array::{Array, BinaryArray, Int64Array};
    use prost::Message as _;

    /// The built-in processor behind the generic `process` + `emit` path.
    struct Generic(PulsarProcessor, Selector);

    impl PayloadProcessor for Generic {
        fn name(&self) -> &str {
            PulsarProcessor::NAME
        }
        fn selector(&self) -> &Selector {
            &self.1
        }
        fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()> {
            self.0.process(ctx, payload, sink)
        }
    }

    fn input(entries: &[Vec<u8>]) -> RecordBatch {
        let n = entries.len() as i64;
        RecordBatch::try_from_iter([
            (
                "ledger_id",
                Arc::new(Int64Array::from(vec![3; n as usize])) as ArrayRef,
            ),
            (
                "entry_id",
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "data",
                Arc::new(BinaryArray::from_iter_values(entries.iter())) as ArrayRef,
            ),
        ])
        .unwrap()
    }

    /// Re-frames `entry` with its MessageMetadata changed by `f`.
    fn remeta(entry: &[u8], f: impl FnOnce(&mut proto::MessageMetadata)) -> Vec<u8> {
        let v = EntryView::parse(entry, true).unwrap();
        let mut md =
            proto::MessageMetadata::decode(&entry[v.metadata_offset..v.payload_offset]).unwrap();
        f(&mut md);
        let bem = v.broker_entry_metadata.map(|b| proto::BrokerEntryMetadata {
            broker_timestamp: b.broker_timestamp,
            index: b.index,
        });
        frame_entry(&md, v.payload, true, bem.as_ref())
    }

    fn corpus() -> Vec<Vec<u8>> {
        let mut out = vec![];
        let mut seq = 0u64;
        for codec in Codec::ALL {
            for n in [1usize, 3, 20] {
                let messages: Vec<MessageInput> = (0..n)
                    .map(|i| MessageInput {
                        value: (i % 7 != 3)
                            .then(|| format!("value {i} {}", "x".repeat(i * 13)).into_bytes()),
                        key: match i % 4 {
                            0 => None,
                            1 => Some(Key::Binary(vec![0, 1, i as u8])),
                            _ => Some(Key::Text(format!("k{i}"))),
                        },
                        properties: (0..i % 3)
                            .map(|j| (format!("p{j}"), format!("v{i}.{j}")))
                            .collect(),
                        event_time: (i % 2 == 0).then_some(1_000 + i as u64),
                        sequence_id: (i % 5 == 4).then_some(99),
                        ordering_key: (i % 3 == 1).then(|| vec![7, i as u8]),
                    })
                    .collect();
                seq += 100;
                let opts = EncodeOptions {
                    batch: Some(true),
                    compression: codec,
                    sequence_id: seq,
                    broker_index: (n != 3).then_some(seq * 10),
                    broker_timestamp: (n == 20).then_some(5),
                    ..Default::default()
                };
                let e = encode_entry(&messages, &opts).unwrap();
                out.push(e.clone());
                // Header fallbacks: null values and null keys for all records.
                out.push(remeta(&e, |md| {
                    md.null_value = Some(true);
                    md.null_partition_key = Some(true);
                    md.event_time = Some(77);
                }));
                // Transactions, committed by a marker later in the input.
                out.push(remeta(&e, |md| {
                    md.txnid_most_bits = Some(1);
                    md.txnid_least_bits = Some(n as u64);
                }));
                // Retained-only compacted shape (PIP-429): indexes from the header.
                out.push(remeta(&e, |md| {
                    md.num_messages_in_batch = Some(n as i32 + 2);
                    md.compacted_batch_indexes = (0..n as i32).map(|i| i + 2).collect();
                }));
                // A bad record count: one error row, then the next entry reuses the scratch.
                out.push(remeta(&e, |md| {
                    md.num_messages_in_batch = Some(n as i32 + 1)
                }));
                if codec != Codec::None {
                    out.push(remeta(&e, |md| {
                        md.uncompressed_size = Some(md.uncompressed_size.unwrap() + 1)
                    }));
                }
            }
        }
        let marker = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
        out.push(remeta(&marker, |md| {
            md.marker_type = Some(21);
            md.txnid_most_bits = Some(1);
            md.txnid_least_bits = Some(3);
        }));
        out
    }

    #[test]
    fn builtin_batches_decode_exactly_like_the_generic_processor_path() {
        let entries = corpus();
        let data = input(&entries);
        let generic = Processors::new(vec![Arc::new(Generic(
            PulsarProcessor::new(),
            Selector::Any,
        ))]);
        let mut fast = Decoder::with_processors(DecodeOptions::default(), Processors::default());
        let mut slow = Decoder::with_processors(DecodeOptions::default(), generic);
        fast.decode_record_batch(&data).unwrap();
        slow.decode_record_batch(&data).unwrap();
        let (fast, slow) = (fast.finish(), slow.finish());
        assert_eq!(fast.len(), 1);
        assert_eq!(fast, slow);
        let b = &fast[0];
        let errors = b.column_by_name("error").unwrap();
        assert!(
            errors.null_count() < b.num_rows(),
            "the corpus has bad entries"
        );
        assert!(errors.null_count() > b.num_rows() / 2);
        let status = b.column_by_name("txn_status").unwrap();
        assert!(status
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .iter()
            .any(|s| s == Some("committed")));
    }

    #[test]
    fn value_column_reuses_scratch_and_gives_capacity_back() {
        let mut v = ValueColumn::with_capacity(1 << 20);
        v.append_copy(Some(b"abc"));
        v.data.extend_from_slice(b"__xyz");
        v.commit(3 + 2, 3);
        v.append_copy(None);
        v.append_copy(Some(b"d"));
        let a = v.finish();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            vec![Some(&b"abc"[..]), Some(b"xyz"), None, Some(b"d")]
        );
        assert!(a.get_buffer_memory_size() < 4096);
    }
}
