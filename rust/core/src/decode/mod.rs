//! Entries → Arrow: the entry-table input shape, the message decoder, the
//! per-entry metadata table and the message-id columns. Uses `format` for
//! bytes and `processor` for payloads.
//!
//! - [`decoder`]: entries → Arrow message rows ([`Decoder`]), built in
//!   `columns` against the [`schema`];
//! - [`entries`]: the entry-table input shape ([`entries::EntryRows`]);
//! - [`entry_metadata`]: entries → Arrow, one row of metadata per entry;
//! - [`message_ids`]: message ids for the rows of a decoded table.

pub(crate) mod arrow_types;
pub mod binary;
mod columns;
pub mod decoder;
pub mod entries;
pub mod entry_metadata;
pub mod message_id_columns;
pub mod message_ids;
pub mod schema;

/// Decode options and entry ids are what processors see too, so they live
/// in the `processor` layer; named here for `decode`'s callers.
pub use crate::processor::api::{DecodeOptions, EntryId};
pub(crate) use decoder::payload_codec;
pub use decoder::{decode_record_batch, Decoder, MAX_UNCOMPRESSED_SIZE_CAP};
pub use message_ids::message_id_arrays;
pub use schema::message_schema;
