//! Payload processors from Python: the list `pulsar_entries.processors`
//! checks and passes, the context a Python processor receives, and the
//! bridge that runs a Python `process(payload, context)` inside the Rust
//! decode loop. (The context's helpers are in [`crate::format`].)
//!
//! `decode` runs with the GIL released; the bridge takes it back only for an
//! entry a Python processor was selected for, converts the returned message
//! dicts into owned Rust values, and releases it again before the rows are
//! appended. Selection uses each processor's `entry_property`, read once when
//! `decode` starts, so choosing a processor never needs the GIL.

use std::sync::Arc;

use pulsar_entries_core::processor::input::{messages, OwnedMessage};
use pulsar_entries_core::processor::{
    builtin, EntryContext, PayloadProcessor, Processors, Selector, Sink,
};
use pulsar_entries_core::EntryError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyType};

use crate::errors::Result;
use crate::inputs::owned_message;

/// A processor as `pulsar_entries.processors` passes it: a built-in's name,
/// or a Python processor's `(name, entry_property, object)`.
#[derive(FromPyObject)]
pub enum ProcessorSpec {
    Builtin(String),
    Python(String, Option<(String, Option<String>)>, Py<PyAny>),
}

/// The processor list from `decode(processors=...)`.
pub fn processors_from(list: Option<Vec<ProcessorSpec>>) -> Result<Processors> {
    let Some(list) = list else {
        return Ok(Processors::default());
    };
    let each = |spec| -> Result<Arc<dyn PayloadProcessor>> {
        Ok(match spec {
            ProcessorSpec::Builtin(name) => builtin(&name)?,
            ProcessorSpec::Python(name, property, obj) => {
                let selector = Selector::of_property(property);
                Arc::new(PyProcessor {
                    name,
                    selector,
                    obj,
                })
            }
        })
    };
    Ok(Processors::named(
        list.into_iter().map(each).collect::<Result<_>>()?,
    )?)
}

/// A payload processor written in Python.
struct PyProcessor {
    name: String,
    selector: Selector,
    obj: Py<PyAny>,
}

/// `Kind: text` (`Kind` alone without a text), as the row's error.
fn python_error(py: Python<'_>, e: PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map_or("Exception".into(), |n| n.to_string());
    match e.value(py).str().map(|s| s.to_string()) {
        Ok(text) if !text.is_empty() => format!("{kind}: {text}"),
        _ => kind,
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
                    out.push(owned_message(&item?, i)?);
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
