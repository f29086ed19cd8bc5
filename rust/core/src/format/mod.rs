//! The byte formats, read and written as Pulsar's Java side does: framing,
//! protobuf metadata, codecs, batches, message ids, broker entry metadata.
//! Bytes in, bytes or zero-copy views out. No Arrow here (`tests/layers.rs`
//! checks it); above this layer everything may use Arrow.
//!
//! - [`frame`]: the `0e 02` broker prefix, the `0e 01` CRC32C section, metadata size;
//! - [`metadata`]: zero-copy MessageMetadata / SingleMessageMetadata views;
//! - [`compression`]: the five codecs in Pulsar's stored forms;
//! - [`snappy`]: the Snappy encoder Pulsar's Java side uses, byte for byte;
//! - [`batch`]: the batch payload scan, compacted shapes included;
//! - [`encode`]: messages → entries, as Pulsar's Java producer writes them;
//! - [`broker`]: broker entry metadata (PIP-70) as the interceptors write it;
//! - [`message_id`]: message ids and chunk message ids, Java's bytes and order;
//! - [`crypto`]: end-to-end encrypted payloads, decrypted with the consumer's keys;
//! - [`crc`]: CRC32C; `wire`: the protobuf wire reader the views share.

pub mod batch;
pub mod broker;
pub mod compression;
pub mod crc;
pub mod crypto;
pub mod encode;
pub mod frame;
pub mod message_id;
pub mod metadata;
pub mod snappy;
pub(crate) mod wire;

/// The format layer's error (declared in [`crate::error`], below this layer,
/// so that [`EntryError`](crate::error::EntryError) can wrap it).
pub use crate::error::FormatError;
