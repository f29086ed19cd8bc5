//! Message ids: `MessageId` and `ChunkMessageId`, as Pulsar's Java client
//! compares, prints and serializes them.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use pulsar_entries_core::{AnyMessageId, ChunkMessageId, MessageId};
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};

use crate::errors::{Class, Result};

/// `MessageId`'s constructor arguments: `(ledger_id, entry_id, partition,
/// batch_index, batch_size)`.
type IdArgs = (i64, i64, i32, i32, Option<i32>);

/// A message position, as Pulsar's Java client compares, prints and
/// serializes it (`MessageIdImpl` / `BatchMessageIdImpl`).
#[pyclass(name = "MessageId", module = "pulsar_entries", subclass, frozen)]
pub struct PyMessageId {
    inner: MessageId,
}

fn any_id(obj: &Bound<'_, PyAny>) -> Option<AnyMessageId> {
    if let Ok(c) = obj.cast::<PyChunkMessageId>() {
        return Some(c.get().chunk.into());
    }
    obj.cast::<PyMessageId>().ok().map(|m| m.get().inner.into())
}

fn new_message_id(py: Python<'_>, id: MessageId) -> PyResult<Py<PyMessageId>> {
    Py::new(py, PyMessageId { inner: id })
}

fn new_any_id(py: Python<'_>, id: AnyMessageId) -> PyResult<Py<PyAny>> {
    Ok(match id {
        AnyMessageId::Message(m) => new_message_id(py, m)?.into_any(),
        AnyMessageId::Chunk(c) => Py::new(
            py,
            PyClassInitializer::from(PyMessageId { inner: c.last })
                .add_subclass(PyChunkMessageId { chunk: c }),
        )?
        .into_any(),
    })
}

#[pymethods]
impl PyMessageId {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, partition=-1, batch_index=-1, batch_size=None))]
    #[pyo3(text_signature = "(ledger_id, entry_id, partition=-1, batch_index=-1, batch_size=None)")]
    fn new(
        ledger_id: i64,
        entry_id: i64,
        partition: i32,
        batch_index: i32,
        batch_size: Option<i32>,
    ) -> Self {
        PyMessageId {
            inner: MessageId::batch(ledger_id, entry_id, partition, batch_index, batch_size),
        }
    }

    #[getter]
    fn ledger_id(&self) -> i64 {
        self.inner.ledger_id
    }

    #[getter]
    fn entry_id(&self) -> i64 {
        self.inner.entry_id
    }

    #[getter]
    fn partition(&self) -> i32 {
        self.inner.partition
    }

    #[getter]
    fn batch_index(&self) -> i32 {
        self.inner.batch_index
    }

    #[getter]
    fn batch_size(&self) -> Option<i32> {
        self.inner.batch_size
    }

    /// Java's `MessageId.toByteArray()`.
    fn serialize<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.serialize())
    }

    /// Java's `MessageId.fromByteArray()`: a `MessageId` or a `ChunkMessageId`.
    #[staticmethod]
    fn deserialize(py: Python<'_>, data: &[u8]) -> Result<Py<PyAny>> {
        Ok(new_any_id(py, AnyMessageId::deserialize(data)?)?)
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        let m = &self.inner;
        format!(
            "MessageId(ledger_id={}, entry_id={}, partition={}, batch_index={}, batch_size={})",
            m.ledger_id,
            m.entry_id,
            m.partition,
            m.batch_index,
            m.batch_size.map_or("None".into(), |s| s.to_string())
        )
    }

    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let (Some(a), Some(b)) = (any_id(slf.as_any()), any_id(other)) else {
            return Ok(py.NotImplemented());
        };
        Ok(op
            .matches(a.cmp(&b))
            .into_pyobject(py)?
            .to_owned()
            .into_any()
            .unbind())
    }

    fn __hash__(slf: &Bound<'_, Self>) -> u64 {
        let mut h = DefaultHasher::new();
        any_id(slf.as_any()).expect("a message id").hash(&mut h);
        h.finish()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, IdArgs) {
        let m = slf.get().inner;
        let args = (
            m.ledger_id,
            m.entry_id,
            m.partition,
            m.batch_index,
            m.batch_size,
        );
        (slf.get_type(), args)
    }
}

/// A chunked message's id: the first and the last chunk (PIP-107). It is the
/// last chunk's position for equality, ordering and hashing, as in Java
/// (whose `hashCode` alone also mixes in the first chunk); a consumer seeks
/// to the first chunk.
#[pyclass(name = "ChunkMessageId", module = "pulsar_entries", extends = PyMessageId, frozen)]
pub struct PyChunkMessageId {
    chunk: ChunkMessageId,
}

#[pymethods]
impl PyChunkMessageId {
    #[new]
    fn new(
        first: &Bound<'_, PyMessageId>,
        last: &Bound<'_, PyMessageId>,
    ) -> Result<PyClassInitializer<Self>> {
        let (first, last) = (first.get().inner, last.get().inner);
        if first.is_batch() || last.is_batch() {
            let text = "chunks are never batched: both halves need batch_index -1";
            return Err(Class::InputSchema.err(text));
        }
        let chunk = ChunkMessageId::new(first, last);
        Ok(PyClassInitializer::from(PyMessageId { inner: chunk.last })
            .add_subclass(PyChunkMessageId { chunk }))
    }

    #[getter]
    fn first(&self, py: Python<'_>) -> PyResult<Py<PyMessageId>> {
        new_message_id(py, self.chunk.first)
    }

    #[getter]
    fn last(&self, py: Python<'_>) -> PyResult<Py<PyMessageId>> {
        new_message_id(py, self.chunk.last)
    }

    fn serialize<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.chunk.serialize())
    }

    fn __str__(&self) -> String {
        self.chunk.to_string()
    }

    fn __repr__(&self) -> String {
        let (f, l) = (self.chunk.first, self.chunk.last);
        format!(
            "ChunkMessageId(first=MessageId({}, {}, {}), last=MessageId({}, {}, {}))",
            f.ledger_id, f.entry_id, f.partition, l.ledger_id, l.entry_id, l.partition
        )
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, (Py<PyMessageId>, Py<PyMessageId>))> {
        let (py, c) = (slf.py(), slf.get().chunk);
        let args = (new_message_id(py, c.first)?, new_message_id(py, c.last)?);
        Ok((slf.get_type(), args))
    }
}

/// The position a consumer seeks to for `message_id`: the first chunk of a
/// chunked message, the id itself otherwise.
#[pyfunction]
pub fn seek_position(py: Python<'_>, message_id: &Bound<'_, PyAny>) -> PyResult<Py<PyMessageId>> {
    let id = any_id(message_id).ok_or_else(|| {
        PyTypeError::new_err("seek_position expects a MessageId or ChunkMessageId")
    })?;
    new_message_id(py, id.seek_position())
}
