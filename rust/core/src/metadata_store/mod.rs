//! Pulsar's metadata store, read side (spec bookkeeper.md §1, §2.5): how a
//! topic name maps to store paths ([`topic`]), and the formats of the nodes a
//! reader needs ([`nodes`]): the managed-ledger info with its ledgers, the
//! compaction cursor, partitioned-topic metadata and bookie registrations.
//!
//! This layer reads bytes handed to it: the store itself (ZooKeeper, the
//! RocksDB store of a standalone, the admin REST API) is reached by the caller
//! through [`MetadataStore`]; the walk over it is `crate::layout`.

pub mod nodes;
pub mod store;
pub mod topic;

use crate::error::ErrorKind;

pub use nodes::{
    bookie_address, compacted_ledger, cursor_info, managed_ledger_info, partition_count,
    strip_rocksdb_header, Compaction, CursorInfo, LedgerEntry, ManagedLedger, OffloadState,
};
pub use store::{MemoryStore, MetadataStore};
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
    /// A node that must exist does not (a topic with no managed ledger).
    #[error("{0}")]
    Missing(String),
    /// The store (or a bookie asked for a cursor ledger) failed or was interrupted.
    #[error("{0}")]
    Io(String),
}

impl MetadataError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Name(_) => ErrorKind::Options,
            Self::Node(_) | Self::Missing(_) => ErrorKind::Data,
            Self::Io(_) => ErrorKind::Io,
        }
    }
}
