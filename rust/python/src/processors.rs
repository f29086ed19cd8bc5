//! Payload processors from Python: the built-in processor handles, the
//! context a Python processor receives, and the bridge that runs a Python
//! `process(payload, context)` inside the Rust decode loop.
//!
//! `decode` runs with the GIL released; the bridge takes it back only for an
//! entry a Python processor was selected for, converts the returned message
//! dicts into owned Rust values, and releases it again before the rows are
//! appended. Selection uses each processor's `entry_property`, read once when
//! `decode` starts, so choosing a processor never needs the GIL.

use std::sync::Arc;

use pulsar_entries_core::format::metadata::MessageMetadataView;
use pulsar_entries_core::processor::input::{messages, record_at, OwnedMessage};
use pulsar_entries_core::processor::kafka::KafkaProcessor;
use pulsar_entries_core::processor::{
    self as core, builtin, EntryContext, Message, PayloadProcessor, Processors, Selector, Sink,
};
use pulsar_entries_core::value::input::owned_message;
use pulsar_entries_core::value::{message_value, metadata_value};
use pulsar_entries_core::EntryError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

use crate::convert::{dict_to_py, from_py};
use crate::errors::{Class, Result};

/// A built-in processor (run in Rust): `pulsar_entries.processors.KAFKA`
/// or `PULSAR`. Picklable, so it can travel to Spark executors.
#[pyclass(
    frozen,
    eq,
    hash,
    module = "pulsar_entries._native",
    name = "BuiltinProcessor"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BuiltinProcessor {
    #[pyo3(get)]
    name: String,
}

#[pymethods]
impl BuiltinProcessor {
    #[new]
    fn new(name: &str) -> Result<Self> {
        builtin(name)?;
        Ok(BuiltinProcessor { name: name.into() })
    }

    /// The entry property the processor selects on (None: every entry).
    #[getter]
    fn entry_property(&self) -> Option<(&'static str, Option<&'static str>)> {
        (self.name == KafkaProcessor::NAME).then_some((
            pulsar_entries_core::processor::kafka::ENTRY_FORMAT_KEY,
            Some("kafka"),
        ))
    }

    fn __repr__(&self) -> String {
        format!("BuiltinProcessor({:?})", self.name)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (String,))> {
        Ok((slf.get_type(), (slf.get().name.clone(),)))
    }
}

fn selector_of(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Selector> {
    let Ok(prop) = obj.getattr("entry_property") else {
        return Ok(Selector::Any);
    };
    if prop.is_none() {
        return Ok(Selector::Any);
    }
    let bad = || {
        PyTypeError::new_err(format!(
            "processor {name:?}: entry_property must be None or a (key, value) pair of str (value may be None)"
        ))
    };
    let (key, value): (String, Option<String>) = prop.extract().map_err(|_| bad())?;
    Ok(Selector::Property { key, value })
}

/// The processor list from `decode(processors=...)`.
pub fn processors_from(list: Option<Vec<Bound<'_, PyAny>>>) -> Result<Processors> {
    let Some(list) = list else {
        return Ok(Processors::default());
    };
    if list.is_empty() {
        let text = "processors must name at least one processor (the default is [KAFKA, PULSAR])";
        return Err(Class::Options.err(text));
    }
    let mut out: Vec<Arc<dyn PayloadProcessor>> = Vec::with_capacity(list.len());
    for (i, obj) in list.iter().enumerate() {
        if let Ok(b) = obj.cast::<BuiltinProcessor>() {
            out.push(builtin(&b.get().name)?);
        } else if let Ok(s) = obj.cast::<PyString>() {
            out.push(builtin(&s.to_cow()?)?);
        } else if obj.getattr("process").is_ok_and(|p| p.is_callable()) {
            let name = match obj.getattr("name") {
                Ok(n) if !n.is_none() => n.extract::<String>().map_err(|_| {
                    PyTypeError::new_err(format!("processors[{i}].name must be a str"))
                })?,
                _ => obj.get_type().name()?.to_string(),
            };
            let selector = selector_of(obj, &name)?;
            out.push(Arc::new(PyProcessor {
                name,
                selector,
                obj: obj.clone().unbind(),
            }));
        } else {
            return Err(PyTypeError::new_err(format!(
                "processors[{i}] must be a built-in processor (KAFKA, PULSAR, or its name) or an object with a process(payload, context) method"
            )).into());
        }
    }
    Ok(Processors::new(out))
}

/// A payload processor written in Python.
struct PyProcessor {
    name: String,
    selector: Selector,
    obj: Py<PyAny>,
}

fn python_error(py: Python<'_>, e: PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if text.is_empty() {
        kind
    } else {
        format!("{kind}: {text}")
    }
}

impl PayloadProcessor for PyProcessor {
    fn name(&self) -> &str {
        &self.name
    }

    fn selector(&self) -> &Selector {
        &self.selector
    }

    fn process(
        &self,
        ctx: &EntryContext<'_>,
        payload: &[u8],
        sink: Sink<'_>,
    ) -> Result<(), EntryError> {
        let owned = Python::attach(|py| -> Result<Vec<OwnedMessage>, String> {
            let run = || -> Result<Vec<OwnedMessage>> {
                let context = entry_context(py, ctx)?;
                let payload = PyBytes::new(py, payload);
                let result = self.obj.bind(py).call_method1("process", (payload, context))?;
                if result.is_none() {
                    return Err(PyTypeError::new_err(
                        "process() returned None; return an iterable of message dicts ([] for none)",
                    )
                    .into());
                }
                let mut out = Vec::new();
                for (i, item) in result.try_iter()?.enumerate() {
                    out.push(owned_message(&from_py(&item?)?, i)?);
                }
                Ok(out)
            };
            run().map_err(|e| python_error(py, e.into()))
        })
        .map_err(|reason| EntryError::Processor {
            processor: self.name.clone(),
            reason,
        })?;
        let messages = messages(&owned, ctx);
        sink.emit(&messages);
        Ok(())
    }
}

/// The `EntryContext` (`pulsar_entries._context`) a Python processor gets.
fn entry_context<'py>(py: Python<'py>, ctx: &EntryContext<'_>) -> PyResult<Bound<'py, PyAny>> {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let class = CLASS.import(py, "pulsar_entries._context", "EntryContext")?;
    let (id, bem) = (ctx.id, ctx.entry.broker_entry_metadata);
    let broker = (
        bem.and_then(|b| b.broker_timestamp),
        bem.and_then(|b| b.index),
    );
    let metadata = PyBytes::new(py, ctx.entry.metadata.raw);
    let (ids, base) = ((id.ledger_id, id.entry_id, id.partition), ctx.base_offset());
    class.call1((ids.0, ids.1, ids.2, broker.0, broker.1, base, metadata))
}

fn message_dict<'py>(py: Python<'py>, m: &Message<'_>) -> PyResult<Bound<'py, PyDict>> {
    dict_to_py(py, &message_value(m))
}

/// `EntryContext.metadata`: MessageMetadata bytes as a dict of their
/// present fields (as `parse_entry`).
#[pyfunction]
pub fn parse_metadata<'py>(py: Python<'py>, metadata: &[u8]) -> Result<Bound<'py, PyDict>> {
    let md = MessageMetadataView::parse(metadata, 0)?;
    Ok(dict_to_py(py, &metadata_value(&md))?)
}

/// `EntryContext.single_message`: the whole payload as one message with the
/// entry's key, properties and times (PIP-96 `asSingleMessage`).
#[pyfunction]
pub fn single_message<'py>(
    py: Python<'py>,
    metadata: &[u8],
    payload: &[u8],
) -> Result<Bound<'py, PyDict>> {
    let md = MessageMetadataView::parse(metadata, 0)?;
    Ok(message_dict(py, &core::single_message(&md, payload))?)
}

/// `EntryContext.pulsar_messages`: Pulsar's own split of the payload (what
/// the `PULSAR` processor does): batch records, or the single message.
#[pyfunction]
pub fn pulsar_messages<'py>(
    py: Python<'py>,
    metadata: &[u8],
    payload: &[u8],
) -> Result<Bound<'py, PyList>> {
    let md = MessageMetadataView::parse(metadata, 0)?;
    let messages = core::pulsar_messages(&md, payload)?;
    let dicts = messages.iter().map(|m| message_dict(py, m));
    Ok(PyList::new(py, dicts.collect::<PyResult<Vec<_>>>()?)?)
}

/// `EntryContext.message_at`: a message from `[u32 size][SingleMessageMetadata]
/// [value]` bytes at batch index `index` (PIP-96 `getMessageAt` with
/// metadata); the record's fields override the entry's.
#[pyfunction]
pub fn message_at<'py>(
    py: Python<'py>,
    metadata: &[u8],
    index: i32,
    record: &[u8],
) -> Result<Bound<'py, PyDict>> {
    let md = MessageMetadataView::parse(metadata, 0)?;
    Ok(message_dict(
        py,
        &core::batch_message(&md, &record_at(index, record)?),
    )?)
}
