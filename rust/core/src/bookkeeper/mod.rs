//! Reading a live cluster's BookKeeper storage (spec bookkeeper.md), read
//! only: ledger metadata ([`ledger`]), the stored entry and its digests
//! ([`digest`]), the bookie wire protocol ([`protocol`]) and a client that
//! reads ledgers from the bookies with replica failover ([`client`]).
//!
//! The output is the entry table the offload reader gives
//! (`ledger_id, entry_id, data, error`), ready for `decode`.

pub mod client;
pub mod digest;
pub mod files;
pub mod ledger;
pub mod protocol;
pub mod tls;
pub mod transport;

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};

use crate::error::ErrorKind;

pub use client::{BookieClient, ClientOptions, Connector, ReadEntry, Transport, Window};
pub use digest::{master_key, DigestType, Digester, StoredEntry};
pub use ledger::{ledger_path, LedgerMetadata, LedgerState, Segment};

/// What went wrong reading BookKeeper storage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookKeeperError {
    /// A stored entry failed its checks (length, ids, digest).
    #[error("{0}")]
    Data(String),
    /// Ledger metadata that cannot be used.
    #[error("ledger metadata: {0}")]
    Metadata(String),
    /// A bookie answered something that is not the protocol.
    #[error("bookie protocol: {0}")]
    Protocol(String),
    /// A bookie could not be reached or did not answer in time.
    #[error("{0}")]
    Io(String),
    /// An option out of range.
    #[error("invalid option: {0}")]
    Options(String),
    /// The caller's interrupt check asked the read to stop.
    #[error("{0}")]
    Interrupted(String),
}

impl BookKeeperError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Data(_) | Self::Metadata(_) | Self::Protocol(_) => ErrorKind::Data,
            Self::Io(_) | Self::Interrupted(_) => ErrorKind::Io,
            Self::Options(_) => ErrorKind::Options,
        }
    }
}

/// Entries as an entry table (`ledger_id, entry_id, data, error`,
/// [`crate::decode::entries::entry_table_schema`]): a failed entry is a row
/// with a null `data` and its `error`.
pub fn entries_batch(entries: &[ReadEntry]) -> RecordBatch {
    let mut ledger = Int64Builder::with_capacity(entries.len());
    let mut entry = Int64Builder::with_capacity(entries.len());
    let bytes: usize = entries
        .iter()
        .map(|e| e.data.as_ref().map_or(0, Vec::len))
        .sum();
    let mut data = BinaryBuilder::with_capacity(entries.len(), bytes);
    let mut error = StringBuilder::new();
    for e in entries {
        ledger.append_value(e.ledger_id);
        entry.append_value(e.entry_id);
        match &e.data {
            Ok(d) => {
                data.append_value(d);
                error.append_null();
            }
            Err(why) => {
                data.append_null();
                error.append_value(why);
            }
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ledger.finish()),
        Arc::new(entry.finish()),
        Arc::new(data.finish()),
        Arc::new(error.finish()),
    ];
    RecordBatch::try_new(crate::decode::entries::entry_table_schema(), columns)
        .expect("columns match the entry-table schema")
}
