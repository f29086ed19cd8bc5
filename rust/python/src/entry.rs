//! Entries: decode (its processors may be Python's) and per-entry metadata.

use pulsar_entries_core::decode::binary::binary_values;
use pulsar_entries_core::decode::entry_metadata::{entry_metadata as build, entry_metadata_schema};
use pulsar_entries_core::Decoder;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::Table;
use crate::errors::{detach, Result};
use crate::options::DecodeOptions;
use crate::processors::{processors_from, ProcessorSpec};

/// Decodes entries (an Arrow table, record batch or stream) into a
/// `pyarrow.Table` of messages, keeping only `columns` when given.
#[pyfunction]
#[pyo3(signature = (entries, *, processors=None, options=None, columns=None))]
pub fn decode(
    py: Python<'_>,
    entries: AnyRecordBatch,
    processors: Option<Vec<ProcessorSpec>>,
    options: Option<PyRef<'_, DecodeOptions>>,
    columns: Option<Vec<String>>,
) -> Result<Table> {
    let opts = options.map_or(pulsar_entries_core::DecodeOptions::DEFAULT, |o| o.0);
    let processors = processors_from(processors)?;
    let reader = entries.into_reader()?;
    // Python processors take the GIL back only for the entries they decode.
    detach(py, "decode", "PulsarEntriesError", move || -> Result<_> {
        let mut decoder = Decoder::with_processors(opts, processors);
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
