//! Entries: decode (its processors may be Python's) and per-entry metadata.

use std::collections::BTreeMap;
use std::sync::Arc;

use pulsar_entries_core::decode::binary::binary_values;
use pulsar_entries_core::decode::entry_metadata::{entry_metadata as build, entry_metadata_schema};
use pulsar_entries_core::format::crypto::CryptoKeys as Keys;
use pulsar_entries_core::Decoder;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::Table;
use crate::errors::{detach, Result};
use crate::inputs::BytesLike;
use crate::options::DecodeOptions;
use crate::processors::{processors_from, ProcessorSpec};

/// Decodes entries (an Arrow table, record batch or stream) into a
/// `pyarrow.Table` of messages, keeping only `columns` when given.
#[pyfunction]
#[pyo3(signature = (entries, *, processors=None, options=None, columns=None, crypto_keys=None))]
pub fn decode(
    py: Python<'_>,
    entries: AnyRecordBatch,
    processors: Option<Vec<ProcessorSpec>>,
    options: Option<PyRef<'_, DecodeOptions>>,
    columns: Option<Vec<String>>,
    crypto_keys: Option<PyRef<'_, CryptoKeys>>,
) -> Result<Table> {
    let keys = crypto_keys.map(|k| k.0.clone());
    let opts = options.map_or(pulsar_entries_core::DecodeOptions::DEFAULT, |o| o.0);
    let processors = processors_from(processors)?;
    let reader = entries.into_reader()?;
    // Python processors take the GIL back only for the entries they decode.
    detach(py, "decode", "PulsarEntriesError", move || -> Result<_> {
        let mut decoder = Decoder::with_processors(opts, processors).with_crypto_keys(keys);
        if let Some(columns) = &columns {
            decoder.project(&columns.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        for batch in reader {
            decoder.decode_record_batch(&batch?)?;
        }
        Ok(Table(decoder.finish(), decoder.schema()))
    })?
}

/// One row of metadata per entry, from a binary (or large_binary) Arrow array.
#[pyfunction]
pub fn entry_metadata(py: Python<'_>, data: PyArray) -> Result<Table> {
    let array = data.array().clone();
    let values = || binary_values(array.as_ref(), "entry data").map(|v| build(v.into_iter()));
    let batch = detach(py, "entry_metadata", "PulsarEntriesError", values)??;
    Ok(Table(vec![batch], entry_metadata_schema()))
}

/// The private keys end-to-end encrypted messages are decrypted with, by
/// key name (`"*"`: any name), from PEM bytes. Its repr shows the names only.
#[pyclass(frozen, module = "pulsar_entries._native")]
pub struct CryptoKeys(Arc<Keys>);

#[pymethods]
impl CryptoKeys {
    #[new]
    #[pyo3(signature = (keys))]
    fn new(keys: BTreeMap<String, BytesLike>) -> Result<Self> {
        let mut out = Keys::new();
        for (name, pem) in &keys {
            out.add_pem(name, pem)?;
        }
        Ok(Self(Arc::new(out)))
    }

    #[getter]
    fn names(&self) -> Vec<String> {
        self.0.names().map(str::to_string).collect()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let names = pyo3::types::PyList::new(py, self.names())?;
        Ok(format!("CryptoKeys(names={})", names.repr()?))
    }
}
