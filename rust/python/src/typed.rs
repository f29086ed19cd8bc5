//! The typed decode (`pulsar_entries.schemas`): a topic's schema versions
//! applied to decoded messages, and the schema registry's stored records.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use pulsar_entries_core::schema::{
    decode_schema_entry, decode_schema_locator, typed_batch, SchemaType, SchemaVersion,
    TopicSchema, TypedOptions,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, table};
use crate::errors::Result;

/// One schema version as Python passes it: `(version, type name, definition, properties)`.
type VersionTuple = (i64, String, Vec<u8>, HashMap<String, String>);

/// Decoded messages with the topic's schema as typed columns. `versions`
/// are `(version, type name, definition bytes, properties)`; the highest
/// version is the reader schema; `by_version=False` reads every message
/// with it, whatever version the message names.
#[pyfunction]
#[pyo3(signature = (messages, versions, *, value_column=true, by_version=true))]
pub fn typed_decode(
    py: Python<'_>,
    messages: AnyRecordBatch,
    versions: Vec<VersionTuple>,
    value_column: bool,
    by_version: bool,
) -> Result<Bound<'_, PyAny>> {
    let mut schema = TopicSchema::default();
    for (version, type_name, definition, properties) in versions {
        let mut properties: Vec<(String, String)> = properties.into_iter().collect();
        properties.sort();
        schema.versions.push(SchemaVersion {
            version,
            schema_type: SchemaType::from_name(&type_name)?,
            definition,
            properties,
        });
    }
    let (input, batches) = batches_and_schema(messages)?;
    let opts = TypedOptions {
        value_column,
        by_version,
    };
    let (out, out_schema) = py.detach(move || -> Result<_> {
        let empty = RecordBatch::new_empty(input);
        let out_schema = typed_batch(&empty, &schema, &opts)?.schema();
        let mut out = Vec::with_capacity(batches.len());
        for b in batches.iter().filter(|b| b.num_rows() > 0) {
            out.push(typed_batch(b, &schema, &opts)?);
        }
        Ok((out, out_schema))
    })?;
    table(py, out, out_schema)
}

/// The `(version, ledger_id, entry_id)` of each schema version a
/// `/schemas/...` node (a `SchemaLocator`) lists.
#[pyfunction]
pub fn schema_locations(node: &[u8]) -> Result<Vec<(i64, i64, i64)>> {
    Ok(decode_schema_locator(node)?
        .into_iter()
        .map(|l| (l.version, l.ledger_id, l.entry_id))
        .collect())
}

/// A schema-ledger entry (a `SchemaEntry`) for `version`: a dict with
/// `version, type, schema, properties, deleted, timestamp, schema_id`.
#[pyfunction]
pub fn schema_entry<'py>(py: Python<'py>, version: i64, data: &[u8]) -> Result<Bound<'py, PyDict>> {
    let stored = decode_schema_entry(version, data)?;
    let d = PyDict::new(py);
    d.set_item("version", version)?;
    d.set_item("deleted", stored.schema.is_none())?;
    d.set_item("timestamp", stored.timestamp)?;
    d.set_item("schema_id", stored.schema_id)?;
    match stored.schema {
        Some(s) => {
            d.set_item("type", s.schema_type.name())?;
            d.set_item("schema", pyo3::types::PyBytes::new(py, &s.definition))?;
            d.set_item(
                "properties",
                s.properties.into_iter().collect::<HashMap<_, _>>(),
            )?;
        }
        None => {
            d.set_item("type", "NONE")?;
            d.set_item("schema", pyo3::types::PyBytes::new(py, b""))?;
            d.set_item("properties", HashMap::<String, String>::new())?;
        }
    }
    Ok(d)
}
