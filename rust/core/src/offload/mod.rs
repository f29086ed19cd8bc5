//! Tiered-storage offload objects: the data and index objects Pulsar's
//! blob-store offloader writes (spec chunks-processors-offload.md §4).
//!
//! A ledger offloaded to S3/GCS/Azure/... becomes two objects:
//! - the **data object** `<uuid>-ledger-<id>`: blocks (one multipart part
//!   each) made of a 128-byte header, entries as
//!   `[i32 length][i64 entry id][entry bytes]`, then `FE DC DE AD` padding;
//! - the **index object** `<uuid>-ledger-<id>-index` (v1): one
//!   `(first entry id, part id, offset)` per block plus the ledger's
//!   BookKeeper metadata.
//!
//! The streaming variant (PIP-76) names them `<uuid>` / `<uuid>-index`; its
//! block headers carry the ledger id and its v2 index covers several ledgers,
//! each with a managed-ledger `LedgerInfo`.
//!
//! Everything here works on byte slices: the caller reads the objects from
//! whatever filesystem holds them, whole or one block range at a time (see
//! [`OffloadIndex::blocks`]). Reading never panics and never gives up on a
//! whole object: a bad block or entry becomes an error row naming the object
//! offset, and entries the index promises but the data lacks are reported.
//!
//! Modules: [`block`] (block headers and padding), [`index`] (index objects
//! and their metadata), [`read`] (data object → Arrow rows), [`write`]
//! (entries → objects, as Pulsar's offloader lays them out), [`name`]
//! (object naming).

pub mod block;
pub mod index;
pub mod name;
pub mod read;
pub mod table;
pub mod write;

use std::fmt;

use crate::error::ErrorKind;

pub use block::{BlockHeader, BlockKind, BLOCK_HEADER_SIZE, ENTRY_HEADER_SIZE, PADDING};
pub use index::{BlockRange, IndexVersion, IndexedLedger, LedgerMeta, OffloadIndex};
pub use name::{ObjectName, ObjectRole};
pub use read::{offload_schema, read_ledger, read_object, EntryRange, ReadOptions};
pub use write::{
    group_entries, write_files, write_ledger, write_streaming, LedgerMetadataSpec, OffloadOptions,
    StreamingLedger, WrittenObject,
};

/// Which object an offset refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    Data,
    Index,
}

impl fmt::Display for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Object::Data => "data-object offset",
            Object::Index => "index-object offset",
        })
    }
}

/// The offload layer's one error type; offsets are absolute positions in the
/// object named by `object`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    #[error("truncated {what} at {object} {offset}: needs {needed} bytes, {available} available")]
    Truncated {
        what: &'static str,
        object: Object,
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error("bad {what} magic at {object} {offset}: {found:#010x}, expected {expected}")]
    BadMagic {
        what: &'static str,
        object: Object,
        offset: u64,
        found: u32,
        expected: &'static str,
    },
    #[error("invalid {what} at {object} {offset}: {reason}")]
    Invalid {
        what: &'static str,
        object: Object,
        offset: u64,
        reason: String,
    },
    /// The objects cannot be written as asked: an entry or block size out of
    /// range, an empty ledger or ensemble.
    #[error("cannot write offload objects: {0}")]
    Write(String),
    /// The writer failed.
    #[error("cannot write offload objects: {0}")]
    Io(String),
    /// A local file could not be created or written ([`write_files`]).
    #[error("I/O: {0}")]
    File(String),
}

impl OffloadError {
    /// The kind of this error: malformed objects are data errors, what cannot
    /// be written as asked is an options error, a failing writer is I/O.
    pub fn kind(&self) -> ErrorKind {
        match self {
            OffloadError::Truncated { .. }
            | OffloadError::BadMagic { .. }
            | OffloadError::Invalid { .. } => ErrorKind::Data,
            OffloadError::Write(_) => ErrorKind::Options,
            OffloadError::Io(_) | OffloadError::File(_) => ErrorKind::Io,
        }
    }
}

pub type Result<T, E = OffloadError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_objects_are_data_errors() {
        let cases = [
            OffloadError::Truncated {
                what: "block header",
                object: Object::Data,
                offset: 0,
                needed: 128,
                available: 3,
            },
            OffloadError::BadMagic {
                what: "index",
                object: Object::Index,
                offset: 0,
                found: 0,
                expected: "0xDE47DE47",
            },
            OffloadError::Invalid {
                what: "entry",
                object: Object::Data,
                offset: 9,
                reason: "negative length".into(),
            },
        ];
        for e in cases {
            assert_eq!(e.kind(), ErrorKind::Data, "{e}");
        }
        assert_eq!(OffloadError::Write("x".into()).kind(), ErrorKind::Options);
        assert_eq!(OffloadError::Io("x".into()).kind(), ErrorKind::Io);
    }
}
