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
    batch_message, pulsar_messages, single_message, EntryContext, Message, PayloadProcessor,
    Processors, PulsarProcessor, Selector, Sink,
};
use pulsar_entries_core::value::input::owned_message;
use pulsar_entries_core::EntryError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

use crate::convert::{dict_to_py, from_py};
use crate::entry::metadata_dict;
use crate::errors::{Class, Result};
use pulsar_entries_core::value::message_value;

const BUILTINS: [&str; 2] = [KafkaProcessor::NAME, PulsarProcessor::NAME];

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

fn builtin(name: &str) -> Result<Arc<dyn PayloadProcessor>> {
    Ok(match name {
        KafkaProcessor::NAME => Arc::new(KafkaProcessor::new()),
        PulsarProcessor::NAME => Arc::new(PulsarProcessor::new()),
        _ => {
            return Err(Class::Options.err(format!(
                "unknown built-in processor {name:?}; expected one of {BUILTINS:?}"
            )))
        }
    })
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
                let context = Py::new(py, PyEntryContext::new(ctx))?;
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

/// What a Python processor learns about the entry (PIP-96's
/// `MessagePayloadContext`), with helpers that produce message dicts.
#[pyclass(frozen, module = "pulsar_entries._native", name = "EntryContext")]
pub struct PyEntryContext {
    #[pyo3(get)]
    ledger_id: i64,
    #[pyo3(get)]
    entry_id: i64,
    #[pyo3(get)]
    partition: i32,
    #[pyo3(get)]
    broker_timestamp: Option<u64>,
    #[pyo3(get)]
    broker_index: Option<u64>,
    #[pyo3(get)]
    base_offset: Option<i64>,
    metadata_raw: Vec<u8>,
    metadata_offset: usize,
}

impl PyEntryContext {
    fn new(ctx: &EntryContext<'_>) -> Self {
        let e = ctx.entry;
        let bem = e.broker_entry_metadata;
        PyEntryContext {
            ledger_id: ctx.id.ledger_id,
            entry_id: ctx.id.entry_id,
            partition: ctx.id.partition,
            broker_timestamp: bem.and_then(|b| b.broker_timestamp),
            broker_index: bem.and_then(|b| b.index),
            base_offset: ctx.base_offset(),
            metadata_raw: e.metadata.raw.to_vec(),
            metadata_offset: e.metadata_offset,
        }
    }

    fn md(&self) -> Result<MessageMetadataView<'_>> {
        Ok(MessageMetadataView::parse(
            &self.metadata_raw,
            self.metadata_offset,
        )?)
    }
}

pub fn message_dict<'py>(py: Python<'py>, m: &Message<'_>) -> PyResult<Bound<'py, PyDict>> {
    dict_to_py(py, &message_value(m))
}

#[pymethods]
impl PyEntryContext {
    /// The entry's MessageMetadata, present fields only (as `parse_entry`).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyDict>> {
        Ok(metadata_dict(py, &self.md()?)?)
    }

    /// Entry-level properties (MessageMetadata.properties).
    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.md()?.properties.iter() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// One entry property, or None (PIP-96 `getProperty`).
    fn get_property(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .md()?
            .properties
            .iter()
            .find_map(|(k, v)| (k == key).then(|| v.to_owned())))
    }

    /// Whether `num_messages_in_batch` is present (batch framing).
    #[getter]
    fn is_batch(&self) -> Result<bool> {
        Ok(self.md()?.is_batch())
    }

    /// `num_messages_in_batch`, else 1.
    #[getter]
    fn num_messages(&self) -> Result<i32> {
        Ok(self.md()?.num_messages())
    }

    #[getter]
    fn publish_time(&self) -> Result<u64> {
        Ok(self.md()?.publish_time)
    }

    #[getter]
    fn producer_name(&self) -> Result<String> {
        Ok(self.md()?.producer_name.to_owned())
    }

    /// The whole payload as one message with the entry's key, properties
    /// and times (PIP-96 `asSingleMessage`).
    fn single_message<'py>(&self, py: Python<'py>, payload: &[u8]) -> Result<Bound<'py, PyDict>> {
        Ok(message_dict(py, &single_message(&self.md()?, payload))?)
    }

    /// Pulsar's own split of the payload (what the `DEFAULT` processor does):
    /// batch records, or the single message.
    fn pulsar_messages<'py>(&self, py: Python<'py>, payload: &[u8]) -> Result<Bound<'py, PyList>> {
        let md = self.md()?;
        let messages = pulsar_messages(&md, payload)?;
        let items = messages
            .iter()
            .map(|m| message_dict(py, m))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?)
    }

    /// A message from `[u32 size][SingleMessageMetadata][value]` bytes at
    /// batch index `index` (PIP-96 `getMessageAt` with metadata): the
    /// record's fields override the entry's.
    fn message_at<'py>(
        &self,
        py: Python<'py>,
        index: i32,
        record: &[u8],
    ) -> Result<Bound<'py, PyDict>> {
        Ok(message_dict(
            py,
            &batch_message(&self.md()?, &record_at(index, record)?),
        )?)
    }

    fn __repr__(&self) -> String {
        format!(
            "EntryContext(ledger_id={}, entry_id={}, partition={})",
            self.ledger_id, self.entry_id, self.partition
        )
    }
}
