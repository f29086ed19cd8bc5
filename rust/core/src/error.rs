//! The core's errors: [`ErrorKind`], the format layer's [`FormatError`] and
//! the crate's wrapper [`EntryError`]; `offload` has its own
//! [`OffloadError`](crate::offload::OffloadError).
//!
//! Every variant says what failed and where: offsets are absolute byte
//! positions in the entry, except `Batch` errors, whose offsets are positions
//! in the (decompressed) batch buffer, and message-id errors, whose offsets are
//! positions in the serialized id, as the message says.

use std::fmt;

/// Which byte space an offset refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// The stored entry bytes.
    Entry,
    /// The decompressed batch buffer.
    BatchBuffer,
    /// A serialized MessageIdData.
    MessageId,
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Space::Entry => "entry offset",
            Space::BatchBuffer => "batch-buffer offset",
            Space::MessageId => "message-id offset",
        })
    }
}

/// The format layer's error: the stored bytes are malformed (framing,
/// checksum, protobuf, size limits, codecs, batches). Every variant's kind is
/// [`ErrorKind::Data`]. Named [`crate::format::FormatError`] too; it is
/// declared here, below `format`, so that [`EntryError`] can wrap it without
/// `error` depending on the layer above it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("truncated {what} at {space} {offset}: needs {needed} bytes, {available} available")]
    Truncated {
        what: &'static str,
        space: Space,
        offset: usize,
        needed: usize,
        available: usize,
    },
    #[error("checksum mismatch: stored crc32c {stored:#010x}, computed {computed:#010x} over entry bytes {start}..{end}")]
    ChecksumMismatch {
        stored: u32,
        computed: u32,
        start: usize,
        end: usize,
    },
    #[error("invalid {message} protobuf at {space} {offset}: {reason}")]
    Protobuf {
        message: &'static str,
        space: Space,
        offset: usize,
        reason: String,
    },
    #[error("{message} at {space} {offset} is missing required field `{field}`")]
    MissingField {
        message: &'static str,
        space: Space,
        offset: usize,
        field: &'static str,
    },
    #[error("{what} {size} exceeds the limit of {limit} bytes (entry offset {offset})")]
    TooLarge {
        what: &'static str,
        size: u64,
        limit: u64,
        offset: usize,
    },
    #[error("{codec} decompression of the payload at entry offset {offset} failed: {reason}")]
    Decompress {
        codec: &'static str,
        offset: usize,
        reason: String,
    },
    #[error("unknown compression type {value} in metadata at entry offset {offset}")]
    UnknownCompression { value: i32, offset: usize },
    #[error("batch record {index} at batch-buffer offset {offset}: {reason}")]
    Batch {
        index: usize,
        offset: usize,
        reason: String,
    },
}

impl FormatError {
    /// The kind of this error: always [`ErrorKind::Data`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Data
    }
}

/// The crate's error: a layer's error wrapped (`Format`), or one raised by the
/// layers above `format` (processors, decode, chunks, compaction, seek).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Malformed stored bytes, from the format layer.
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("Kafka record batch {batch} at entry offset {offset}: {reason}")]
    Kafka {
        batch: usize,
        offset: usize,
        reason: String,
    },
    #[error("processor `{processor}` failed: {reason}")]
    Processor { processor: String, reason: String },
    #[error(
        "no processor takes this entry (processors: {processors}; entry properties: {properties})"
    )]
    NoProcessor {
        processors: String,
        properties: String,
    },
    /// The input table lacks a column, or a column has the wrong type.
    #[error("input schema: {0}")]
    Schema(String),
    /// An option's value is out of range or contradicts another option.
    #[error("invalid option: {0}")]
    Options(String),
    /// Input rows are not in the order the operation needs.
    #[error("input order: {0}")]
    Order(String),
    /// Malformed data outside an entry's framing: a ledger record, a packed
    /// position list, a compacted entry with no message left.
    #[error("malformed data: {0}")]
    Data(String),
    /// Reading storage failed.
    #[error("I/O: {0}")]
    Io(String),
    #[error("cannot encode: {0}")]
    Encode(String),
    #[error("compaction strategy failed: {0}")]
    Strategy(String),
}

/// The kind of a failure: what the caller did wrong, or what was wrong with
/// the data or the storage. Every error type of the core answers `kind()`,
/// and the Python bindings map each kind to one exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input table lacks a column, or a column has the wrong type.
    InputSchema,
    /// An option's value is out of range or contradicts another option.
    Options,
    /// Input rows are not in the order the operation needs.
    Order,
    /// The stored bytes are malformed: framing, checksum, protobuf, codec, batch.
    Data,
    /// Reading storage failed: a file, an object, a connection.
    Io,
}

impl EntryError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EntryError::Format(e) => e.kind(),
            EntryError::Schema(_) => ErrorKind::InputSchema,
            EntryError::Options(_) | EntryError::Encode(_) | EntryError::Strategy(_) => {
                ErrorKind::Options
            }
            EntryError::Order(_) => ErrorKind::Order,
            EntryError::Io(_) => ErrorKind::Io,
            EntryError::Data(_)
            | EntryError::Kafka { .. }
            | EntryError::Processor { .. }
            | EntryError::NoProcessor { .. } => ErrorKind::Data,
        }
    }
}

pub type Result<T, E = EntryError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_error_variant_has_its_kind() {
        let s = || "x".to_string();
        let cases = [
            (EntryError::Schema(s()), ErrorKind::InputSchema),
            (EntryError::Options(s()), ErrorKind::Options),
            (EntryError::Encode(s()), ErrorKind::Options),
            (EntryError::Strategy(s()), ErrorKind::Options),
            (EntryError::Order(s()), ErrorKind::Order),
            (EntryError::Data(s()), ErrorKind::Data),
            (EntryError::Io(s()), ErrorKind::Io),
            (
                EntryError::Kafka {
                    batch: 0,
                    offset: 0,
                    reason: s(),
                },
                ErrorKind::Data,
            ),
            (
                EntryError::Processor {
                    processor: s(),
                    reason: s(),
                },
                ErrorKind::Data,
            ),
            (
                EntryError::NoProcessor {
                    processors: s(),
                    properties: s(),
                },
                ErrorKind::Data,
            ),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
    }

    #[test]
    fn format_errors_are_data_and_keep_their_text_when_wrapped() {
        let e = FormatError::ChecksumMismatch {
            stored: 1,
            computed: 2,
            start: 6,
            end: 40,
        };
        assert_eq!(e.kind(), ErrorKind::Data);
        let wrapped: EntryError = e.clone().into();
        assert_eq!(wrapped.kind(), ErrorKind::Data);
        assert_eq!(wrapped, EntryError::Format(e.clone()));
        assert_eq!(
            wrapped.to_string(),
            "checksum mismatch: stored crc32c 0x00000001, computed 0x00000002 over entry bytes 6..40"
        );
        assert_eq!(wrapped.to_string(), e.to_string());
    }

    #[test]
    fn kinds_of_the_old_catch_all_now_differ_by_cause() {
        let texts = [
            EntryError::Schema("a".into()).to_string(),
            EntryError::Options("a".into()).to_string(),
            EntryError::Order("a".into()).to_string(),
            EntryError::Data("a".into()).to_string(),
        ];
        assert_eq!(
            texts,
            [
                "input schema: a",
                "invalid option: a",
                "input order: a",
                "malformed data: a"
            ]
        );
    }
}
