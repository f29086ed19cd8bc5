//! A topic's schema as typed Arrow columns (Pulsar's schema registry, spec
//! bookkeeper.md §1.6). Uses `decode` only for the message table's shape.
//!
//! - [`info`]: a topic's schema versions ([`TopicSchema`]) and the schema
//!   types Pulsar writes ([`SchemaType`]), KeyValue's split definitions;
//! - [`registry`]: the registry's stored records (the `SchemaLocator` node in
//!   the metadata store, the `SchemaEntry` entries of the schema ledgers);
//! - [`values`]: one message's payload → an Avro value, per schema type
//!   (Avro datums under writer → reader resolution, JSON text, Pulsar's
//!   primitive byte layouts, KeyValue INLINE and SEPARATED);
//! - [`protobuf`]: PROTOBUF_NATIVE: a protobuf message read with its writer
//!   version's descriptors, projected onto the reader version's fields, and
//!   its Arrow columns;
//! - [`guard`]: bounds an Avro datum's lengths by the bytes it has before
//!   anything is allocated;
//! - [`columns`]: Avro schemas → Arrow types, values → Arrow arrays;
//! - [`typed`]: a decoded message table → the same rows with typed columns.

pub mod columns;
pub mod guard;
pub mod info;
pub mod protobuf;
pub mod registry;
pub mod typed;
pub mod values;

use crate::error::ErrorKind;

pub use info::{SchemaType, SchemaVersion, TopicSchema};
pub use registry::{decode_schema_entry, decode_schema_locator, SchemaLocation, StoredSchema};
pub use typed::{typed_batch, typed_batches, TypedOptions};

/// What went wrong with a schema or a message table handed to the typed
/// decode. A message its schema cannot decode is not an error: it becomes an
/// error row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A schema definition that cannot be used (an unknown type, an Avro
    /// definition that does not parse, a KeyValue without its parts).
    #[error("{0}")]
    Definition(String),
    /// A stored registry record whose bytes are not the format it should be.
    #[error("{0}")]
    Record(String),
    /// The message table lacks a column the typed decode needs, or a column
    /// has the wrong type.
    #[error("{0}")]
    Input(String),
}

impl SchemaError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Definition(_) => ErrorKind::Options,
            Self::Record(_) => ErrorKind::Data,
            Self::Input(_) => ErrorKind::InputSchema,
        }
    }
}
