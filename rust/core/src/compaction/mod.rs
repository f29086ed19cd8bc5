//! Topic compaction with Pulsar's semantics (spec compaction.md), outside a
//! broker.
//!
//! The pieces mirror the broker's two phases, split so that a distributed
//! engine can run each one where it likes:
//! - [`scan`]: what phase one needs from one entry — one [`scan::Candidate`]
//!   per message (key, tombstone flag, event time, chunk fields);
//! - [`keys`]: the per-key survivor choice ([`keys::KeyState`]), in
//!   publishing or event-time order, chunked messages kept whole;
//! - [`rebatch`]: phase two, RawBatchConverter's rewrite of one batch entry;
//! - [`compactor`]: the in-process driver over Arrow entry tables;
//! - [`messages`]: complete messages with values (chunks reassembled);
//! - [`strategy`] and [`strategic`]: PIP-215 strategies and the strategic
//!   compactor (new batches, merge hook);
//! - [`position`]: last-message position (PIP-429) and the publish-time search;
//! - [`ledger_record`]: the compacted-ledger record `[u32][MessageIdData][u32][entry]`.
//!
//! Keys never interact, so the survivor set is the union of independent
//! per-key folds over candidates in topic order. The in-process compactor
//! folds all keys in one pass; a distributed engine can shuffle candidates by
//! key, sort each key's run by position and fold it with the same
//! [`keys::KeyState`], and gets the same survivors.

pub mod builtin;
pub mod compactor;
pub mod distributed;
pub mod keyed;
pub mod keys;
pub mod ledger_record;
pub mod lookup;
pub mod messages;
pub mod position;
pub mod rebatch;
pub mod records;
pub mod scan;
pub mod strategic;
pub mod strategic_distributed;
pub mod strategy;
pub mod topic;

use std::fmt;
use std::str::FromStr;

use crate::error::EntryError;

/// Where a message sits in its topic partition: entry position plus batch
/// index (−1 for a non-batched entry). Orders as Pulsar's message ids do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub batch_index: i32,
}

impl Position {
    pub fn new(ledger_id: i64, entry_id: i64, batch_index: i32) -> Self {
        Position {
            ledger_id,
            entry_id,
            batch_index,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            self.ledger_id, self.entry_id, self.batch_index
        )
    }
}

/// How phase one picks the survivor of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// The last published value wins (`PublishingOrderCompactor`, the default).
    #[default]
    Publish,
    /// The value with the newest event time wins (`EventTimeOrderCompactor`,
    /// PIP-352), with its tie rules: `≥` for single messages, `>` inside batches.
    EventTime,
}

impl Order {
    /// The order's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Order::Publish => "publish",
            Order::EventTime => "event_time",
        }
    }
}

impl FromStr for Order {
    type Err = EntryError;
    fn from_str(s: &str) -> Result<Self, EntryError> {
        match s.to_ascii_lowercase().replace('-', "_").as_str() {
            "publish" | "publishing" | "publish_order" => Ok(Order::Publish),
            "event_time" | "event_time_order" => Ok(Order::EventTime),
            _ => Err(EntryError::Options(format!(
                "unknown compaction order {s:?}; expected \"publish\" or \"event_time\""
            ))),
        }
    }
}

/// Options shared by both phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    pub order: Order,
    /// Keep messages without a key (`topicCompactionRetainNullKey`; Pulsar's
    /// default is false since 3.2).
    pub retain_null_key: bool,
    /// Entries whose stored CRC32C does not match are kept whole, unread.
    pub verify_checksum: bool,
    pub max_uncompressed_size: usize,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl CompactOptions {
    /// The defaults: publish order, null keys dropped, checksums verified,
    /// payloads up to the default decompressed size.
    pub const DEFAULT: Self = CompactOptions {
        order: Order::Publish,
        retain_null_key: false,
        verify_checksum: true,
        max_uncompressed_size: crate::format::compression::DEFAULT_MAX_UNCOMPRESSED_SIZE,
    };

    /// Options from every field, checked ([`Self::validate`]).
    pub fn try_new(
        order: Order,
        retain_null_key: bool,
        verify_checksum: bool,
        max_uncompressed_size: usize,
    ) -> Result<Self, EntryError> {
        Self {
            order,
            retain_null_key,
            verify_checksum,
            max_uncompressed_size,
        }
        .checked()
    }

    /// `max_uncompressed_size` within the cap.
    pub fn validate(&self) -> Result<(), EntryError> {
        let size = self.max_uncompressed_size;
        crate::format::compression::size_limit("max_uncompressed_size", size).map(|_| ())
    }

    /// `self`, once [`Self::validate`] accepts it.
    pub fn checked(self) -> Result<Self, EntryError> {
        self.validate().map(|()| self)
    }

    #[must_use]
    pub fn with_order(mut self, v: Order) -> Self {
        self.order = v;
        self
    }

    #[must_use]
    pub fn with_retain_null_key(mut self, v: bool) -> Self {
        self.retain_null_key = v;
        self
    }

    #[must_use]
    pub fn with_verify_checksum(mut self, v: bool) -> Self {
        self.verify_checksum = v;
        self
    }

    #[must_use]
    pub fn with_max_uncompressed_size(mut self, v: usize) -> Self {
        self.max_uncompressed_size = v;
        self
    }
}
