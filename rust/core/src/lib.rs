//! pulsar-entries core: reads, decodes and re-encodes Apache Pulsar stored
//! entries (the bytes a BookKeeper ledger holds for one published entry),
//! byte-compatible with Pulsar. No Python here; `rust/python` binds it.
//!
//! Layout, one module per concept:
//! - [`frame`]: the `0e 02` broker prefix, the `0e 01` CRC32C section, metadata size;
//! - [`metadata`]: zero-copy MessageMetadata / SingleMessageMetadata views;
//! - [`compression`]: the five codecs in Pulsar's stored forms;
//! - [`batch`]: the batch payload scan, compacted shapes included;
//! - [`decode`]: entries → Arrow message rows;
//! - [`encode`]: messages → entries, as Pulsar's Java producer writes them;
//! - [`entry_metadata`]: entries → Arrow, one row of metadata per entry;
//! - [`offload`]: tiered-storage offload objects (data blocks, index v1/v2) → entries, and back.

pub mod batch;
pub mod compression;
pub mod crc;
pub mod decode;
pub mod encode;
pub mod entry_metadata;
pub mod error;
pub mod frame;
pub mod metadata;
pub mod offload;
mod wire;

/// Owned protobuf types generated from `proto/pulsar_entries.proto`.
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/pulsar_entries.rs"));

    /// BookKeeper and managed-ledger metadata embedded in offload index objects
    /// (`proto/offload.proto`).
    pub mod offload {
        include!(concat!(env!("OUT_DIR"), "/pulsar_entries.offload.rs"));
    }
}

pub use compression::{Codec, DEFAULT_MAX_UNCOMPRESSED_SIZE};
pub use decode::{message_schema, DecodeOptions, Decoder, EntryId};
pub use encode::{encode_entry, EncodeOptions, Key, MessageInput};
pub use error::{EntryError, Result};
pub use frame::EntryView;
