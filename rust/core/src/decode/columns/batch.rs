//! The built-in Pulsar processor's fast path into [`Columns`]: a batch's
//! entry-level columns appended once for all its messages, then each
//! message's own columns.

use super::*;
use crate::format::metadata::MessageMetadataView;

impl Columns {
    /// The built-in Pulsar processor's rows for one entry, minus `value`: the
    /// entry-level columns once for all `records` (they are the same for every
    /// message), then each record's own columns. Row for row this equals
    /// `batch_message` + [`Columns::append`] (the decoder's test
    /// `builtin_batches_decode_exactly_like_the_generic_processor_path`).
    pub(in crate::decode) fn append_pulsar_batch(
        &mut self,
        id: EntryId,
        entry: &EntryView<'_>,
        codec: Codec,
        records: &[BatchRecord<'_>],
    ) {
        let n = records.len();
        let md = &entry.metadata;
        self.append_entry_columns(id, entry, codec, n);
        let base = base_offset(entry);
        if base.is_none() && self.want[OFFSET] {
            self.offset.append_nulls(n);
        }
        self.append_records(md, base, records);
    }

    /// The columns that are the same for every message of a batch of the
    /// built-in Pulsar processor, `n` rows of each at once.
    fn append_entry_columns(&mut self, id: EntryId, entry: &EntryView<'_>, codec: Codec, n: usize) {
        let md = &entry.metadata;
        let bem = entry.broker_entry_metadata;
        self.rows += n;
        if self.want[LEDGER_ID] {
            self.ledger_id.append_value_n(id.ledger_id, n);
        }
        if self.want[ENTRY_ID] {
            self.entry_id.append_value_n(id.entry_id, n);
        }
        if self.want[PARTITION] {
            self.partition.append_value_n(id.partition, n);
        }
        if self.want[NUM_MESSAGES] {
            self.num_messages.append_value_n(md.num_messages(), n);
        }
        if self.want[PRODUCER_NAME] {
            self.producer_name.append_value_n(md.producer_name, n);
        }
        if self.want[PUBLISH_TIME] {
            self.publish_time.append_value_n(md.publish_time as i64, n);
        }
        if self.want[SCHEMA_VERSION] {
            self.schema_version.append_option_n(md.schema_version, n);
        }
        if self.want[COMPRESSION] {
            self.compression.append_value_n(codec.name(), n);
        }
        if self.want[UNCOMPRESSED_SIZE] {
            self.uncompressed_size
                .append_option_n(md.uncompressed_size.map(i64::from), n);
        }
        if self.want[ENCRYPTED] {
            self.encrypted.append_n(n, md.is_encrypted());
        }
        if self.want[BROKER_TIMESTAMP] {
            self.broker_timestamp
                .append_option_n(bem.and_then(|b| b.broker_timestamp).map(|t| t as i64), n);
        }
        if self.want[BROKER_INDEX] {
            self.broker_index
                .append_option_n(bem.and_then(|b| b.index).map(|i| i as i64), n);
        }
        let chunk = Some(md).filter(|m| m.is_chunk());
        if self.want[UUID] {
            self.uuid.append_option_n(chunk.and_then(|m| m.uuid), n);
        }
        if self.want[CHUNK_ID] {
            self.chunk_id
                .append_option_n(chunk.and_then(|m| m.chunk_id), n);
        }
        if self.want[NUM_CHUNKS] {
            self.num_chunks
                .append_option_n(chunk.and_then(|m| m.num_chunks_from_msg), n);
        }
        if self.want[TOTAL_CHUNK_SIZE] {
            self.total_chunk_size
                .append_option_n(chunk.and_then(|m| m.total_chunk_msg_size), n);
        }
        if self.want[MARKER_TYPE] {
            self.marker_type.append_option_n(md.marker_type, n);
        }
        if self.want[TXNID_MOST_BITS] {
            self.txnid_most_bits
                .append_option_n(md.txnid_most_bits.map(|v| v as i64), n);
        }
        if self.want[TXNID_LEAST_BITS] {
            self.txnid_least_bits
                .append_option_n(md.txnid_least_bits.map(|v| v as i64), n);
        }
        if self.want[REPLICATED_FROM] {
            self.replicated_from.append_option_n(md.replicated_from, n);
        }
        if self.want[DELIVER_AT_TIME] {
            self.deliver_at_time.append_option_n(md.deliver_at_time, n);
        }
        if self.want[PROCESSOR] {
            self.processor.append_value_n(PulsarProcessor::NAME, n);
        }
        if self.want[TIMESTAMP_TYPE] {
            self.timestamp_type.append_nulls(n);
        }
        if self.want[HEADERS] {
            self.headers.append_nulls(n);
        }
        if self.want[ERROR] {
            self.error.append_nulls(n);
        }
    }

    /// Each record's own columns.
    fn append_records(
        &mut self,
        md: &MessageMetadataView<'_>,
        base: Option<i64>,
        records: &[BatchRecord<'_>],
    ) {
        // Header fallbacks, as `batch_message` applies them.
        let null_key_default = md.null_partition_key;
        let null_value_default = md.null_value;
        for r in records {
            let smm = &r.metadata;
            if self.want[BATCH_INDEX] {
                self.batch_index.append_value(r.index);
            }
            if self.want[SEQUENCE_ID] {
                self.sequence_id
                    .append_value(smm.sequence_id.unwrap_or(md.sequence_id) as i64);
            }
            if self.want[EVENT_TIME] {
                self.event_time.append_option(
                    smm.event_time
                        .or(md.event_time)
                        .filter(|&t| t != 0)
                        .map(|t| t as i64),
                );
            }
            let null_key = smm.null_partition_key.or(null_key_default) == Some(true);
            let key = smm.partition_key.filter(|_| !null_key);
            if self.want[KEY] {
                self.key.append_option(key);
            }
            if self.want[KEY_B64_ENCODED] {
                self.key_b64_encoded
                    .append_value(smm.partition_key_b64_encoded == Some(true));
            }
            if self.want[ORDERING_KEY] {
                self.ordering_key.append_option(smm.ordering_key);
            }
            // Unrequested properties are not even read (nor counted in
            // `bytes`: they take no memory).
            if self.want[PROPERTIES] {
                for (k, v) in smm.properties.iter() {
                    self.properties.keys().append_value(k);
                    self.properties.values().append_value(v);
                    self.bytes += k.len() + v.len();
                }
                self.properties.append(true);
            }
            if self.want[COMPACTED_OUT] {
                self.compacted_out.append_value(smm.is_compacted_out());
            }
            if let (Some(b), true) = (base, self.want[OFFSET]) {
                self.offset.append_value(b + i64::from(r.index.max(0)));
            }
            let null_value = smm.null_value.or(null_value_default) == Some(true);
            let value_len = if null_value { 0 } else { r.payload.len() };
            self.bytes += value_len + key.map_or(0, str::len) + 64;
        }
    }
}

impl Columns {
    /// The row of a non-batched entry of the built-in Pulsar processor, with
    /// its value: the same row as `single_message` + [`Columns::append`] +
    /// `append_copy`, without building a `Message` (the decoder's test
    /// `builtin_single_messages_decode_exactly_like_the_generic_processor_path`).
    pub(in crate::decode) fn append_pulsar_single(
        &mut self,
        id: EntryId,
        entry: &EntryView<'_>,
        codec: Codec,
        payload: &[u8],
    ) {
        let md = &entry.metadata;
        self.append_entry_columns(id, entry, codec, 1);
        if self.want[BATCH_INDEX] {
            self.batch_index.append_value(-1);
        }
        if self.want[SEQUENCE_ID] {
            self.sequence_id.append_value(md.sequence_id as i64);
        }
        if self.want[EVENT_TIME] {
            self.event_time
                .append_option(md.event_time.filter(|&t| t != 0).map(|t| t as i64));
        }
        let key = md
            .partition_key
            .filter(|_| md.null_partition_key != Some(true));
        if self.want[KEY] {
            self.key.append_option(key);
        }
        if self.want[KEY_B64_ENCODED] {
            self.key_b64_encoded
                .append_value(md.partition_key_b64_encoded == Some(true));
        }
        if self.want[ORDERING_KEY] {
            self.ordering_key.append_option(md.ordering_key);
        }
        if self.want[PROPERTIES] {
            for (k, v) in md.properties.iter() {
                self.properties.keys().append_value(k);
                self.properties.values().append_value(v);
                self.bytes += k.len() + v.len();
            }
            self.properties.append(true);
        }
        if self.want[COMPACTED_OUT] {
            self.compacted_out.append_value(false);
        }
        if self.want[OFFSET] {
            // A single message is the entry's only one: batch index -1 counts as 0.
            self.offset.append_option(base_offset(entry));
        }
        let value = (md.null_value != Some(true)).then_some(payload);
        self.value.append_copy(value);
        self.bytes += value.map_or(0, <[u8]>::len) + key.map_or(0, str::len) + 64;
    }
}
