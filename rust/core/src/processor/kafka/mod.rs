//! Kafka-on-Pulsar entries (`entry.format=kafka`): Kafka RecordBatch v2
//! payloads, their codecs, and the built-in Kafka payload processor.
//!
//! Unlike KoP's own `KafkaPayloadProcessor`, which iterates every record of
//! the entry once per batch (correct for one batch per entry only), every
//! batch of an entry is decoded, each with its own header.

pub mod codec;
pub mod encode;
pub mod records;

use std::borrow::Cow;

use base64::Engine as _;

use crate::error::{EntryError, Result};
use crate::processor::api::{
    EntryContext, MarkerInfo, Message, MessageHeaders, MessageProperties, PayloadProcessor,
    Selector, Sink, TimestampType, TxnKey, TxnOutcome,
};
use codec::{decompress, DecompressError, KafkaCodec};
use records::{control_type, parse_records, split_batches, Record, CONTROL_ABORT, CONTROL_COMMIT};

pub use encode::{ENTRY_FORMAT_KAFKA, ENTRY_FORMAT_KEY};

/// Pulsar marker types a Kafka end-transaction marker maps to.
use crate::format::metadata::{MARKER_TXN_ABORT as TXN_ABORT, MARKER_TXN_COMMIT as TXN_COMMIT};

/// The built-in processor for KoP's `entry.format=kafka` entries.
pub struct KafkaProcessor {
    selector: Selector,
}

impl KafkaProcessor {
    pub const NAME: &'static str = "kafka";

    pub fn new() -> Self {
        KafkaProcessor {
            selector: Selector::Property {
                key: ENTRY_FORMAT_KEY.into(),
                value: Some(ENTRY_FORMAT_KAFKA.into()),
            },
        }
    }
}

impl Default for KafkaProcessor {
    fn default() -> Self {
        Self::new()
    }
}

fn kafka_error(
    ctx: &EntryContext<'_>,
    batch: usize,
    position: usize,
    reason: String,
) -> EntryError {
    EntryError::Kafka {
        batch,
        offset: ctx.entry.payload_offset + position,
        reason,
    }
}

/// A record's key column: UTF-8 text when valid, else base64 with the flag.
fn key_text(key: &[u8]) -> (Cow<'_, str>, bool) {
    match std::str::from_utf8(key) {
        Ok(s) => (Cow::Borrowed(s), false),
        Err(_) => (
            Cow::Owned(base64::engine::general_purpose::STANDARD.encode(key)),
            true,
        ),
    }
}

impl PayloadProcessor for KafkaProcessor {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn selector(&self) -> &Selector {
        &self.selector
    }

    fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()> {
        let batches = split_batches(payload, ctx.options.verify_checksum)
            .map_err(|e| kafka_error(ctx, 0, e.position, e.reason))?;
        // Decompress every batch first: records borrow from these buffers.
        let mut buffers: Vec<Vec<u8>> = Vec::with_capacity(batches.len());
        let mut budget = ctx.options.max_uncompressed_size;
        for (i, b) in batches.iter().enumerate() {
            let codec = KafkaCodec::from_attributes(b.attributes).ok_or_else(|| {
                kafka_error(
                    ctx,
                    i,
                    b.position + 21,
                    format!("unknown compression codec id {}", b.attributes & 7),
                )
            })?;
            let mut out = Vec::new();
            if codec != KafkaCodec::None {
                decompress(codec, b.records, budget, &mut out).map_err(|e| match e {
                    DecompressError::TooLarge => {
                        EntryError::from(crate::error::FormatError::TooLarge {
                            what: "decompressed Kafka records",
                            size: budget as u64 + 1,
                            limit: ctx.options.max_uncompressed_size as u64,
                            offset: ctx.entry.payload_offset + b.position,
                        })
                    }
                    DecompressError::Corrupt(reason) => kafka_error(
                        ctx,
                        i,
                        b.position + records::RECORD_BATCH_OVERHEAD,
                        format!("{codec} decompression failed: {reason}"),
                    ),
                })?;
                budget -= out.len();
            }
            buffers.push(out);
        }
        // Parse every batch's records before building messages, which borrow
        // their headers from these records.
        let mut parsed: Vec<Vec<Record<'_>>> = Vec::with_capacity(batches.len());
        for (i, (b, buf)) in batches.iter().zip(&buffers).enumerate() {
            let codec = KafkaCodec::from_attributes(b.attributes).unwrap_or_default();
            let section = if codec == KafkaCodec::None {
                b.records
            } else {
                buf.as_slice()
            };
            let mut records = Vec::new();
            parse_records(section, b.records_count, &mut records).map_err(|e| {
                if codec == KafkaCodec::None {
                    kafka_error(
                        ctx,
                        i,
                        b.position + records::RECORD_BATCH_OVERHEAD + e.position,
                        e.reason,
                    )
                } else {
                    let reason =
                        format!("{} (decompressed records offset {})", e.reason, e.position);
                    kafka_error(ctx, i, b.position, reason)
                }
            })?;
            parsed.push(records);
        }
        let base = ctx.base_offset();
        let mut messages: Vec<Message<'_>> = Vec::with_capacity(parsed.iter().map(Vec::len).sum());
        let mut span_before: i64 = 0;
        let mut index: i32 = 0;
        for (b, records) in batches.iter().zip(&parsed) {
            let codec = KafkaCodec::from_attributes(b.attributes).unwrap_or_default();
            // KoP rewrites the first batch's base offset on fetch to the
            // entry's base; later batches follow at their offset spans.
            let batch_base = match base {
                Some(base) => base + span_before,
                None => b.base_offset,
            };
            let timestamp_type = if b.is_log_append_time() {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            };
            let txn = b.is_transactional().then_some(TxnKey::Kafka {
                producer_id: b.producer_id,
            });
            let txnid = b
                .is_transactional()
                .then_some((b.producer_id, i64::from(b.producer_epoch)));
            for r in records {
                let timestamp = if b.is_log_append_time() {
                    b.max_timestamp
                } else {
                    b.base_timestamp.wrapping_add(r.timestamp_delta)
                };
                let (key, key_b64_encoded) = match r.key {
                    Some(k) => {
                        let (text, b64) = key_text(k);
                        (Some(text), b64)
                    }
                    None => (None, false),
                };
                let mut m = Message {
                    batch_index: None,
                    sequence_id: b.sequence(r.offset_delta).map(i64::from),
                    event_time: (timestamp >= 0).then_some(timestamp),
                    timestamp_type: Some(timestamp_type),
                    key,
                    key_b64_encoded,
                    ordering_key: r.key,
                    properties: MessageProperties::Headers(&r.headers),
                    headers: Some(MessageHeaders::Raw(&r.headers)),
                    value: r.value,
                    compacted_out: false,
                    offset: Some(batch_base + i64::from(r.offset_delta)),
                    compression: Some(codec.name()),
                    txnid,
                    txn,
                    marker: None,
                };
                if b.is_control() {
                    let ends = match control_type(r.key) {
                        Some(CONTROL_COMMIT) => Some((TxnOutcome::Committed, TXN_COMMIT)),
                        Some(CONTROL_ABORT) => Some((TxnOutcome::Aborted, TXN_ABORT)),
                        _ => None,
                    };
                    m.txn = None;
                    m.marker = Some(MarkerInfo {
                        marker_type: ends.map(|(_, t)| t),
                        ends: ends.map(|(o, _)| {
                            (
                                TxnKey::Kafka {
                                    producer_id: b.producer_id,
                                },
                                o,
                            )
                        }),
                    });
                } else {
                    // KoP's message index counts the data records of the entry.
                    m.batch_index = Some(index);
                    index += 1;
                }
                messages.push(m);
            }
            span_before += b.offset_span();
        }
        // An entry is never dropped without a trace: one whose payload holds
        // no record at all (no batch, or only empty batches) is an error row.
        if messages.is_empty() {
            return Err(kafka_error(
                ctx,
                0,
                0,
                format!(
                    "no Kafka record in the payload ({} record batches, {} bytes)",
                    batches.len(),
                    payload.len()
                ),
            ));
        }
        sink.emit(&messages);
        Ok(())
    }
}
