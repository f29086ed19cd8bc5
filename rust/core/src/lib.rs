//! pulsar-entries core: reads, decodes and re-encodes Apache Pulsar stored
//! entries (the bytes a BookKeeper ledger holds for one published entry),
//! byte-compatible with Pulsar. No Python here; `rust/python` binds it.
//!
//! Layout, one module per concept:
//! - [`frame`]: the `0e 02` broker prefix, the `0e 01` CRC32C section, metadata size;
//! - [`metadata`]: zero-copy MessageMetadata / SingleMessageMetadata views;
//! - [`compression`]: the five codecs in Pulsar's stored forms;
//! - [`snappy`]: the Snappy encoder Pulsar's Java side uses, byte for byte;
//! - [`batch`]: the batch payload scan, compacted shapes included;
//! - [`decode`]: entries → Arrow message rows;
//! - [`encode`]: messages → entries, as Pulsar's Java producer writes them;
//! - [`entry_metadata`]: entries → Arrow, one row of metadata per entry;
//! - [`processor`]: payload processors (PIP-96) that turn payloads into messages;
//! - [`kafka`]: KoP `entry.format=kafka` entries (Kafka RecordBatch v2);
//! - [`broker`]: broker entry metadata (PIP-70) as the interceptors write it;
//! - [`seek`]: seek by broker time and by continuous offset;
//! - [`message_id`]: message ids and chunk message ids, Java's bytes and order;
//! - [`chunks`]: chunked-message reassembly over decoded rows;
//! - [`entries`]: the entry-table input shape;
//! - [`compaction`]: two-phase compaction, strategies, last-message position;
//! - [`offload`]: tiered-storage offload objects (data blocks, index v1/v2) → entries, and back.

mod arrow_types;
pub mod batch;
pub mod binary;
pub mod bookkeeper;
pub mod broker;
pub mod chunks;
pub mod compaction;
pub mod compression;
pub mod crc;
pub mod decode;
pub mod encode;
pub mod entries;
pub mod entry_metadata;
pub mod error;
pub mod frame;
pub mod kafka;
pub mod message_id;
pub mod message_id_columns;
pub mod metadata;
pub mod metadata_store;
pub mod offload;
pub mod options;
pub mod pass;
pub mod processor;
pub mod processor_input;
pub mod seek;
pub mod snappy;
pub mod stamp;
pub mod value;
mod wire;

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

pub use compression::{Codec, DEFAULT_MAX_UNCOMPRESSED_SIZE};
pub use decode::{message_schema, DecodeOptions, Decoder, EntryId};
pub use encode::{encode_chunked, encode_entry, EncodeOptions, Key, MessageInput};
pub use error::{EntryError, ErrorKind, Result};
pub use frame::EntryView;
pub use message_id::{AnyMessageId, ChunkMessageId, MessageId};
pub use processor::{PayloadProcessor, Processors};
