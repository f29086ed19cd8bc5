//! Pulsar's metadata store, read side (spec bookkeeper.md §1, §2.5): how a
//! topic name maps to store paths ([`topic`]), and the formats of the nodes a
//! reader needs ([`nodes`]): the managed-ledger info with its ledgers, the
//! compaction cursor, partitioned-topic metadata and bookie registrations.
//!
//! This layer reads bytes handed to it: the store itself (ZooKeeper, the
//! RocksDB store of a standalone, the admin REST API) is reached by the caller.

pub mod nodes;
pub mod topic;

use crate::error::ErrorKind;

pub use nodes::{
    bookie_address, compacted_ledger, cursor_info, managed_ledger_info, partition_count,
    strip_rocksdb_header, Compaction, CursorInfo, LedgerEntry, ManagedLedger, OffloadState,
};
pub use topic::TopicName;

/// What went wrong reading the metadata store's nodes or names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// A topic name or store URL that is not Pulsar's form.
    #[error("{0}")]
    Name(String),
    /// A node whose bytes are not the format its path promises.
    #[error("{0}")]
    Node(String),
}

impl MetadataError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Name(_) => ErrorKind::Options,
            Self::Node(_) => ErrorKind::Data,
        }
    }
}
