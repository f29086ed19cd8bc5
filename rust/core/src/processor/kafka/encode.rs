//! Kafka RecordBatch v2 writer and the KoP entry wrapper: what a Kafka
//! producer sends and what KoP's `entryFormat=kafka` stores (spec
//! chunks-processors-offload.md §3.2, §3.7). Used for sample topics, tests
//! and benchmarks; kafka-python reads these batches back in the tests.

use crate::error::{EntryError, Result};
use crate::format::crc::crc32c;
use crate::format::encode::frame_entry;
use crate::processor::kafka::codec::{compress, KafkaCodec};
use crate::processor::kafka::records::{
    ATTR_CONTROL, ATTR_TIMESTAMP_LOG_APPEND, ATTR_TRANSACTIONAL, CONTROL_ABORT, CONTROL_COMMIT,
    LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
};
use crate::proto;

/// The entry property KoP marks its entries with.
pub const ENTRY_FORMAT_KEY: &str = "entry.format";
pub const ENTRY_FORMAT_KAFKA: &str = "kafka";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KafkaRecordInput {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Milliseconds; `None` writes the batch's base timestamp.
    pub timestamp: Option<i64>,
    /// Defaults to the record's position.
    pub offset_delta: Option<i32>,
}

#[derive(Debug, Clone)]
pub struct KafkaBatchOptions {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub compression: KafkaCodec,
    pub log_append_time: bool,
    pub transactional: bool,
    pub control: bool,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Base timestamp when no record carries one (ms).
    pub base_timestamp: i64,
}

impl Default for KafkaBatchOptions {
    fn default() -> Self {
        KafkaBatchOptions::DEFAULT
    }
}

/// The defaults once, and builders from them:
/// `KafkaBatchOptions::DEFAULT.with_compression(KafkaCodec::Zstd)`.
impl KafkaBatchOptions {
    pub const DEFAULT: Self = KafkaBatchOptions {
        base_offset: 0,
        partition_leader_epoch: -1,
        compression: KafkaCodec::None,
        log_append_time: false,
        transactional: false,
        control: false,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        base_timestamp: 0,
    };

    #[must_use]
    pub fn with_base_offset(mut self, v: i64) -> Self {
        self.base_offset = v;
        self
    }

    #[must_use]
    pub fn with_partition_leader_epoch(mut self, v: i32) -> Self {
        self.partition_leader_epoch = v;
        self
    }

    #[must_use]
    pub fn with_compression(mut self, v: KafkaCodec) -> Self {
        self.compression = v;
        self
    }

    #[must_use]
    pub fn with_log_append_time(mut self, v: bool) -> Self {
        self.log_append_time = v;
        self
    }

    #[must_use]
    pub fn with_transactional(mut self, v: bool) -> Self {
        self.transactional = v;
        self
    }

    #[must_use]
    pub fn with_control(mut self, v: bool) -> Self {
        self.control = v;
        self
    }

    #[must_use]
    pub fn with_producer_id(mut self, v: i64) -> Self {
        self.producer_id = v;
        self
    }

    #[must_use]
    pub fn with_producer_epoch(mut self, v: i16) -> Self {
        self.producer_epoch = v;
        self
    }

    #[must_use]
    pub fn with_base_sequence(mut self, v: i32) -> Self {
        self.base_sequence = v;
        self
    }

    #[must_use]
    pub fn with_base_timestamp(mut self, v: i64) -> Self {
        self.base_timestamp = v;
        self
    }
}

fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Encodes one v2 record batch.
pub fn encode_record_batch(
    records: &[KafkaRecordInput],
    opts: &KafkaBatchOptions,
) -> Result<Vec<u8>> {
    let count = i32::try_from(records.len())
        .map_err(|_| EntryError::Encode("too many records for one batch".into()))?;
    let timestamps: Vec<i64> = records
        .iter()
        .map(|r| r.timestamp.unwrap_or(opts.base_timestamp))
        .collect();
    let base_timestamp = timestamps
        .iter()
        .copied()
        .min()
        .unwrap_or(opts.base_timestamp);
    let max_timestamp = timestamps
        .iter()
        .copied()
        .max()
        .unwrap_or(opts.base_timestamp);
    let mut body = Vec::new();
    let mut last_offset_delta = 0i32;
    let mut record = Vec::new();
    for (i, (r, ts)) in records.iter().zip(&timestamps).enumerate() {
        let delta = r.offset_delta.unwrap_or(i as i32);
        last_offset_delta = last_offset_delta.max(delta);
        record.clear();
        record.push(0); // attributes: unused
        put_varlong(&mut record, ts - base_timestamp);
        put_varlong(&mut record, i64::from(delta));
        put_bytes(&mut record, r.key.as_deref());
        put_bytes(&mut record, r.value.as_deref());
        put_varlong(&mut record, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_bytes(&mut record, Some(k.as_bytes()));
            put_bytes(&mut record, v.as_deref());
        }
        put_varlong(&mut body, record.len() as i64);
        body.extend_from_slice(&record);
    }
    let records_section = compress(opts.compression, &body);
    let mut attributes = opts.compression.id();
    if opts.log_append_time {
        attributes |= ATTR_TIMESTAMP_LOG_APPEND;
    }
    if opts.transactional {
        attributes |= ATTR_TRANSACTIONAL;
    }
    if opts.control {
        attributes |= ATTR_CONTROL;
    }
    let total = RECORD_BATCH_OVERHEAD + records_section.len();
    let batch_length = i32::try_from(total - LOG_OVERHEAD)
        .map_err(|_| EntryError::Encode("record batch larger than 2 GiB".into()))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&opts.base_offset.to_be_bytes());
    out.extend_from_slice(&batch_length.to_be_bytes());
    out.extend_from_slice(&opts.partition_leader_epoch.to_be_bytes());
    out.push(2); // magic
    out.extend_from_slice(&[0; 4]); // crc, filled below
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&last_offset_delta.to_be_bytes());
    out.extend_from_slice(&base_timestamp.to_be_bytes());
    out.extend_from_slice(&max_timestamp.to_be_bytes());
    out.extend_from_slice(&opts.producer_id.to_be_bytes());
    out.extend_from_slice(&opts.producer_epoch.to_be_bytes());
    out.extend_from_slice(&opts.base_sequence.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&records_section);
    let crc = crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

/// An end-transaction control batch (COMMIT or ABORT marker) for a producer.
pub fn encode_control_batch(
    commit: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    timestamp: i64,
    coordinator_epoch: i32,
) -> Result<Vec<u8>> {
    let kind = if commit {
        CONTROL_COMMIT
    } else {
        CONTROL_ABORT
    };
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = 0i16.to_be_bytes().to_vec();
    value.extend_from_slice(&coordinator_epoch.to_be_bytes());
    encode_record_batch(
        &[KafkaRecordInput {
            key: Some(key),
            value: Some(value),
            timestamp: Some(timestamp),
            ..Default::default()
        }],
        &KafkaBatchOptions {
            base_offset,
            transactional: true,
            control: true,
            producer_id,
            producer_epoch,
            base_timestamp: timestamp,
            ..Default::default()
        },
    )
}

/// Wraps Kafka record batches into a stored entry as KoP's
/// `KafkaV1EntryFormatter` does: checksum-less framing, metadata with
/// property `entry.format=kafka`, empty producer name, sequence id 0, and
/// `num_messages_in_batch` = the offset span of all batches.
pub fn encode_kop_entry(batches: &[&[u8]], publish_time: u64) -> Result<Vec<u8>> {
    let mut payload = Vec::new();
    let mut span: i64 = 0;
    for b in batches {
        let parsed = crate::processor::kafka::records::split_batches(b, false)
            .map_err(|e| EntryError::Encode(format!("not a Kafka record batch: {}", e.reason)))?;
        span += parsed.iter().map(|h| h.offset_span()).sum::<i64>();
        payload.extend_from_slice(b);
    }
    let md = proto::MessageMetadata {
        producer_name: String::new(),
        sequence_id: 0,
        publish_time,
        properties: vec![proto::KeyValue {
            key: ENTRY_FORMAT_KEY.into(),
            value: ENTRY_FORMAT_KAFKA.into(),
        }],
        num_messages_in_batch: Some(
            i32::try_from(span)
                .map_err(|_| EntryError::Encode("offset span overflows int32".into()))?,
        ),
        ..Default::default()
    };
    Ok(frame_entry(&md, &payload, false, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_start_from_the_defaults() {
        let o = KafkaBatchOptions::DEFAULT
            .with_compression(KafkaCodec::Zstd)
            .with_producer_id(3);
        assert_eq!((o.compression, o.producer_id), (KafkaCodec::Zstd, 3));
        assert_eq!(o.partition_leader_epoch, -1);
        assert!(!o.control && !o.transactional);
    }
}
