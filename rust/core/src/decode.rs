//! Entries → Arrow: one row per message, one error row per bad entry.
//!
//! An entry is validated completely (framing, checksum, metadata,
//! decompression, every batch record) before any of its rows is appended, so
//! a bad entry yields exactly one row carrying `error` and never a partial set.

use std::sync::{Arc, OnceLock};

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, MapBuilder, MapFieldNames,
    StringBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, Int32Array, Int64Array, LargeBinaryArray, RecordBatch,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::batch::{split_batch, BatchRecord};
use crate::compression::{Codec, Decompressor, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use crate::error::{EntryError, Result};
use crate::frame::EntryView;
use crate::metadata::{MessageMetadataView, Properties};

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

fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

fn map_field_names() -> MapFieldNames {
    MapFieldNames {
        entry: "entries".into(),
        key: "key".into(),
        value: "value".into(),
    }
}

fn properties_type() -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, true),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// Schema of the decode output, one row per message.
pub fn message_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let f = |name: &str, t: DataType| Field::new(name, t, true);
            Arc::new(Schema::new(vec![
                Field::new("ledger_id", DataType::Int64, false),
                Field::new("entry_id", DataType::Int64, false),
                Field::new("partition", DataType::Int32, false),
                f("batch_index", DataType::Int32),
                f("num_messages", DataType::Int32),
                f("producer_name", DataType::Utf8),
                f("sequence_id", DataType::Int64),
                f("publish_time", timestamp_type()),
                f("event_time", timestamp_type()),
                f("key", DataType::Utf8),
                f("key_b64_encoded", DataType::Boolean),
                f("ordering_key", DataType::Binary),
                f("properties", properties_type()),
                f("value", DataType::Binary),
                f("compacted_out", DataType::Boolean),
                f("schema_version", DataType::Binary),
                f("compression", DataType::Utf8),
                f("uncompressed_size", DataType::Int64),
                f("encrypted", DataType::Boolean),
                f("broker_timestamp", timestamp_type()),
                f("broker_index", DataType::Int64),
                f("uuid", DataType::Utf8),
                f("chunk_id", DataType::Int32),
                f("num_chunks", DataType::Int32),
                f("total_chunk_size", DataType::Int32),
                f("marker_type", DataType::Int32),
                f("txnid_most_bits", DataType::Int64),
                f("txnid_least_bits", DataType::Int64),
                f("replicated_from", DataType::Utf8),
                f("deliver_at_time", timestamp_type()),
                f("error", DataType::Utf8),
            ]))
        })
        .clone()
}

/// Per-message fields of one output row.
#[derive(Default)]
struct Message<'a> {
    batch_index: i32,
    sequence_id: u64,
    event_time: Option<u64>,
    key: Option<&'a str>,
    key_b64: Option<bool>,
    ordering_key: Option<&'a [u8]>,
    properties: Properties<'a>,
    /// `None` for a null value.
    value: Option<&'a [u8]>,
    compacted_out: bool,
}

impl<'a> Message<'a> {
    fn whole_entry(md: &MessageMetadataView<'a>, value: &'a [u8]) -> Self {
        Message {
            batch_index: -1,
            sequence_id: md.sequence_id,
            event_time: md.event_time,
            key: md
                .partition_key
                .filter(|_| md.null_partition_key != Some(true)),
            key_b64: md.partition_key_b64_encoded,
            ordering_key: md.ordering_key,
            properties: md.properties,
            value: (md.null_value != Some(true)).then_some(value),
            compacted_out: false,
        }
    }

    /// A batch member as Java's consumer builds it (`MessageImpl.create`): the
    /// key, ordering key and properties come only from the record; sequence id,
    /// event time and the null flags fall back to the batch header.
    fn from_record(md: &MessageMetadataView<'a>, r: &BatchRecord<'a>) -> Self {
        let smm = &r.metadata;
        let null_key = smm.null_partition_key.or(md.null_partition_key) == Some(true);
        let null_value = smm.null_value.or(md.null_value) == Some(true);
        Message {
            batch_index: r.index,
            sequence_id: smm.sequence_id.unwrap_or(md.sequence_id),
            event_time: smm.event_time.or(md.event_time),
            key: smm.partition_key.filter(|_| !null_key),
            key_b64: smm.partition_key_b64_encoded,
            ordering_key: smm.ordering_key,
            properties: smm.properties,
            value: (!null_value).then_some(r.payload),
            compacted_out: smm.is_compacted_out(),
        }
    }
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy)]
pub struct EntryId {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
}

/// Column builders for the message schema.
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
    key: StringBuilder,
    key_b64_encoded: BooleanBuilder,
    ordering_key: BinaryBuilder,
    properties: MapBuilder<StringBuilder, StringBuilder>,
    value: BinaryBuilder,
    compacted_out: BooleanBuilder,
    schema_version: BinaryBuilder,
    compression: StringBuilder,
    uncompressed_size: Int64Builder,
    encrypted: BooleanBuilder,
    broker_timestamp: TimestampMillisecondBuilder,
    broker_index: Int64Builder,
    uuid: StringBuilder,
    chunk_id: Int32Builder,
    num_chunks: Int32Builder,
    total_chunk_size: Int32Builder,
    marker_type: Int32Builder,
    txnid_most_bits: Int64Builder,
    txnid_least_bits: Int64Builder,
    replicated_from: StringBuilder,
    deliver_at_time: TimestampMillisecondBuilder,
    error: StringBuilder,
    rows: usize,
    bytes: usize,
}

fn ts() -> TimestampMillisecondBuilder {
    TimestampMillisecondBuilder::new().with_timezone("UTC")
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
            key: StringBuilder::new(),
            key_b64_encoded: BooleanBuilder::new(),
            ordering_key: BinaryBuilder::new(),
            properties: MapBuilder::new(
                Some(map_field_names()),
                StringBuilder::new(),
                StringBuilder::new(),
            ),
            value: BinaryBuilder::new(),
            compacted_out: BooleanBuilder::new(),
            schema_version: BinaryBuilder::new(),
            compression: StringBuilder::new(),
            uncompressed_size: Int64Builder::new(),
            encrypted: BooleanBuilder::new(),
            broker_timestamp: ts(),
            broker_index: Int64Builder::new(),
            uuid: StringBuilder::new(),
            chunk_id: Int32Builder::new(),
            num_chunks: Int32Builder::new(),
            total_chunk_size: Int32Builder::new(),
            marker_type: Int32Builder::new(),
            txnid_most_bits: Int64Builder::new(),
            txnid_least_bits: Int64Builder::new(),
            replicated_from: StringBuilder::new(),
            deliver_at_time: ts(),
            error: StringBuilder::new(),
            rows: 0,
            bytes: 0,
        }
    }

    /// Appends the entry-level columns (everything the MessageMetadata and the
    /// broker prefix say), or nulls when the metadata could not be read.
    fn append_entry(&mut self, id: EntryId, entry: Option<&EntryView<'_>>) {
        self.rows += 1;
        self.ledger_id.append_value(id.ledger_id);
        self.entry_id.append_value(id.entry_id);
        self.partition.append_value(id.partition);
        let md = entry.map(|e| &e.metadata);
        let bem = entry.and_then(|e| e.broker_entry_metadata);
        self.num_messages
            .append_option(md.map(|m| m.num_messages()));
        self.producer_name
            .append_option(md.map(|m| m.producer_name));
        self.publish_time
            .append_option(md.map(|m| m.publish_time as i64));
        self.schema_version
            .append_option(md.and_then(|m| m.schema_version));
        self.compression.append_option(
            md.map(|m| {
                Codec::from_proto(m.compression.unwrap_or(0)).map_or("unknown", Codec::name)
            }),
        );
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
        self.marker_type
            .append_option(md.and_then(|m| m.marker_type));
        self.txnid_most_bits
            .append_option(md.and_then(|m| m.txnid_most_bits).map(|v| v as i64));
        self.txnid_least_bits
            .append_option(md.and_then(|m| m.txnid_least_bits).map(|v| v as i64));
        self.replicated_from
            .append_option(md.and_then(|m| m.replicated_from));
        self.deliver_at_time
            .append_option(md.and_then(|m| m.deliver_at_time));
    }

    fn append_message(&mut self, id: EntryId, entry: &EntryView<'_>, m: &Message<'_>) {
        self.append_entry(id, Some(entry));
        self.batch_index.append_value(m.batch_index);
        self.sequence_id.append_value(m.sequence_id as i64);
        self.event_time
            .append_option(m.event_time.filter(|&t| t != 0).map(|t| t as i64));
        self.key.append_option(m.key);
        self.key_b64_encoded.append_value(m.key_b64 == Some(true));
        self.ordering_key.append_option(m.ordering_key);
        for (k, v) in m.properties.iter() {
            self.properties.keys().append_value(k);
            self.properties.values().append_value(v);
            self.bytes += k.len() + v.len();
        }
        self.properties
            .append(true)
            .expect("keys and values stay aligned");
        self.value.append_option(m.value);
        self.compacted_out.append_value(m.compacted_out);
        self.error.append_null();
        self.bytes += m.value.map_or(0, <[u8]>::len) + m.key.map_or(0, str::len) + 64;
    }

    fn append_error(&mut self, id: EntryId, entry: Option<&EntryView<'_>>, error: &str) {
        self.append_entry(id, entry);
        self.batch_index.append_null();
        self.sequence_id
            .append_option(entry.map(|e| e.metadata.sequence_id as i64));
        self.event_time.append_null();
        self.key.append_null();
        self.key_b64_encoded.append_null();
        self.ordering_key.append_null();
        self.properties
            .append(false)
            .expect("keys and values stay aligned");
        self.value.append_null();
        self.compacted_out.append_null();
        self.error.append_value(error);
        self.bytes += error.len() + 64;
    }

    fn finish(&mut self) -> RecordBatch {
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
            Arc::new(self.key.finish()),
            Arc::new(self.key_b64_encoded.finish()),
            Arc::new(self.ordering_key.finish()),
            Arc::new(self.properties.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.compacted_out.finish()),
            Arc::new(self.schema_version.finish()),
            Arc::new(self.compression.finish()),
            Arc::new(self.uncompressed_size.finish()),
            Arc::new(self.encrypted.finish()),
            Arc::new(self.broker_timestamp.finish()),
            Arc::new(self.broker_index.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.chunk_id.finish()),
            Arc::new(self.num_chunks.finish()),
            Arc::new(self.total_chunk_size.finish()),
            Arc::new(self.marker_type.finish()),
            Arc::new(self.txnid_most_bits.finish()),
            Arc::new(self.txnid_least_bits.finish()),
            Arc::new(self.replicated_from.finish()),
            Arc::new(self.deliver_at_time.finish()),
            Arc::new(self.error.finish()),
        ];
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(message_schema(), columns).expect("columns match the message schema")
    }
}

/// Decodes entries into message rows, reusing its buffers across entries.
pub struct Decoder {
    opts: DecodeOptions,
    decompressor: Decompressor,
    columns: Columns,
    done: Vec<RecordBatch>,
}

impl Decoder {
    pub fn new(mut opts: DecodeOptions) -> Self {
        opts.max_uncompressed_size = opts.max_uncompressed_size.min(MAX_UNCOMPRESSED_SIZE_CAP);
        Decoder {
            opts,
            decompressor: Decompressor::default(),
            columns: Columns::new(),
            done: Vec::new(),
        }
    }

    /// Appends the rows of one entry. `data: None` (a null cell) is an error row.
    pub fn decode_entry(&mut self, id: EntryId, data: Option<&[u8]>) {
        if self.columns.bytes >= FLUSH_BYTES {
            let batch = self.columns.finish();
            self.done.push(batch);
        }
        let Some(data) = data else {
            self.columns.append_error(id, None, "entry data is null");
            return;
        };
        let entry = match EntryView::parse(data, self.opts.verify_checksum) {
            Ok(entry) => entry,
            Err(e) => {
                self.columns.append_error(id, None, &e.to_string());
                return;
            }
        };
        if let Err(e) = self.decode_parsed(id, &entry) {
            self.columns.append_error(id, Some(&entry), &e.to_string());
        }
    }

    fn decode_parsed(&mut self, id: EntryId, entry: &EntryView<'_>) -> Result<()> {
        let md = &entry.metadata;
        if md.marker_type.is_some() && !self.opts.keep_markers {
            return Ok(());
        }
        // Markers, encrypted payloads and single chunks are opaque: one row with
        // the stored payload. A chunk is a slice of the compressed stream, so it
        // is only decompressed after reassembly.
        if md.marker_type.is_some() || md.is_encrypted() || md.is_chunk() {
            self.columns
                .append_message(id, entry, &Message::whole_entry(md, entry.payload));
            return Ok(());
        }
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
        let payload = self.decompressor.decompress(
            codec,
            entry.payload,
            size,
            self.opts.max_uncompressed_size,
            entry.payload_offset,
        )?;
        if !md.is_batch() {
            self.columns
                .append_message(id, entry, &Message::whole_entry(md, payload));
            return Ok(());
        }
        let mut records = Vec::new();
        split_batch(payload, md, &mut records)?;
        for r in &records {
            self.columns
                .append_message(id, entry, &Message::from_record(md, r));
        }
        Ok(())
    }

    /// Decodes every entry of an input batch with columns `ledger_id`,
    /// `entry_id`, `data` (binary or large binary) and optional `partition`.
    pub fn decode_record_batch(&mut self, input: &RecordBatch) -> Result<()> {
        let ledger = int_column::<Int64Array>(input, "ledger_id", &DataType::Int64)?;
        let entry = int_column::<Int64Array>(input, "entry_id", &DataType::Int64)?;
        let partition = match input.schema().column_with_name("partition") {
            Some(_) => Some(int_column::<Int32Array>(
                input,
                "partition",
                &DataType::Int32,
            )?),
            None => None,
        };
        let data = input
            .column_by_name("data")
            .ok_or_else(|| EntryError::Input("input has no `data` column".into()))?;
        let ledger = ledger.as_any().downcast_ref::<Int64Array>().unwrap();
        let entry = entry.as_any().downcast_ref::<Int64Array>().unwrap();
        let partition = partition
            .as_ref()
            .map(|p| p.as_any().downcast_ref::<Int32Array>().unwrap());
        let id_at = |i: usize| EntryId {
            ledger_id: if ledger.is_null(i) {
                -1
            } else {
                ledger.value(i)
            },
            entry_id: if entry.is_null(i) { -1 } else { entry.value(i) },
            partition: partition
                .filter(|p| !p.is_null(i))
                .map_or(-1, |p| p.value(i)),
        };
        match data.data_type() {
            DataType::Binary => {
                let data = data.as_any().downcast_ref::<BinaryArray>().unwrap();
                for i in 0..input.num_rows() {
                    self.decode_entry(id_at(i), (!data.is_null(i)).then(|| data.value(i)));
                }
            }
            DataType::LargeBinary => {
                let data = data.as_any().downcast_ref::<LargeBinaryArray>().unwrap();
                for i in 0..input.num_rows() {
                    self.decode_entry(id_at(i), (!data.is_null(i)).then(|| data.value(i)));
                }
            }
            DataType::BinaryView => {
                let data = data
                    .as_any()
                    .downcast_ref::<arrow_array::BinaryViewArray>()
                    .unwrap();
                for i in 0..input.num_rows() {
                    self.decode_entry(id_at(i), (!data.is_null(i)).then(|| data.value(i)));
                }
            }
            other => {
                return Err(EntryError::Input(format!(
                    "`data` must be binary or large_binary, not {other}"
                )))
            }
        }
        Ok(())
    }

    /// Rows decoded so far that have not been taken.
    pub fn pending_rows(&self) -> usize {
        self.columns.rows
    }

    /// Takes every finished record batch, cutting the pending rows into one.
    pub fn finish(&mut self) -> Vec<RecordBatch> {
        if self.columns.rows > 0 || self.done.is_empty() {
            let batch = self.columns.finish();
            self.done.push(batch);
        }
        std::mem::take(&mut self.done)
    }
}

/// An integer column cast to the expected type (int32 ids are accepted).
fn int_column<T: Array + 'static>(
    input: &RecordBatch,
    name: &str,
    to: &DataType,
) -> Result<ArrayRef> {
    let col = input
        .column_by_name(name)
        .ok_or_else(|| EntryError::Input(format!("input has no `{name}` column")))?;
    if col.data_type() == to {
        return Ok(col.clone());
    }
    if !col.data_type().is_integer() {
        return Err(EntryError::Input(format!(
            "`{name}` must be an integer column, not {}",
            col.data_type()
        )));
    }
    arrow_cast::cast(col, to).map_err(|e| EntryError::Input(format!("`{name}`: {e}")))
}

/// Decodes one input batch into message batches.
pub fn decode_record_batch(input: &RecordBatch, opts: DecodeOptions) -> Result<Vec<RecordBatch>> {
    let mut decoder = Decoder::new(opts);
    decoder.decode_record_batch(input)?;
    Ok(decoder.finish())
}
