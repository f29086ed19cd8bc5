//! Chunked-message reassembly: in process, and the two passes of the
//! distributed form (see `pulsar_entries.chunks`).

use std::collections::HashMap;

use pulsar_entries_core::chunks::{self, ReassemblyOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, with_kwargs, Table};
use crate::errors::{detach, Result};
use crate::pass::batch_pass;

/// The limits of `function` ([`Kwargs::reassembly`]).
fn limits(
    function: &'static str,
    options: Option<&Bound<'_, PyDict>>,
) -> Result<ReassemblyOptions> {
    with_kwargs(function, options, |kw| kw.reassembly())
}

/// The partition pass of a distributed reassembly (see `pulsar_entries.chunks`).
#[pyfunction]
#[pyo3(signature = (messages, *, seeds=None, **options))]
#[pyo3(
    text_signature = "(messages, *, seeds=None, max_pending=100, expire_after_ms=60000, max_message_size=...)"
)]
pub fn reassemble_partition(
    py: Python<'_>,
    messages: AnyRecordBatch,
    seeds: Option<HashMap<i32, i64>>,
    options: Option<&Bound<'_, PyDict>>,
) -> Result<(Table, Table)> {
    let opts = limits("reassemble_partition", options)?;
    let (_, batches) = batches_and_schema(messages)?;
    let seeds = seeds.unwrap_or_default();
    // The core refuses an input without batches: the first one's schema is the input's.
    let result = detach(py, "reassemble_partition", "PulsarEntriesError", || {
        chunks::reassemble_partition(&batches, opts, &seeds)
    })??;
    let input = batches[0].schema();
    let done = Table(result.done, chunks::output_schema(&input));
    Ok((
        done,
        Table(vec![result.leftovers], chunks::leftover_schema(&input)),
    ))
}

batch_pass! {
    /// The partition pass, streaming: `push(batch)` and `finish()` each give
    /// `(done, leftovers)` tables.
    PartitionReassembler(batch): chunks::PartitionReassembler;
    #[pyo3(signature = (schema, *, seeds=None, **options), text_signature = "(schema, *, seeds=None, max_pending=100, expire_after_ms=60000, max_message_size=...)")]
    fn new(_failure, schema: pyo3_arrow::PySchema, seeds: Option<HashMap<i32, i64>>, **options) {
        let opts = limits("PartitionReassembler", options)?;
        let seeds = seeds.unwrap_or_default();
        chunks::PartitionReassembler::new(schema.into_inner(), opts, &seeds)?
    }
}

/// Decides the messages handed on by `reassemble_partition`.
#[pyfunction]
#[pyo3(signature = (leftovers, *, final_watermarks=None, **options))]
#[pyo3(
    text_signature = "(leftovers, *, final_watermarks=None, max_pending=100, expire_after_ms=60000, max_message_size=...)"
)]
pub fn finish_leftovers(
    py: Python<'_>,
    leftovers: AnyRecordBatch,
    final_watermarks: Option<HashMap<i32, i64>>,
    options: Option<&Bound<'_, PyDict>>,
) -> Result<Table> {
    let opts = limits("finish_leftovers", options)?;
    let (schema, batches) = batches_and_schema(leftovers)?;
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
