//! The message schema: the columns `decode` writes.

use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::decode::arrow_types::{properties_type, timestamp_type};

pub(super) fn header_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Binary, true),
    ])
}

pub(super) fn headers_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(header_fields()),
        false,
    )))
}

/// Index of `txn_status`, which is filled when the decode finishes (read off
/// the schema so adding a column cannot misplace it).
pub(super) fn txn_status_column() -> usize {
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
