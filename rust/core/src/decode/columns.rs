//! Column builders for the message schema: one row per message or bad entry,
//! values copied or committed straight from a staged payload.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
    TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, BinaryArray};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use super::schema::{header_fields, message_schema};
use crate::format::batch::BatchRecord;
use crate::format::compression::Codec;
use crate::format::frame::EntryView;
use crate::processor::api::{base_offset, EntryId, Message, MessageHeaders, MessageProperties};
use crate::processor::pulsar::PulsarProcessor;

mod batch;
mod runs;
mod value;

pub(super) use runs::null_array;
use runs::{BoolRun, NullRun, PropertiesColumn};

pub(super) use value::ValueColumn;

// Positions of the columns in `message_schema()` (a test checks them).
pub(super) const LEDGER_ID: usize = 0;
pub(super) const ENTRY_ID: usize = 1;
pub(super) const PARTITION: usize = 2;
pub(super) const BATCH_INDEX: usize = 3;
pub(super) const NUM_MESSAGES: usize = 4;
pub(super) const PRODUCER_NAME: usize = 5;
pub(super) const SEQUENCE_ID: usize = 6;
pub(super) const PUBLISH_TIME: usize = 7;
pub(super) const EVENT_TIME: usize = 8;
pub(super) const TIMESTAMP_TYPE: usize = 9;
pub(super) const KEY: usize = 10;
pub(super) const KEY_B64_ENCODED: usize = 11;
pub(super) const ORDERING_KEY: usize = 12;
pub(super) const PROPERTIES: usize = 13;
pub(super) const HEADERS: usize = 14;
pub(super) const COMPACTED_OUT: usize = 16;
pub(super) const SCHEMA_VERSION: usize = 17;
pub(super) const COMPRESSION: usize = 18;
pub(super) const UNCOMPRESSED_SIZE: usize = 19;
pub(super) const ENCRYPTED: usize = 20;
pub(super) const BROKER_TIMESTAMP: usize = 21;
pub(super) const BROKER_INDEX: usize = 22;
pub(super) const OFFSET: usize = 23;
pub(super) const UUID: usize = 24;
pub(super) const CHUNK_ID: usize = 25;
pub(super) const NUM_CHUNKS: usize = 26;
pub(super) const TOTAL_CHUNK_SIZE: usize = 27;
pub(super) const MARKER_TYPE: usize = 28;
pub(super) const TXNID_MOST_BITS: usize = 29;
pub(super) const TXNID_LEAST_BITS: usize = 30;
pub(super) const REPLICATED_FROM: usize = 32;
pub(super) const DELIVER_AT_TIME: usize = 33;
pub(super) const PROCESSOR: usize = 34;
pub(super) const ERROR: usize = 35;
/// Number of columns in the message schema.
pub(super) const COLUMNS: usize = 36;

/// Which schema columns are built: the others get no appends at all.
pub(super) type Want = [bool; COLUMNS];

/// Column builders for the message schema (all but `txn_status`).
pub(super) struct Columns {
    pub(super) ledger_id: Int64Builder,
    pub(super) entry_id: Int64Builder,
    pub(super) partition: Int32Builder,
    pub(super) batch_index: NullRun<Int32Builder>,
    pub(super) num_messages: NullRun<Int32Builder>,
    pub(super) producer_name: NullRun<StringBuilder>,
    pub(super) sequence_id: NullRun<Int64Builder>,
    pub(super) publish_time: NullRun<TimestampMillisecondBuilder>,
    pub(super) event_time: NullRun<TimestampMillisecondBuilder>,
    pub(super) timestamp_type: NullRun<StringBuilder>,
    pub(super) key: NullRun<StringBuilder>,
    pub(super) key_b64_encoded: BoolRun,
    pub(super) ordering_key: NullRun<BinaryBuilder>,
    pub(super) properties: PropertiesColumn,
    pub(super) headers: NullRun<ListBuilder<StructBuilder>>,
    pub(super) value: ValueColumn,
    pub(super) compacted_out: BoolRun,
    pub(super) schema_version: NullRun<BinaryBuilder>,
    pub(super) compression: NullRun<StringBuilder>,
    pub(super) uncompressed_size: NullRun<Int64Builder>,
    pub(super) encrypted: BoolRun,
    pub(super) broker_timestamp: NullRun<TimestampMillisecondBuilder>,
    pub(super) broker_index: NullRun<Int64Builder>,
    pub(super) offset: NullRun<Int64Builder>,
    pub(super) uuid: NullRun<StringBuilder>,
    pub(super) chunk_id: NullRun<Int32Builder>,
    pub(super) num_chunks: NullRun<Int32Builder>,
    pub(super) total_chunk_size: NullRun<Int32Builder>,
    pub(super) marker_type: NullRun<Int32Builder>,
    pub(super) txnid_most_bits: NullRun<Int64Builder>,
    pub(super) txnid_least_bits: NullRun<Int64Builder>,
    pub(super) replicated_from: NullRun<StringBuilder>,
    pub(super) deliver_at_time: NullRun<TimestampMillisecondBuilder>,
    pub(super) processor: NullRun<StringBuilder>,
    pub(super) error: NullRun<StringBuilder>,
    pub(super) rows: usize,
    pub(super) bytes: usize,
    /// Unrequested columns stay empty (their arrays are dropped at finish).
    pub(super) want: Want,
}

pub(super) fn headers_builder() -> ListBuilder<StructBuilder> {
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

/// Where a batch record's value is, while the entry's rows are appended.
#[derive(Clone, Copy)]
pub(super) enum Span {
    Null,
    /// Offset in the batch payload and length.
    At(usize, usize),
}

/// What a row says beyond the entry: the message, or the error.
pub(super) enum RowKind<'m, 'a> {
    /// A message, its offset and, for a row kept as it is stored (an
    /// entry that could not be decrypted), why.
    Message(&'m Message<'a>, Option<i64>, Option<&'m str>),
    Error(&'m str),
}

impl Columns {
    /// `value_bytes`: expected value bytes, reserved up front; `want`: the
    /// columns to build; `rows`: expected rows, reserved up front in every
    /// wanted column (growing by doubling copies each column and faults in
    /// fresh pages several times over).
    pub(super) fn new(value_bytes: usize, want: Want, rows: usize) -> Self {
        let n = |c: usize| if want[c] { rows } else { 0 };
        // Columns that are mostly null (`sparse`) start small: a run of
        // nulls up to `finish` is never written (see `runs`).
        let int64 = |c| Int64Builder::with_capacity(n(c));
        let int32 = |c| NullRun::new(Int32Builder::with_capacity, n(c));
        let long = |c| NullRun::new(Int64Builder::with_capacity, n(c));
        let ts = |c| {
            NullRun::new(
                |r| TimestampMillisecondBuilder::with_capacity(r).with_timezone("UTC"),
                n(c),
            )
        };
        // Text columns: `bytes` per row of text.
        let text = |c, make: fn(usize) -> StringBuilder| NullRun::new(make, n(c));
        let bin = |c| NullRun::new(|r| BinaryBuilder::with_capacity(r, 0), n(c));
        let bool_ = |c| BoolRun::new(n(c));
        Columns {
            ledger_id: int64(LEDGER_ID),
            entry_id: int64(ENTRY_ID),
            partition: Int32Builder::with_capacity(n(PARTITION)),
            batch_index: int32(BATCH_INDEX),
            num_messages: int32(NUM_MESSAGES),
            producer_name: text(PRODUCER_NAME, |r| StringBuilder::with_capacity(r, r * 16)),
            sequence_id: long(SEQUENCE_ID),
            publish_time: ts(PUBLISH_TIME),
            event_time: ts(EVENT_TIME),
            timestamp_type: text(TIMESTAMP_TYPE, |r| StringBuilder::with_capacity(r, 0)),
            key: text(KEY, |r| StringBuilder::with_capacity(r, r * 16)),
            key_b64_encoded: bool_(KEY_B64_ENCODED),
            ordering_key: bin(ORDERING_KEY),
            properties: PropertiesColumn::new(n(PROPERTIES)),
            headers: NullRun::new(|_| headers_builder(), 0),
            value: ValueColumn::with_capacity(value_bytes),
            compacted_out: bool_(COMPACTED_OUT),
            schema_version: bin(SCHEMA_VERSION),
            compression: text(COMPRESSION, |r| StringBuilder::with_capacity(r, r * 4)),
            uncompressed_size: long(UNCOMPRESSED_SIZE),
            encrypted: bool_(ENCRYPTED),
            broker_timestamp: ts(BROKER_TIMESTAMP),
            broker_index: long(BROKER_INDEX),
            offset: long(OFFSET),
            uuid: text(UUID, |r| StringBuilder::with_capacity(r, 0)),
            chunk_id: int32(CHUNK_ID),
            num_chunks: int32(NUM_CHUNKS),
            total_chunk_size: int32(TOTAL_CHUNK_SIZE),
            marker_type: int32(MARKER_TYPE),
            txnid_most_bits: long(TXNID_MOST_BITS),
            txnid_least_bits: long(TXNID_LEAST_BITS),
            replicated_from: text(REPLICATED_FROM, |r| StringBuilder::with_capacity(r, 0)),
            deliver_at_time: ts(DELIVER_AT_TIME),
            processor: text(PROCESSOR, |r| StringBuilder::with_capacity(r, r * 6)),
            error: text(ERROR, |r| StringBuilder::with_capacity(r, 0)),
            rows: 0,
            bytes: 0,
            want,
        }
    }

    /// Appends one row: entry-level columns from the entry (nulls when its
    /// metadata could not be read), message columns from `kind`.
    pub(super) fn append(
        &mut self,
        id: EntryId,
        entry: Option<&EntryView<'_>>,
        processor: Option<&str>,
        kind: RowKind<'_, '_>,
    ) {
        self.rows += 1;
        if self.want[LEDGER_ID] {
            self.ledger_id.append_value(id.ledger_id);
        }
        if self.want[ENTRY_ID] {
            self.entry_id.append_value(id.entry_id);
        }
        if self.want[PARTITION] {
            self.partition.append_value(id.partition);
        }
        let md = entry.map(|e| &e.metadata);
        let bem = entry.and_then(|e| e.broker_entry_metadata);
        let msg = match kind {
            RowKind::Message(m, _, _) => Some(m),
            RowKind::Error(_) => None,
        };
        if self.want[NUM_MESSAGES] {
            self.num_messages
                .append_option(md.map(|m| m.num_messages()));
        }
        if self.want[PRODUCER_NAME] {
            self.producer_name
                .append_option(md.map(|m| m.producer_name));
        }
        if self.want[PUBLISH_TIME] {
            self.publish_time
                .append_option(md.map(|m| m.publish_time as i64));
        }
        if self.want[SCHEMA_VERSION] {
            self.schema_version
                .append_option(md.and_then(|m| m.schema_version));
        }
        if self.want[COMPRESSION] {
            self.compression
                .append_option(msg.and_then(|m| m.compression).or_else(|| {
                    md.map(|m| {
                        Codec::from_proto(m.compression.unwrap_or(0)).map_or("unknown", Codec::name)
                    })
                }));
        }
        if self.want[UNCOMPRESSED_SIZE] {
            self.uncompressed_size
                .append_option(md.and_then(|m| m.uncompressed_size).map(i64::from));
        }
        if self.want[ENCRYPTED] {
            self.encrypted.append_option(md.map(|m| m.is_encrypted()));
        }
        if self.want[BROKER_TIMESTAMP] {
            self.broker_timestamp
                .append_option(bem.and_then(|b| b.broker_timestamp).map(|t| t as i64));
        }
        if self.want[BROKER_INDEX] {
            self.broker_index
                .append_option(bem.and_then(|b| b.index).map(|i| i as i64));
        }
        let chunk = md.filter(|m| m.is_chunk());
        if self.want[UUID] {
            self.uuid.append_option(chunk.and_then(|m| m.uuid));
        }
        if self.want[CHUNK_ID] {
            self.chunk_id.append_option(chunk.and_then(|m| m.chunk_id));
        }
        if self.want[NUM_CHUNKS] {
            self.num_chunks
                .append_option(chunk.and_then(|m| m.num_chunks_from_msg));
        }
        if self.want[TOTAL_CHUNK_SIZE] {
            self.total_chunk_size
                .append_option(chunk.and_then(|m| m.total_chunk_msg_size));
        }
        let marker = msg.and_then(|m| m.marker);
        if self.want[MARKER_TYPE] {
            self.marker_type.append_option(match marker {
                Some(mk) => mk.marker_type,
                None => md.and_then(|m| m.marker_type),
            });
        }
        let (most, least) = match (msg.and_then(|m| m.txnid), md) {
            (Some((a, b)), _) => (Some(a), Some(b)),
            (None, Some(m)) => (
                m.txnid_most_bits.map(|v| v as i64),
                m.txnid_least_bits.map(|v| v as i64),
            ),
            (None, None) => (None, None),
        };
        if self.want[TXNID_MOST_BITS] {
            self.txnid_most_bits.append_option(most);
        }
        if self.want[TXNID_LEAST_BITS] {
            self.txnid_least_bits.append_option(least);
        }
        if self.want[REPLICATED_FROM] {
            self.replicated_from
                .append_option(md.and_then(|m| m.replicated_from));
        }
        if self.want[DELIVER_AT_TIME] {
            self.deliver_at_time
                .append_option(md.and_then(|m| m.deliver_at_time));
        }
        if self.want[PROCESSOR] {
            self.processor.append_option(processor);
        }
        match kind {
            RowKind::Message(m, offset, error) => {
                if self.want[BATCH_INDEX] {
                    self.batch_index.append_option(m.batch_index);
                }
                if self.want[SEQUENCE_ID] {
                    self.sequence_id.append_option(m.sequence_id);
                }
                if self.want[EVENT_TIME] {
                    self.event_time.append_option(m.event_time);
                }
                if self.want[TIMESTAMP_TYPE] {
                    self.timestamp_type
                        .append_option(m.timestamp_type.map(|t| t.name()));
                }
                if self.want[KEY] {
                    self.key.append_option(m.key.as_deref());
                }
                if self.want[KEY_B64_ENCODED] {
                    self.key_b64_encoded.append_value(m.key_b64_encoded);
                }
                if self.want[ORDERING_KEY] {
                    self.ordering_key.append_option(m.ordering_key);
                }
                match &m.properties {
                    MessageProperties::Pulsar(p) => {
                        for (k, v) in p.iter() {
                            if self.want[PROPERTIES] {
                                self.properties.keys().append_value(k);
                                self.properties.values().append_value(v);
                            }
                            self.bytes += k.len() + v.len();
                        }
                    }
                    MessageProperties::Pairs(pairs) => {
                        for (k, v) in pairs {
                            if self.want[PROPERTIES] {
                                self.properties.keys().append_value(k);
                                self.properties.values().append_option(v.as_deref());
                            }
                            self.bytes += k.len() + v.as_deref().map_or(0, str::len);
                        }
                    }
                    MessageProperties::Headers(headers) => {
                        for (k, v) in headers.iter() {
                            if self.want[PROPERTIES] {
                                self.properties
                                    .keys()
                                    .append_value(String::from_utf8_lossy(k));
                                self.properties
                                    .values()
                                    .append_option(v.map(String::from_utf8_lossy));
                            }
                            self.bytes += k.len() + v.map_or(0, <[u8]>::len);
                        }
                    }
                }
                if self.want[PROPERTIES] {
                    self.properties.append(true);
                }
                match &m.headers {
                    Some(MessageHeaders::Raw(headers)) => {
                        for (k, v) in headers.iter() {
                            self.append_header(&String::from_utf8_lossy(k), *v);
                        }
                        if self.want[HEADERS] {
                            self.headers.builder().append(true);
                        }
                    }
                    Some(MessageHeaders::Pairs(headers)) => {
                        for (k, v) in headers {
                            self.append_header(k, *v);
                        }
                        if self.want[HEADERS] {
                            self.headers.builder().append(true);
                        }
                    }
                    None => {
                        if self.want[HEADERS] {
                            self.headers.append_null();
                        }
                    }
                }
                // The caller appends the value (copied or already in place).
                if self.want[COMPACTED_OUT] {
                    self.compacted_out.append_value(m.compacted_out);
                }
                if self.want[OFFSET] {
                    self.offset.append_option(offset);
                }
                if self.want[ERROR] {
                    self.error.append_option(error);
                }
                self.bytes +=
                    m.value.map_or(0, <[u8]>::len) + m.key.as_deref().map_or(0, str::len) + 64;
            }
            RowKind::Error(error) => {
                if self.want[BATCH_INDEX] {
                    self.batch_index.append_null();
                }
                if self.want[SEQUENCE_ID] {
                    self.sequence_id
                        .append_option(md.map(|m| m.sequence_id as i64));
                }
                if self.want[EVENT_TIME] {
                    self.event_time.append_null();
                }
                if self.want[TIMESTAMP_TYPE] {
                    self.timestamp_type.append_null();
                }
                if self.want[KEY] {
                    self.key.append_null();
                }
                if self.want[KEY_B64_ENCODED] {
                    self.key_b64_encoded.append_null();
                }
                if self.want[ORDERING_KEY] {
                    self.ordering_key.append_null();
                }
                if self.want[PROPERTIES] {
                    self.properties.append(false);
                }
                if self.want[HEADERS] {
                    self.headers.append_null();
                }
                self.value.append_copy(None);
                if self.want[COMPACTED_OUT] {
                    self.compacted_out.append_null();
                }
                if self.want[OFFSET] {
                    self.offset.append_null();
                }
                if self.want[ERROR] {
                    self.error.append_value(error);
                }
                self.bytes += error.len() + 64;
            }
        }
    }

    pub(super) fn append_header(&mut self, key: &str, value: Option<&[u8]>) {
        if !self.want[HEADERS] {
            return;
        }
        let items = self.headers.builder().values();
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
    pub(super) fn finish(&mut self) -> (Vec<ArrayRef>, usize) {
        let schema = message_schema();
        let dt = |c: usize| schema.field(c).data_type();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.ledger_id.finish()),
            Arc::new(self.entry_id.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.batch_index.finish(dt(BATCH_INDEX))),
            Arc::new(self.num_messages.finish(dt(NUM_MESSAGES))),
            Arc::new(self.producer_name.finish(dt(PRODUCER_NAME))),
            Arc::new(self.sequence_id.finish(dt(SEQUENCE_ID))),
            Arc::new(self.publish_time.finish(dt(PUBLISH_TIME))),
            Arc::new(self.event_time.finish(dt(EVENT_TIME))),
            Arc::new(self.timestamp_type.finish(dt(TIMESTAMP_TYPE))),
            Arc::new(self.key.finish(dt(KEY))),
            Arc::new(self.key_b64_encoded.finish(dt(KEY_B64_ENCODED))),
            Arc::new(self.ordering_key.finish(dt(ORDERING_KEY))),
            self.properties.finish(),
            Arc::new(self.headers.finish(dt(HEADERS))),
            Arc::new(self.value.finish()),
            Arc::new(self.compacted_out.finish(dt(COMPACTED_OUT))),
            Arc::new(self.schema_version.finish(dt(SCHEMA_VERSION))),
            Arc::new(self.compression.finish(dt(COMPRESSION))),
            Arc::new(self.uncompressed_size.finish(dt(UNCOMPRESSED_SIZE))),
            Arc::new(self.encrypted.finish(dt(ENCRYPTED))),
            Arc::new(self.broker_timestamp.finish(dt(BROKER_TIMESTAMP))),
            Arc::new(self.broker_index.finish(dt(BROKER_INDEX))),
            Arc::new(self.offset.finish(dt(OFFSET))),
            Arc::new(self.uuid.finish(dt(UUID))),
            Arc::new(self.chunk_id.finish(dt(CHUNK_ID))),
            Arc::new(self.num_chunks.finish(dt(NUM_CHUNKS))),
            Arc::new(self.total_chunk_size.finish(dt(TOTAL_CHUNK_SIZE))),
            Arc::new(self.marker_type.finish(dt(MARKER_TYPE))),
            Arc::new(self.txnid_most_bits.finish(dt(TXNID_MOST_BITS))),
            Arc::new(self.txnid_least_bits.finish(dt(TXNID_LEAST_BITS))),
            Arc::new(self.replicated_from.finish(dt(REPLICATED_FROM))),
            Arc::new(self.deliver_at_time.finish(dt(DELIVER_AT_TIME))),
            Arc::new(self.processor.finish(dt(PROCESSOR))),
            Arc::new(self.error.finish(dt(ERROR))),
        ];
        let rows = self.rows;
        self.rows = 0;
        self.bytes = 0;
        (columns, rows)
    }
}

#[cfg(test)]
mod positions {
    use super::*;
    use crate::decode::schema::message_schema;

    #[test]
    fn column_positions_match_the_schema() {
        let schema = message_schema();
        assert_eq!(schema.fields().len(), COLUMNS);
        for (i, name) in [
            (LEDGER_ID, "ledger_id"),
            (ENTRY_ID, "entry_id"),
            (PARTITION, "partition"),
            (BATCH_INDEX, "batch_index"),
            (NUM_MESSAGES, "num_messages"),
            (PRODUCER_NAME, "producer_name"),
            (SEQUENCE_ID, "sequence_id"),
            (PUBLISH_TIME, "publish_time"),
            (EVENT_TIME, "event_time"),
            (TIMESTAMP_TYPE, "timestamp_type"),
            (KEY, "key"),
            (KEY_B64_ENCODED, "key_b64_encoded"),
            (ORDERING_KEY, "ordering_key"),
            (PROPERTIES, "properties"),
            (HEADERS, "headers"),
            (COMPACTED_OUT, "compacted_out"),
            (SCHEMA_VERSION, "schema_version"),
            (COMPRESSION, "compression"),
            (UNCOMPRESSED_SIZE, "uncompressed_size"),
            (ENCRYPTED, "encrypted"),
            (BROKER_TIMESTAMP, "broker_timestamp"),
            (BROKER_INDEX, "broker_index"),
            (OFFSET, "offset"),
            (UUID, "uuid"),
            (CHUNK_ID, "chunk_id"),
            (NUM_CHUNKS, "num_chunks"),
            (TOTAL_CHUNK_SIZE, "total_chunk_size"),
            (MARKER_TYPE, "marker_type"),
            (TXNID_MOST_BITS, "txnid_most_bits"),
            (TXNID_LEAST_BITS, "txnid_least_bits"),
            (REPLICATED_FROM, "replicated_from"),
            (DELIVER_AT_TIME, "deliver_at_time"),
            (PROCESSOR, "processor"),
            (ERROR, "error"),
        ] {
            assert_eq!(schema.field(i).name(), name, "position {i}");
        }
    }
}
