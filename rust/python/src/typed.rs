//! The typed decode (`pulsar_entries.schemas`): a topic's schema versions
//! applied to decoded messages, and the schema registry's stored records.

use std::collections::HashMap;

use pulsar_entries_core::schema::{
    decode_schema_entry, decode_schema_locator, typed_batches, SchemaVersion, TopicSchema,
    TypedOptions,
};
use pulsar_entries_core::value::cluster::schema_entry_value;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, dict_to_py, table};
use crate::errors::Result;

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
) -> Result<Bound<'_, PyAny>> {
    let version = |(v, name, definition, props): VersionTuple| {
        SchemaVersion::from_parts(v, &name, definition, props)
    };
    let versions = versions
        .into_iter()
        .map(version)
        .collect::<Result<_, _>>()?;
    let schema = TopicSchema { versions };
    let (input, batches) = batches_and_schema(messages)?;
    let opts = TypedOptions {
        value_column,
        by_version,
    };
    let (out, out_schema) = py.detach(|| typed_batches(input, &batches, &schema, &opts))?;
    table(py, out, out_schema)
}

#[pyfunction]
pub fn schema_locations(node: &[u8]) -> Result<Vec<(i64, i64, i64)>> {
    let location =
        |l: pulsar_entries_core::schema::SchemaLocation| (l.version, l.ledger_id, l.entry_id);
    Ok(decode_schema_locator(node)?
        .into_iter()
        .map(location)
        .collect())
}

#[pyfunction]
pub fn schema_entry<'py>(py: Python<'py>, version: i64, data: &[u8]) -> Result<Bound<'py, PyDict>> {
    let stored = decode_schema_entry(version, data)?;
    Ok(dict_to_py(py, &schema_entry_value(version, &stored))?)
}
