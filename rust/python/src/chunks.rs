//! Chunked-message reassembly: in process, and the two passes of the
//! distributed form (see `pulsar_entries.chunks`).

use std::collections::HashMap;

use pulsar_entries_core::chunks;
use pulsar_entries_core::options::reassembly_options;
use pulsar_entries_core::DEFAULT_MAX_UNCOMPRESSED_SIZE;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, table};
use crate::errors::{Class, Result};
use crate::pass::batch_pass;

/// Rebuilds chunked messages from decoded rows (topic order).
#[pyfunction]
#[pyo3(signature = (messages, *, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
#[pyo3(
    text_signature = "(messages, *, max_pending=100, expire_after_ms=60000, max_message_size=...)"
)]
pub fn reassemble_chunks(
    py: Python<'_>,
    messages: AnyRecordBatch,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> Result<Bound<'_, PyAny>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let (input, batches) = batches_and_schema(messages)?;
    let (out, schema) = py.detach(|| chunks::reassemble_table(input, &batches, opts))?;
    table(py, out, schema)
}

/// The partition pass of a distributed reassembly (see `pulsar_entries.chunks`).
#[pyfunction]
#[pyo3(signature = (messages, *, seeds=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
#[pyo3(
    text_signature = "(messages, *, seeds=None, max_pending=100, expire_after_ms=60000, max_message_size=...)"
)]
pub fn reassemble_partition(
    py: Python<'_>,
    messages: AnyRecordBatch,
    seeds: Option<HashMap<i32, i64>>,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> Result<Bound<'_, PyTuple>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let (_, batches) = batches_and_schema(messages)?;
    let Some(first) = batches.first() else {
        let text = "reassemble_partition needs at least one record batch";
        return Err(Class::InputSchema.err(text));
    };
    let input = first.schema();
    let seeds = seeds.unwrap_or_default();
    let result = py.detach(|| chunks::reassemble_partition(&batches, opts, &seeds))?;
    let done = table(py, result.done, chunks::output_schema(&input))?;
    let leftovers = table(py, vec![result.leftovers], chunks::leftover_schema(&input))?;
    Ok(PyTuple::new(py, [done, leftovers])?)
}

batch_pass! {
    /// The partition pass, streaming: `push(batch)` and `finish()` each give
    /// `(done, leftovers)` tables.
    PartitionReassembler(batch): chunks::PartitionReassembler;
    #[pyo3(signature = (schema, *, seeds=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE), text_signature = "(schema, *, seeds=None, max_pending=100, expire_after_ms=60000, max_message_size=...)")]
    fn new(
        _failure,
        schema: pyo3_arrow::PySchema,
        seeds: Option<HashMap<i32, i64>>,
        max_pending: Option<usize>,
        expire_after_ms: Option<i64>,
        max_message_size: usize,
    ) {
        let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
        let seeds = seeds.unwrap_or_default();
        chunks::PartitionReassembler::new(schema.into_inner(), opts, &seeds)?
    }
}

/// Decides the messages handed on by `reassemble_partition`.
#[pyfunction]
#[pyo3(signature = (leftovers, *, final_watermarks=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
#[pyo3(
    text_signature = "(leftovers, *, final_watermarks=None, max_pending=100, expire_after_ms=60000, max_message_size=...)"
)]
pub fn finish_leftovers(
    py: Python<'_>,
    leftovers: AnyRecordBatch,
    final_watermarks: Option<HashMap<i32, i64>>,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> Result<Bound<'_, PyAny>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let (schema, batches) = batches_and_schema(leftovers)?;
    let output = chunks::finished_schema(&schema);
    let finals = final_watermarks.unwrap_or_default();
    let out = if batches.iter().all(|b| b.num_rows() == 0) {
        vec![]
    } else {
        py.detach(|| chunks::finish_leftovers(&batches, opts, &finals))?
    };
    table(py, out, output)
}
