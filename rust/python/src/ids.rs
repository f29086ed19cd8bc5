//! Message ids: Java's `MessageId` bytes, both ways, for the classes of
//! `pulsar_entries._message_id`.

use pulsar_entries_core::{AnyMessageId, IdParts};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::Result;

#[pyfunction]
pub fn serialize_message_id(py: Python<'_>, parts: IdParts) -> Bound<'_, PyBytes> {
    PyBytes::new(py, &AnyMessageId::from_parts(parts).serialize())
}

#[pyfunction]
pub fn deserialize_message_id(data: &[u8]) -> Result<IdParts> {
    Ok(AnyMessageId::deserialize(data)?.parts())
}
