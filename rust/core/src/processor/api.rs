//! The [`PayloadProcessor`] trait and the types it speaks: the entry
//! context a processor is given, the messages it emits.

use std::borrow::Cow;

use crate::error::{EntryError, Result};
use crate::format::compression::{size_limit, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use crate::format::frame::EntryView;
use crate::format::metadata::{MessageMetadataView, Properties};
use crate::format::wire::Utf8Errors;

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
    /// The selector of an `entry_property`: `(key, value)`, or `None` for every entry.
    pub fn of_property(property: Option<(String, Option<String>)>) -> Selector {
        match property {
            None => Selector::Any,
            Some((key, value)) => Selector::Property { key, value },
        }
    }

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

/// Where an entry came from.
#[derive(Debug, Clone, Copy)]
pub struct EntryId {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
}

/// What `decode` is asked to do; processors see it in [`EntryContext`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    pub verify_checksum: bool,
    pub keep_markers: bool,
    pub max_uncompressed_size: usize,
    /// Text fields that are not UTF-8: replaced (default, as Pulsar's Java
    /// client reads them) or an error row.
    pub utf8_errors: Utf8Errors,
    /// Total decompressed payload bytes one decode (up to `finish`) may
    /// produce; an entry that would exceed it is an error row. `None`: no
    /// budget beyond `max_uncompressed_size` per payload.
    pub max_output_bytes: Option<usize>,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl DecodeOptions {
    /// The defaults: checksums verified, markers dropped, payloads up to
    /// [`DEFAULT_MAX_UNCOMPRESSED_SIZE`], bad UTF-8 replaced, no output budget.
    pub const DEFAULT: Self = DecodeOptions {
        verify_checksum: true,
        keep_markers: false,
        max_uncompressed_size: DEFAULT_MAX_UNCOMPRESSED_SIZE,
        utf8_errors: Utf8Errors::Replace,
        max_output_bytes: None,
    };

    /// Options from every field, checked ([`Self::validate`]).
    pub fn try_new(
        verify_checksum: bool,
        keep_markers: bool,
        max_uncompressed_size: usize,
        utf8_errors: Utf8Errors,
        max_output_bytes: Option<usize>,
    ) -> Result<Self> {
        Self {
            verify_checksum,
            keep_markers,
            max_uncompressed_size,
            utf8_errors,
            max_output_bytes,
        }
        .checked()
    }

    /// `max_uncompressed_size` within [`size_limit`]'s cap, `max_output_bytes`
    /// at least 1 when set.
    pub fn validate(&self) -> Result<()> {
        size_limit("max_uncompressed_size", self.max_uncompressed_size)?;
        if self.max_output_bytes == Some(0) {
            return Err(EntryError::Options(
                "max_output_bytes must be at least 1 (None means no budget)".into(),
            ));
        }
        Ok(())
    }

    /// `self`, once [`Self::validate`] accepts it.
    pub fn checked(self) -> Result<Self> {
        self.validate().map(|()| self)
    }

    #[must_use]
    pub fn with_verify_checksum(mut self, v: bool) -> Self {
        self.verify_checksum = v;
        self
    }

    #[must_use]
    pub fn with_keep_markers(mut self, v: bool) -> Self {
        self.keep_markers = v;
        self
    }

    #[must_use]
    pub fn with_max_uncompressed_size(mut self, v: usize) -> Self {
        self.max_uncompressed_size = v;
        self
    }

    #[must_use]
    pub fn with_utf8_errors(mut self, v: Utf8Errors) -> Self {
        self.utf8_errors = v;
        self
    }

    #[must_use]
    pub fn with_max_output_bytes(mut self, v: Option<usize>) -> Self {
        self.max_output_bytes = v;
        self
    }
}
