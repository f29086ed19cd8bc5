//! The typed decode (`pulsar_entries.schemas`): a topic's schema versions
//! applied to decoded messages.

use std::collections::HashMap;

use pulsar_entries_core::schema::{typed_batches, SchemaVersion, TopicSchema, TypedOptions};
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, Table};
use crate::errors::{detach, Result};

/// One schema version as Python passes it: `(version, type name, definition, properties)`.
type VersionTuple = (i64, String, Vec<u8>, HashMap<String, String>);

#[pyfunction]
#[pyo3(signature = (messages, versions, *, value_column=true, by_version=true))]
pub fn typed_decode(
    py: Python<'_>,
    messages: AnyRecordBatch,
    versions: Vec<VersionTuple>,
    value_column: bool,
    by_version: bool,
) -> Result<Table> {
    let version = |(v, name, definition, props): VersionTuple| {
        SchemaVersion::from_parts(v, &name, definition, props)
    };
    let versions = versions
        .into_iter()
        .map(version)
        .collect::<Result<_, _>>()?;
    let (schema, opts) = (
        TopicSchema { versions },
        TypedOptions {
            value_column,
            by_version,
        },
    );
    let (input, batches) = batches_and_schema(messages)?;
    let (out, out_schema) = detach(py, "typed_decode", "PulsarEntriesError", || {
        typed_batches(input, &batches, &schema, &opts)
    })??;
    Ok(Table(out, out_schema))
}
