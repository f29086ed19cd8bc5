//! The built-in Pulsar processor's fast path into [`Columns`]: a batch's
//! entry-level columns appended once for all its messages, then each
//! message's own columns.

use super::*;

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
            bytes_n(&mut self.schema_version, md.schema_version, n);
        }
        if self.want[COMPRESSION] {
            self.compression.append_value_n(codec.name(), n);
        }
        if self.want[UNCOMPRESSED_SIZE] {
            prim_n(
                &mut self.uncompressed_size,
                md.uncompressed_size.map(i64::from),
                n,
            );
        }
        if self.want[ENCRYPTED] {
            self.encrypted.append_n(n, md.is_encrypted());
        }
        if self.want[BROKER_TIMESTAMP] {
            prim_n(
                &mut self.broker_timestamp,
                bem.and_then(|b| b.broker_timestamp).map(|t| t as i64),
                n,
            );
        }
        if self.want[BROKER_INDEX] {
            prim_n(
                &mut self.broker_index,
                bem.and_then(|b| b.index).map(|i| i as i64),
                n,
            );
        }
        let chunk = Some(md).filter(|m| m.is_chunk());
        if self.want[UUID] {
            bytes_n(&mut self.uuid, chunk.and_then(|m| m.uuid), n);
        }
        if self.want[CHUNK_ID] {
            prim_n(&mut self.chunk_id, chunk.and_then(|m| m.chunk_id), n);
        }
        if self.want[NUM_CHUNKS] {
            prim_n(
                &mut self.num_chunks,
                chunk.and_then(|m| m.num_chunks_from_msg),
                n,
            );
        }
        if self.want[TOTAL_CHUNK_SIZE] {
            prim_n(
                &mut self.total_chunk_size,
                chunk.and_then(|m| m.total_chunk_msg_size),
                n,
            );
        }
        if self.want[MARKER_TYPE] {
            prim_n(&mut self.marker_type, md.marker_type, n);
        }
        if self.want[TXNID_MOST_BITS] {
            prim_n(
                &mut self.txnid_most_bits,
                md.txnid_most_bits.map(|v| v as i64),
                n,
            );
        }
        if self.want[TXNID_LEAST_BITS] {
            prim_n(
                &mut self.txnid_least_bits,
                md.txnid_least_bits.map(|v| v as i64),
                n,
            );
        }
        if self.want[REPLICATED_FROM] {
            bytes_n(&mut self.replicated_from, md.replicated_from, n);
        }
        if self.want[DELIVER_AT_TIME] {
            prim_n(&mut self.deliver_at_time, md.deliver_at_time, n);
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
        let base = base_offset(entry);
        if base.is_none() && self.want[OFFSET] {
            self.offset.append_nulls(n);
        }
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
                self.properties
                    .append(true)
                    .expect("keys and values stay aligned");
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
