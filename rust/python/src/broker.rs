//! `stamp` (the broker's entry-metadata interceptors) and the seeks; the
//! times arrive as milliseconds (`pulsar_entries._broker` converts them).

use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::options::{entry_timestamps, fixed_timestamps};
use pulsar_entries_core::seek::{self, EntryTable};
use pulsar_entries_core::stamp::{stamp_batches, Timestamps};
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches, batches_and_schema, table};
use crate::errors::Result;

/// One time for every entry, or one per entry (ms).
#[derive(FromPyObject)]
pub enum Times {
    Fixed(i64),
    PerEntry(Vec<i64>),
}

#[pyfunction]
#[pyo3(signature = (entries, *, start_index=-1, timestamps=None, index=true, timestamp=true))]
pub fn stamp<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    start_index: i64,
    timestamps: Option<Times>,
    index: bool,
    timestamp: bool,
) -> Result<Bound<'py, PyAny>> {
    let times = match timestamps {
        None => Timestamps::Clock,
        Some(Times::Fixed(t)) => fixed_timestamps(t)?,
        Some(Times::PerEntry(ts)) => entry_timestamps(&ts)?,
    };
    let mut stamper = Stamper::new(start_index, Interceptors { timestamp, index })?;
    let (schema, input) = batches_and_schema(entries)?;
    let (schema, out) = py.detach(|| stamp_batches(&schema, &input, &mut stamper, &times))?;
    table(py, out, schema)
}

/// `(row, ledger_id, entry_id, batch_index, entries_read)`: a
/// `pulsar_entries.Position`.
type PositionTuple = (usize, i64, i64, Option<i32>, usize);

fn position(p: seek::Position) -> PositionTuple {
    (
        p.row,
        p.ledger_id,
        p.entry_id,
        p.batch_index,
        p.entries_read,
    )
}

#[pyfunction]
pub fn find_position_by_time(
    py: Python<'_>,
    entries: AnyRecordBatch,
    time: i64,
) -> Result<PositionTuple> {
    let table = EntryTable::new(&batches(entries)?)?;
    Ok(position(
        py.detach(|| seek::find_position_by_time(&table, time))?,
    ))
}

#[pyfunction]
pub fn find_position_by_offset(
    py: Python<'_>,
    entries: AnyRecordBatch,
    offset: i64,
) -> Result<PositionTuple> {
    let table = EntryTable::new(&batches(entries)?)?;
    Ok(position(py.detach(|| {
        seek::find_position_by_offset(&table, offset)
    })?))
}
