//! Chunked-message reassembly: in process, and the two passes of the
//! distributed form (see `pulsar_entries.chunks`).

use std::collections::HashMap;

use pulsar_entries_core::chunks::{self, ReassemblyOptions as Limits};
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, Table};
use crate::errors::{detach, Result};
use crate::options::ReassemblyOptions;
use crate::pass::batch_pass;

/// The core limits of an optional `ReassemblyOptions` (`None`: the defaults).
fn limits(options: Option<PyRef<'_, ReassemblyOptions>>) -> Limits {
    options.map_or(Limits::DEFAULT, |o| o.0)
}

/// Rebuilds chunked messages from decoded rows (topic order).
#[pyfunction]
#[pyo3(signature = (messages, *, options=None))]
pub fn reassemble_chunks(
    py: Python<'_>,
    messages: AnyRecordBatch,
    options: Option<PyRef<'_, ReassemblyOptions>>,
) -> Result<Table> {
    let (opts, (schema, batches)) = (limits(options), batches_and_schema(messages)?);
    let (out, schema) = detach(py, "reassemble_chunks", "PulsarEntriesError", || {
        chunks::reassemble_table(schema, &batches, opts)
    })??;
    Ok(Table(out, schema))
}

/// The partition pass of a distributed reassembly (see `pulsar_entries.chunks`).
#[pyfunction]
#[pyo3(signature = (messages, *, seeds=None, options=None))]
pub fn reassemble_partition(
    py: Python<'_>,
    messages: AnyRecordBatch,
    seeds: Option<HashMap<i32, i64>>,
    options: Option<PyRef<'_, ReassemblyOptions>>,
) -> Result<(Table, Table)> {
    let (opts, (_, batches)) = (limits(options), batches_and_schema(messages)?);
    let seeds = seeds.unwrap_or_default();
    // The core refuses an input without batches: the first one's schema is the input's.
    let result = detach(py, "reassemble_partition", "PulsarEntriesError", || {
        chunks::reassemble_partition(&batches, opts, &seeds)
    })??;
    let input = batches[0].schema();
    let done = Table(result.done, chunks::output_schema(&input));
    let leftovers = Table(vec![result.leftovers], chunks::leftover_schema(&input));
    Ok((done, leftovers))
}

batch_pass! {
    /// The partition pass, streaming: `push(batch)` and `finish()` each give
    /// `(done, leftovers)` tables.
    PartitionReassembler(batch): chunks::PartitionReassembler;
    #[pyo3(signature = (schema, *, seeds=None, options=None))]
    fn new(_failure, schema: pyo3_arrow::PySchema, seeds: Option<HashMap<i32, i64>>, options: Option<PyRef<'_, ReassemblyOptions>>) {
        let seeds = seeds.unwrap_or_default();
        chunks::PartitionReassembler::new(schema.into_inner(), limits(options), &seeds)?
    }
}

/// Decides the messages handed on by `reassemble_partition`.
#[pyfunction]
#[pyo3(signature = (leftovers, *, final_watermarks=None, options=None))]
pub fn finish_leftovers(
    py: Python<'_>,
    leftovers: AnyRecordBatch,
    final_watermarks: Option<HashMap<i32, i64>>,
    options: Option<PyRef<'_, ReassemblyOptions>>,
) -> Result<Table> {
    let (opts, (schema, batches)) = (limits(options), batches_and_schema(leftovers)?);
    let finals = final_watermarks.unwrap_or_default();
    let out = if batches.iter().all(|b| b.num_rows() == 0) {
        vec![]
    } else {
        detach(py, "finish_leftovers", "PulsarEntriesError", || {
            chunks::finish_leftovers(&batches, opts, &finals)
        })??
    };
    Ok(Table(out, chunks::finished_schema(&schema)))
}
