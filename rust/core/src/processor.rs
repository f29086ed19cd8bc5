//! Payload processors (PIP-96): turn one entry's payload into messages.
//!
//! `decode` picks, per entry, the first processor whose [`Selector`] matches
//! the entry's MessageMetadata properties, the way Pulsar's
//! `MessagePayloadProcessor` implementations check `context.getProperty(..)`.
//! The default list is `[kafka, pulsar]`: KoP entries (`entry.format=kafka`)
//! decode with no configuration and everything else as Pulsar batches.
//!
//! A processor runs after checksum verification and Pulsar-level
//! decompression (as in Pulsar's consumer). Markers, encrypted entries and
//! chunks never reach a processor: they cannot be opened on their own.

use std::borrow::Cow;
use std::sync::Arc;

use crate::batch::{split_batch, BatchRecord};
use crate::decode::{DecodeOptions, EntryId};
use crate::error::Result;
use crate::frame::EntryView;
use crate::metadata::{MessageMetadataView, Properties};

/// Which entries a processor takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// Every entry.
    Any,
    /// Entries whose MessageMetadata has property `key`, with `value`
    /// (ASCII case-insensitive, as KoP compares `entry.format`) when given.
    Property { key: String, value: Option<String> },
}

impl Selector {
    pub fn matches(&self, md: &MessageMetadataView<'_>) -> bool {
        match self {
            Selector::Any => true,
            Selector::Property { key, value } => md.properties.iter().any(|(k, v)| {
                k == key
                    && value
                        .as_deref()
                        .is_none_or(|want| want.eq_ignore_ascii_case(v))
            }),
        }
    }
}

/// Kafka's timestamp types (batch attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "create_time",
            TimestampType::LogAppendTime => "log_append_time",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "create_time" => Some(TimestampType::CreateTime),
            "log_append_time" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }
}

/// A transaction a message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnKey {
    /// Pulsar transaction id (`txnid_most_bits`, `txnid_least_bits`).
    Pulsar { most: u64, least: u64 },
    /// Kafka transactional producer.
    Kafka { producer_id: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    Committed,
    Aborted,
}

/// Kafka record headers as read: UTF-8 keys (by contract) and byte values.
pub type RawHeaders<'a> = [(&'a [u8], Option<&'a [u8]>)];

/// A message's properties: Pulsar's lazily read KeyValues, explicit pairs,
/// or Kafka headers read as text (invalid UTF-8 replaced, as KoP's
/// `new String(value, UTF_8)` does).
#[derive(Debug, Clone)]
pub enum MessageProperties<'a> {
    Pulsar(Properties<'a>),
    Pairs(Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>),
    Headers(&'a RawHeaders<'a>),
}

/// A message's exact headers (`headers` column).
#[derive(Debug, Clone)]
pub enum MessageHeaders<'a> {
    Raw(&'a RawHeaders<'a>),
    Pairs(Vec<(Cow<'a, str>, Option<&'a [u8]>)>),
}

impl Default for MessageProperties<'_> {
    fn default() -> Self {
        MessageProperties::Pairs(Vec::new())
    }
}

/// A marker / control record: skipped unless `keep_markers`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkerInfo {
    pub marker_type: Option<i32>,
    /// The transaction this marker ends.
    pub ends: Option<(TxnKey, TxnOutcome)>,
}

/// One output row as a processor produces it. Entry-level columns
/// (ids, producer, publish time, broker metadata...) come from the entry;
/// the `Option` overrides here replace them when set.
#[derive(Debug, Clone, Default)]
pub struct Message<'a> {
    /// −1 for a non-batched message; `None` leaves the column null.
    pub batch_index: Option<i32>,
    pub sequence_id: Option<i64>,
    pub event_time: Option<i64>,
    pub timestamp_type: Option<TimestampType>,
    pub key: Option<Cow<'a, str>>,
    pub key_b64_encoded: bool,
    pub ordering_key: Option<&'a [u8]>,
    pub properties: MessageProperties<'a>,
    /// Exact (key, value) pairs, for formats whose headers are bytes.
    pub headers: Option<MessageHeaders<'a>>,
    /// `None` is a null value.
    pub value: Option<&'a [u8]>,
    pub compacted_out: bool,
    /// Continuous offset; when `None` it is derived from the broker index.
    pub offset: Option<i64>,
    /// Overrides the entry's compression name (e.g. a Kafka batch codec).
    pub compression: Option<&'static str>,
    /// Overrides the entry's `txnid_*` columns.
    pub txnid: Option<(i64, i64)>,
    /// The transaction the message belongs to, for `txn_status`.
    pub txn: Option<TxnKey>,
    pub marker: Option<MarkerInfo>,
}

/// What a processor is told about the entry it processes.
pub struct EntryContext<'a> {
    pub id: EntryId,
    pub entry: &'a EntryView<'a>,
    pub options: &'a DecodeOptions,
}

impl<'a> EntryContext<'a> {
    pub fn metadata(&self) -> &MessageMetadataView<'a> {
        &self.entry.metadata
    }

    /// An entry-level property (PIP-96 `getProperty`).
    pub fn property(&self, key: &str) -> Option<&'a str> {
        self.entry
            .metadata
            .properties
            .iter()
            .find_map(|(k, v)| (k == key).then_some(v))
    }

    /// The broker index of the entry's first message:
    /// `index − (num_messages − 1)`, when the broker stamped an index.
    pub fn base_offset(&self) -> Option<i64> {
        base_offset(self.entry)
    }
}

pub(crate) fn base_offset(entry: &EntryView<'_>) -> Option<i64> {
    let index = entry.broker_entry_metadata?.index? as i64;
    Some(index - (i64::from(entry.metadata.num_messages()) - 1))
}

/// Receives a processor's messages. `emit` takes the sink by value, so an
/// entry's rows are delivered once, after the whole payload was validated.
pub struct Sink<'s> {
    pub(crate) emit: &'s mut dyn FnMut(&[Message<'_>]),
}

impl Sink<'_> {
    pub fn emit(self, messages: &[Message<'_>]) {
        (self.emit)(messages)
    }
}

/// A payload processor. Built-ins are Rust; the Python bindings bridge
/// user processors written in Python.
pub trait PayloadProcessor: Send + Sync {
    /// Shown in the `processor` output column and in error texts.
    fn name(&self) -> &str;
    fn selector(&self) -> &Selector;
    /// Decodes `payload` (checksum-verified, Pulsar-decompressed). Emits all
    /// messages at once, or returns an error and emits nothing.
    fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()>;

    /// True only for the built-in [`PulsarProcessor`], whose batches `decode`
    /// splits itself (same rows, values written straight into the output).
    #[doc(hidden)]
    fn is_builtin_pulsar(&self) -> bool {
        false
    }
}

/// The ordered processor list `decode` tries.
#[derive(Clone)]
pub struct Processors(Vec<Arc<dyn PayloadProcessor>>);

impl Default for Processors {
    /// `[kafka, pulsar]`.
    fn default() -> Self {
        Processors(vec![
            Arc::new(crate::kafka::KafkaProcessor::new()),
            Arc::new(PulsarProcessor::new()),
        ])
    }
}

impl Processors {
    pub fn new(list: Vec<Arc<dyn PayloadProcessor>>) -> Self {
        Processors(list)
    }

    pub fn select(&self, md: &MessageMetadataView<'_>) -> Option<&dyn PayloadProcessor> {
        self.0
            .iter()
            .find(|p| p.selector().matches(md))
            .map(|p| p.as_ref())
    }

    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|p| p.name()).collect()
    }
}

/// Pulsar's own format (PIP-96 `DEFAULT`): a batch split into its records,
/// or the whole payload as one message.
pub struct PulsarProcessor {
    selector: Selector,
}

impl PulsarProcessor {
    pub const NAME: &'static str = "pulsar";

    pub fn new() -> Self {
        PulsarProcessor {
            selector: Selector::Any,
        }
    }
}

impl Default for PulsarProcessor {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn pulsar_txn(md: &MessageMetadataView<'_>) -> Option<TxnKey> {
    match (md.txnid_most_bits, md.txnid_least_bits) {
        (None, None) => None,
        (most, least) => Some(TxnKey::Pulsar {
            most: most.unwrap_or(0),
            least: least.unwrap_or(0),
        }),
    }
}

/// The message of a non-batched entry (PIP-96 `asSingleMessage`).
pub fn single_message<'a>(md: &MessageMetadataView<'a>, value: &'a [u8]) -> Message<'a> {
    Message {
        batch_index: Some(-1),
        sequence_id: Some(md.sequence_id as i64),
        event_time: md.event_time.filter(|&t| t != 0).map(|t| t as i64),
        key: md
            .partition_key
            .filter(|_| md.null_partition_key != Some(true))
            .map(Cow::Borrowed),
        key_b64_encoded: md.partition_key_b64_encoded == Some(true),
        ordering_key: md.ordering_key,
        properties: MessageProperties::Pulsar(md.properties),
        value: (md.null_value != Some(true)).then_some(value),
        txn: pulsar_txn(md),
        ..Default::default()
    }
}

/// A batch member as Java's consumer builds it (`MessageImpl.create`): the
/// key, ordering key and properties come only from the record; sequence id,
/// event time and the null flags fall back to the batch header.
pub fn batch_message<'a>(md: &MessageMetadataView<'a>, r: &BatchRecord<'a>) -> Message<'a> {
    let smm = &r.metadata;
    let null_key = smm.null_partition_key.or(md.null_partition_key) == Some(true);
    let null_value = smm.null_value.or(md.null_value) == Some(true);
    Message {
        batch_index: Some(r.index),
        sequence_id: Some(smm.sequence_id.unwrap_or(md.sequence_id) as i64),
        event_time: smm
            .event_time
            .or(md.event_time)
            .filter(|&t| t != 0)
            .map(|t| t as i64),
        key: smm.partition_key.filter(|_| !null_key).map(Cow::Borrowed),
        key_b64_encoded: smm.partition_key_b64_encoded == Some(true),
        ordering_key: smm.ordering_key,
        properties: MessageProperties::Pulsar(smm.properties),
        value: (!null_value).then_some(r.payload),
        compacted_out: smm.is_compacted_out(),
        txn: pulsar_txn(md),
        ..Default::default()
    }
}

/// Splits a Pulsar payload as the `DEFAULT` processor does.
pub fn pulsar_messages<'a>(
    md: &MessageMetadataView<'a>,
    payload: &'a [u8],
) -> Result<Vec<Message<'a>>> {
    if !md.is_batch() {
        return Ok(vec![single_message(md, payload)]);
    }
    let mut records = Vec::new();
    split_batch(payload, md, &mut records)?;
    Ok(records.iter().map(|r| batch_message(md, r)).collect())
}

impl PayloadProcessor for PulsarProcessor {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn selector(&self) -> &Selector {
        &self.selector
    }

    fn is_builtin_pulsar(&self) -> bool {
        true
    }

    fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()> {
        let messages = pulsar_messages(&ctx.entry.metadata, payload)?;
        sink.emit(&messages);
        Ok(())
    }
}

pub(crate) fn marker_message<'a>(md: &MessageMetadataView<'a>, payload: &'a [u8]) -> Message<'a> {
    let ends = match (md.marker_type, pulsar_txn(md)) {
        (Some(21), Some(txn)) => Some((txn, TxnOutcome::Committed)),
        (Some(22), Some(txn)) => Some((txn, TxnOutcome::Aborted)),
        _ => None,
    };
    Message {
        marker: Some(MarkerInfo {
            marker_type: md.marker_type,
            ends,
        }),
        txn: None,
        ..single_message(md, payload)
    }
}
