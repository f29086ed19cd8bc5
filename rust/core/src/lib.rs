//! pulsar-entries core: reads, decodes and re-encodes Apache Pulsar stored
//! entries (the bytes a BookKeeper ledger holds for one published entry),
//! byte-compatible with Pulsar. No Python here; `rust/python` binds it.
//!
//! # Layers
//!
//! Each module uses only the modules on lower lines (never one on its own
//! line or above); `tests/layers.rs` checks it, and that `format` has no Arrow:
//!
//! 1. [`error`], [`proto`]: the error types and the generated protobuf types;
//! 2. [`format`]: the byte formats (frame, metadata, codecs, batches, message
//!    ids, broker entry metadata, encoding). No Arrow;
//! 3. [`processor`]: payload processors (PIP-96) that turn a payload into
//!    messages: the trait, the registry, Pulsar and KoP Kafka;
//!    [`metadata_store`]: topic names to metadata-store paths, and the nodes a
//!    reader of a live cluster needs (managed ledgers, cursors, bookies);
//! 4. [`decode`]: entries → Arrow (the entry-table input, messages, per-entry
//!    metadata, message-id columns);
//! 5. [`chunks`] (chunked-message reassembly over decoded rows),
//!    [`compaction`] (two-phase compaction, strategies, last-message
//!    position), [`offload`] (tiered-storage offload objects ↔ entries),
//!    [`seek`] (seek by broker time and by continuous offset),
//!    [`bookkeeper`] (a read-only BookKeeper client and bookie files →
//!    entries): the operations and storage readers, independent of each other;
//! 6. [`layout`]: a topic's storage layout, resolved from its metadata store.

pub mod bookkeeper;
pub mod chunks;
pub mod compaction;
pub mod decode;
pub mod error;
pub mod format;
pub mod layout;
pub mod metadata_store;
pub mod offload;
pub mod pass;
pub mod processor;
pub mod schema;
pub mod seek;
pub mod stamp;

/// Owned protobuf types generated from `proto/pulsar_entries.proto`.
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/pulsar_entries.rs"));

    /// BookKeeper and managed-ledger metadata embedded in offload index objects
    /// (`proto/offload.proto`).
    pub mod offload {
        include!(concat!(env!("OUT_DIR"), "/pulsar_entries.offload.rs"));
    }

    /// Managed-ledger, bookie-registration and BookKeeper v3 protocol records
    /// (`proto/bookkeeper.proto`).
    pub mod bookkeeper {
        include!(concat!(env!("OUT_DIR"), "/pulsar_entries.bookkeeper.rs"));
    }
}

pub use decode::{message_schema, DecodeOptions, Decoder, EntryId};
pub use error::{EntryError, ErrorKind, Result};
pub use format::compression::{Codec, DEFAULT_MAX_UNCOMPRESSED_SIZE};
pub use format::encode::{encode_chunked, encode_entry, EncodeOptions, Key, MessageInput};
pub use format::frame::EntryView;
pub use format::message_id::{AnyMessageId, ChunkMessageId, IdParts, MessageId};
pub use format::wire::{Lossy, Utf8Errors};
pub use processor::{PayloadProcessor, Processors};
