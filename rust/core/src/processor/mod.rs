//! Payload processors (PIP-96): turn one entry's payload into messages.
//!
//! `decode` picks, per entry, the first processor whose [`Selector`] matches
//! the entry's MessageMetadata properties, the way Pulsar's
//! `MessagePayloadProcessor` implementations check `context.getProperty(..)`.
//! The default list is `[kafka, pulsar]`: KoP entries (`entry.format=kafka`)
//! decode with no configuration and everything else as Pulsar batches.
//!
//! A processor runs after checksum verification and Pulsar-level
//! decompression (as in Pulsar's consumer). Markers, encrypted entries and
//! chunks never reach a processor: they cannot be opened on their own.
//!
//! Files: [`api`] (the trait, the context and message types), [`pulsar`]
//! (the built-in Pulsar processor), [`kafka`] (KoP entries), [`registry`]
//! (the ordered list `decode` tries). Depends on `format` only: no Arrow.

pub mod api;
pub mod input;
pub mod kafka;
pub mod pulsar;
pub mod registry;

pub use api::{
    DecodeOptions, EntryContext, EntryId, MarkerInfo, Message, MessageHeaders, MessageProperties,
    PayloadProcessor, RawHeaders, Selector, Sink, TimestampType, TxnKey, TxnOutcome,
};
pub use pulsar::{batch_message, pulsar_messages, single_message, PulsarProcessor};
pub use registry::{builtin, builtin_property, Processors, BUILTINS};
