//! Entries → Arrow: one row per *entry* with every MessageMetadata field
//! (null when absent, so presence stays visible), the broker entry metadata,
//! the checksum and derived columns. Backs the Spark column functions.

use std::sync::{Arc, OnceLock};

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, MapBuilder,
    StringBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::arrow_types::{
    properties_builder, properties_type, timestamp_builder as ts, timestamp_type as ts_type,
};

use crate::format::compression::Codec;
use crate::format::frame::EntryView;

/// Schema of [`entry_metadata`]'s output.
pub fn entry_metadata_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let f = |name: &str, t: DataType| Field::new(name, t, true);
            let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
            let map = properties_type();
            Arc::new(Schema::new(vec![
                f("producer_name", DataType::Utf8),
                f("sequence_id", DataType::Int64),
                f("publish_time", ts_type()),
                f("properties", map),
                f("replicated_from", DataType::Utf8),
                f("partition_key", DataType::Utf8),
                f("replicate_to", list(DataType::Utf8)),
                f("compression", DataType::Utf8),
                f("uncompressed_size", DataType::Int64),
                f("num_messages_in_batch", DataType::Int32),
                f("event_time", ts_type()),
                f("encryption_keys", list(DataType::Utf8)),
                f("encryption_algo", DataType::Utf8),
                f("encryption_param", DataType::Binary),
                f("schema_version", DataType::Binary),
                f("partition_key_b64_encoded", DataType::Boolean),
                f("ordering_key", DataType::Binary),
                f("deliver_at_time", ts_type()),
                f("marker_type", DataType::Int32),
                f("txnid_least_bits", DataType::Int64),
                f("txnid_most_bits", DataType::Int64),
                f("highest_sequence_id", DataType::Int64),
                f("null_value", DataType::Boolean),
                f("uuid", DataType::Utf8),
                f("num_chunks_from_msg", DataType::Int32),
                f("total_chunk_msg_size", DataType::Int32),
                f("chunk_id", DataType::Int32),
                f("null_partition_key", DataType::Boolean),
                f("compacted_batch_indexes", list(DataType::Int32)),
                f("schema_id", DataType::Binary),
                f("broker_timestamp", ts_type()),
                f("broker_index", DataType::Int64),
                f("checksum", DataType::Int64),
                f("checksum_valid", DataType::Boolean),
                f("is_batch", DataType::Boolean),
                f("num_messages", DataType::Int32),
                f("entry_timestamp", ts_type()),
                f("error", DataType::Utf8),
            ]))
        })
        .clone()
}

struct Builders {
    producer_name: StringBuilder,
    sequence_id: Int64Builder,
    publish_time: TimestampMillisecondBuilder,
    properties: MapBuilder<StringBuilder, StringBuilder>,
    replicated_from: StringBuilder,
    partition_key: StringBuilder,
    replicate_to: ListBuilder<StringBuilder>,
    compression: StringBuilder,
    uncompressed_size: Int64Builder,
    num_messages_in_batch: Int32Builder,
    event_time: TimestampMillisecondBuilder,
    encryption_keys: ListBuilder<StringBuilder>,
    encryption_algo: StringBuilder,
    encryption_param: BinaryBuilder,
    schema_version: BinaryBuilder,
    partition_key_b64_encoded: BooleanBuilder,
    ordering_key: BinaryBuilder,
    deliver_at_time: TimestampMillisecondBuilder,
    marker_type: Int32Builder,
    txnid_least_bits: Int64Builder,
    txnid_most_bits: Int64Builder,
    highest_sequence_id: Int64Builder,
    null_value: BooleanBuilder,
    uuid: StringBuilder,
    num_chunks_from_msg: Int32Builder,
    total_chunk_msg_size: Int32Builder,
    chunk_id: Int32Builder,
    null_partition_key: BooleanBuilder,
    compacted_batch_indexes: ListBuilder<Int32Builder>,
    schema_id: BinaryBuilder,
    broker_timestamp: TimestampMillisecondBuilder,
    broker_index: Int64Builder,
    checksum: Int64Builder,
    checksum_valid: BooleanBuilder,
    is_batch: BooleanBuilder,
    num_messages: Int32Builder,
    entry_timestamp: TimestampMillisecondBuilder,
    error: StringBuilder,
}

impl Builders {
    fn new() -> Self {
        Builders {
            producer_name: StringBuilder::new(),
            sequence_id: Int64Builder::new(),
            publish_time: ts(),
            properties: properties_builder(),
            replicated_from: StringBuilder::new(),
            partition_key: StringBuilder::new(),
            replicate_to: ListBuilder::new(StringBuilder::new()),
            compression: StringBuilder::new(),
            uncompressed_size: Int64Builder::new(),
            num_messages_in_batch: Int32Builder::new(),
            event_time: ts(),
            encryption_keys: ListBuilder::new(StringBuilder::new()),
            encryption_algo: StringBuilder::new(),
            encryption_param: BinaryBuilder::new(),
            schema_version: BinaryBuilder::new(),
            partition_key_b64_encoded: BooleanBuilder::new(),
            ordering_key: BinaryBuilder::new(),
            deliver_at_time: ts(),
            marker_type: Int32Builder::new(),
            txnid_least_bits: Int64Builder::new(),
            txnid_most_bits: Int64Builder::new(),
            highest_sequence_id: Int64Builder::new(),
            null_value: BooleanBuilder::new(),
            uuid: StringBuilder::new(),
            num_chunks_from_msg: Int32Builder::new(),
            total_chunk_msg_size: Int32Builder::new(),
            chunk_id: Int32Builder::new(),
            null_partition_key: BooleanBuilder::new(),
            compacted_batch_indexes: ListBuilder::new(Int32Builder::new()),
            schema_id: BinaryBuilder::new(),
            broker_timestamp: ts(),
            broker_index: Int64Builder::new(),
            checksum: Int64Builder::new(),
            checksum_valid: BooleanBuilder::new(),
            is_batch: BooleanBuilder::new(),
            num_messages: Int32Builder::new(),
            entry_timestamp: ts(),
            error: StringBuilder::new(),
        }
    }

    /// One row; `entry` is `None` for a null cell or an entry that failed to parse.
    fn append(&mut self, entry: Option<&EntryView<'_>>, error: Option<&str>) {
        let md = entry.map(|e| &e.metadata);
        let bem = entry.and_then(|e| e.broker_entry_metadata);
        self.producer_name
            .append_option(md.map(|m| m.producer_name));
        self.sequence_id
            .append_option(md.map(|m| m.sequence_id as i64));
        self.publish_time
            .append_option(md.map(|m| m.publish_time as i64));
        match md {
            Some(m) => {
                for (k, v) in m.properties.iter() {
                    self.properties.keys().append_value(k);
                    self.properties.values().append_value(v);
                }
                self.properties.append(true).expect("aligned");
            }
            None => self.properties.append(false).expect("aligned"),
        }
        self.replicated_from
            .append_option(md.and_then(|m| m.replicated_from));
        self.partition_key
            .append_option(md.and_then(|m| m.partition_key));
        match md {
            Some(m) => {
                for c in m.replicate_to() {
                    self.replicate_to.values().append_value(c);
                }
                self.replicate_to.append(true);
                for k in m.encryption_keys() {
                    self.encryption_keys.values().append_value(k.key);
                }
                self.encryption_keys.append(true);
                for i in m.compacted_batch_indexes() {
                    self.compacted_batch_indexes.values().append_value(i);
                }
                self.compacted_batch_indexes.append(true);
            }
            None => {
                self.replicate_to.append(false);
                self.encryption_keys.append(false);
                self.compacted_batch_indexes.append(false);
            }
        }
        self.compression.append_option(md.and_then(|m| {
            m.compression
                .map(|c| Codec::from_proto(c).map_or("unknown", Codec::name))
        }));
        self.uncompressed_size
            .append_option(md.and_then(|m| m.uncompressed_size).map(i64::from));
        self.num_messages_in_batch
            .append_option(md.and_then(|m| m.num_messages_in_batch));
        self.event_time
            .append_option(md.and_then(|m| m.event_time).map(|t| t as i64));
        self.encryption_algo
            .append_option(md.and_then(|m| m.encryption_algo));
        self.encryption_param
            .append_option(md.and_then(|m| m.encryption_param));
        self.schema_version
            .append_option(md.and_then(|m| m.schema_version));
        self.partition_key_b64_encoded
            .append_option(md.and_then(|m| m.partition_key_b64_encoded));
        self.ordering_key
            .append_option(md.and_then(|m| m.ordering_key));
        self.deliver_at_time
            .append_option(md.and_then(|m| m.deliver_at_time));
        self.marker_type
            .append_option(md.and_then(|m| m.marker_type));
        self.txnid_least_bits
            .append_option(md.and_then(|m| m.txnid_least_bits).map(|v| v as i64));
        self.txnid_most_bits
            .append_option(md.and_then(|m| m.txnid_most_bits).map(|v| v as i64));
        self.highest_sequence_id
            .append_option(md.and_then(|m| m.highest_sequence_id).map(|v| v as i64));
        self.null_value.append_option(md.and_then(|m| m.null_value));
        self.uuid.append_option(md.and_then(|m| m.uuid));
        self.num_chunks_from_msg
            .append_option(md.and_then(|m| m.num_chunks_from_msg));
        self.total_chunk_msg_size
            .append_option(md.and_then(|m| m.total_chunk_msg_size));
        self.chunk_id.append_option(md.and_then(|m| m.chunk_id));
        self.null_partition_key
            .append_option(md.and_then(|m| m.null_partition_key));
        self.schema_id.append_option(md.and_then(|m| m.schema_id));
        self.broker_timestamp
            .append_option(bem.and_then(|b| b.broker_timestamp).map(|t| t as i64));
        self.broker_index
            .append_option(bem.and_then(|b| b.index).map(|i| i as i64));
        self.checksum
            .append_option(entry.and_then(|e| e.checksum).map(i64::from));
        self.checksum_valid.append_option(
            entry.and_then(|e| e.checksum.map(|stored| stored == e.computed_checksum())),
        );
        self.is_batch.append_option(md.map(|m| m.is_batch()));
        self.num_messages
            .append_option(md.map(|m| m.num_messages()));
        self.entry_timestamp
            .append_option(entry.map(|e| e.entry_timestamp() as i64));
        self.error.append_option(error);
    }

    fn finish(mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.producer_name.finish()),
            Arc::new(self.sequence_id.finish()),
            Arc::new(self.publish_time.finish()),
            Arc::new(self.properties.finish()),
            Arc::new(self.replicated_from.finish()),
            Arc::new(self.partition_key.finish()),
            Arc::new(self.replicate_to.finish()),
            Arc::new(self.compression.finish()),
            Arc::new(self.uncompressed_size.finish()),
            Arc::new(self.num_messages_in_batch.finish()),
            Arc::new(self.event_time.finish()),
            Arc::new(self.encryption_keys.finish()),
            Arc::new(self.encryption_algo.finish()),
            Arc::new(self.encryption_param.finish()),
            Arc::new(self.schema_version.finish()),
            Arc::new(self.partition_key_b64_encoded.finish()),
            Arc::new(self.ordering_key.finish()),
            Arc::new(self.deliver_at_time.finish()),
            Arc::new(self.marker_type.finish()),
            Arc::new(self.txnid_least_bits.finish()),
            Arc::new(self.txnid_most_bits.finish()),
            Arc::new(self.highest_sequence_id.finish()),
            Arc::new(self.null_value.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.num_chunks_from_msg.finish()),
            Arc::new(self.total_chunk_msg_size.finish()),
            Arc::new(self.chunk_id.finish()),
            Arc::new(self.null_partition_key.finish()),
            Arc::new(self.compacted_batch_indexes.finish()),
            Arc::new(self.schema_id.finish()),
            Arc::new(self.broker_timestamp.finish()),
            Arc::new(self.broker_index.finish()),
            Arc::new(self.checksum.finish()),
            Arc::new(self.checksum_valid.finish()),
            Arc::new(self.is_batch.finish()),
            Arc::new(self.num_messages.finish()),
            Arc::new(self.entry_timestamp.finish()),
            Arc::new(self.error.finish()),
        ];
        RecordBatch::try_new(entry_metadata_schema(), columns).expect("columns match the schema")
    }
}

/// One row per entry. Reads only the prefix, checksum and metadata: the
/// checksum is computed, never the payload decompressed. A null or unparsable
/// entry gives a row with `error` set and everything else null.
pub fn entry_metadata<'a>(entries: impl Iterator<Item = Option<&'a [u8]>>) -> RecordBatch {
    let mut b = Builders::new();
    for data in entries {
        match data.map(|d| EntryView::parse(d, false)) {
            None => b.append(None, Some("entry data is null")),
            Some(Ok(view)) => b.append(Some(&view), None),
            Some(Err(e)) => b.append(None, Some(&e.to_string())),
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use arrow_array::Array;

    #[test]
    fn presence_checksum_and_errors() {
        let e2 = hex::decode("0e020000000908fbd095ffbc3110000e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f").unwrap();
        let mut bad = e2.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let out =
            entry_metadata([Some(&e2[..]), Some(&bad[..]), None, Some(&b"xx"[..])].into_iter());
        assert_eq!(out.num_rows(), 4);
        let valid = out.column_by_name("checksum_valid").unwrap().as_boolean();
        assert_eq!(
            (valid.value(0), valid.value(1), valid.is_null(2)),
            (true, false, true)
        );
        let size = out
            .column_by_name("uncompressed_size")
            .unwrap()
            .as_primitive::<Int64Type>();
        assert_eq!(size.value(0), 5);
        assert!(out
            .column_by_name("num_messages_in_batch")
            .unwrap()
            .is_null(0));
        assert_eq!(
            out.column_by_name("num_messages")
                .unwrap()
                .as_primitive::<Int32Type>()
                .value(0),
            1
        );
        assert_eq!(
            out.column_by_name("broker_index")
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(0),
            0
        );
        let errors = out.column_by_name("error").unwrap().as_string::<i32>();
        assert!(errors.is_null(0) && errors.is_null(1));
        assert_eq!(errors.value(2), "entry data is null");
        assert!(errors.value(3).starts_with("truncated metadata size"));
    }
}
