//! Reassembly options, the status values and the output schema.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{EntryError, Result};
use crate::format::compression::{size_limit, DEFAULT_MAX_UNCOMPRESSED_SIZE};

pub const STATUS_COMPLETE: &str = "complete";
pub const STATUS_INCOMPLETE: &str = "incomplete";
pub const STATUS_EXPIRED: &str = "expired";
pub const STATUS_EVICTED: &str = "evicted";
pub const STATUS_DUPLICATE: &str = "duplicate";

/// Incomplete messages (chunk ids only, no bytes) kept open per partition;
/// past it the oldest is reported early.
pub const ORPHAN_LIMIT: usize = 10_000;
/// Chunks one incomplete message may collect before it is reported.
pub(super) const ORPHAN_CHUNK_LIMIT: usize = 1 << 16;

/// Columns [`reassemble_partition`] adds to the leftover rows.
pub const WATERMARK_COLUMN: &str = "_watermark";
pub const ROLE_COLUMN: &str = "_role";
pub(super) const ROLE_CHUNK: &str = "chunk";
pub(super) const ROLE_RESTART: &str = "restart";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyOptions {
    /// Live messages kept at once; `None` = unlimited. Pulsar's consumer
    /// default is 10, but a consumer gets evicted chunks redelivered, while an
    /// offline reader would lose them: the default is larger.
    pub max_pending: Option<usize>,
    /// Stream time (ms) after which a pending message expires; `None` = never.
    pub expire_after_ms: Option<i64>,
    /// Bound on `total_chunk_msg_size` and on the decompressed message.
    pub max_message_size: usize,
}

impl Default for ReassemblyOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl ReassemblyOptions {
    /// The defaults: 100 messages pending, expired after 60 s of stream
    /// time, messages up to [`DEFAULT_MAX_UNCOMPRESSED_SIZE`].
    pub const DEFAULT: Self = ReassemblyOptions {
        max_pending: Some(100),
        expire_after_ms: Some(60_000),
        max_message_size: DEFAULT_MAX_UNCOMPRESSED_SIZE,
    };

    /// Options from every field, checked ([`Self::validate`]).
    pub fn try_new(
        max_pending: Option<usize>,
        expire_after_ms: Option<i64>,
        max_message_size: usize,
    ) -> Result<Self> {
        Self {
            max_pending,
            expire_after_ms,
            max_message_size,
        }
        .checked()
    }

    /// `self`, once [`Self::validate`] accepts it.
    pub fn checked(self) -> Result<Self> {
        self.validate().map(|()| self)
    }

    #[must_use]
    pub fn with_max_pending(mut self, v: Option<usize>) -> Self {
        self.max_pending = v;
        self
    }

    #[must_use]
    pub fn with_expire_after_ms(mut self, v: Option<i64>) -> Self {
        self.expire_after_ms = v;
        self
    }

    #[must_use]
    pub fn with_max_message_size(mut self, v: usize) -> Self {
        self.max_message_size = v;
        self
    }

    /// `max_pending` at least 1 and `expire_after_ms` not negative when set,
    /// `max_message_size` within [`size_limit`]'s cap.
    pub fn validate(&self) -> Result<()> {
        size_limit("max_message_size", self.max_message_size)?;
        if self.max_pending == Some(0) {
            return Err(EntryError::Options(
                "max_pending must be at least 1 (None means unlimited)".into(),
            ));
        }
        if self.expire_after_ms.is_some_and(|e| e < 0) {
            return Err(EntryError::Options(
                "expire_after_ms must not be negative (None means never)".into(),
            ));
        }
        Ok(())
    }
}

/// The columns reassembly adds to its input's.
pub(super) fn added_fields() -> Vec<Field> {
    let list = || DataType::List(Arc::new(Field::new("item", DataType::Int64, true)));
    vec![
        Field::new("first_chunk_ledger_id", DataType::Int64, true),
        Field::new("first_chunk_entry_id", DataType::Int64, true),
        Field::new("status", DataType::Utf8, true),
        Field::new("chunk_ledger_ids", list(), true),
        Field::new("chunk_entry_ids", list(), true),
    ]
}

/// The output schema for a decoded input schema.
pub fn output_schema(input: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(added_fields());
    Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
}

pub(super) const REQUIRED: [&str; 11] = [
    "ledger_id",
    "entry_id",
    "publish_time",
    "uuid",
    "chunk_id",
    "num_chunks",
    "total_chunk_size",
    "value",
    "compression",
    "uncompressed_size",
    "error",
];

pub(super) fn check_input_schema(schema: &Schema) -> Result<()> {
    for name in REQUIRED {
        if schema.column_with_name(name).is_none() {
            return Err(EntryError::Schema(format!(
                "input has no `{name}` column: reassembly reads the output of decode()"
            )));
        }
    }
    for f in added_fields() {
        if schema.column_with_name(f.name()).is_some() {
            return Err(EntryError::Schema(format!(
                "input already has a `{}` column: it is already reassembled",
                f.name()
            )));
        }
    }
    Ok(())
}
