//! `stamp` (the broker's entry-metadata interceptors) and the seeks.

use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::options::non_negative_ms;
use pulsar_entries_core::seek::{self, EntryTable};
use pulsar_entries_core::stamp::{stamp_batches, Timestamps};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches, batches_and_schema, millis, table};
use crate::errors::Result;

/// `None`, one time, or a sequence (or pyarrow array) of times.
fn timestamps_from(obj: Option<Bound<'_, PyAny>>) -> Result<Timestamps> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Timestamps::Clock);
    };
    if obj.extract::<i64>().is_ok() || obj.hasattr("timestamp")? && !obj.hasattr("__len__")? {
        return Ok(Timestamps::Fixed(non_negative_ms(
            "timestamps",
            millis(&obj)?,
        )?));
    }
    let list = match obj.hasattr("to_pylist")? {
        true => obj.call_method0("to_pylist")?,
        false => obj,
    };
    let items = list.try_iter().map_err(|_| {
        PyTypeError::new_err("timestamps must be None, an int, or a sequence of ints (ms)")
    })?;
    let mut out = Vec::new();
    for item in items {
        out.push(non_negative_ms("timestamps", millis(&item?)?)?);
    }
    Ok(Timestamps::PerEntry(out))
}

/// Adds or replaces the `0e 02` broker-entry-metadata prefix of every entry,
/// in table order, as Pulsar's interceptors do.
#[pyfunction]
#[pyo3(signature = (entries, *, start_index=-1, timestamps=None, index=true, timestamp=true))]
#[pyo3(
    text_signature = "(entries, *, start_index=-1, timestamps=None, index=True, timestamp=True)"
)]
pub fn stamp<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    start_index: i64,
    timestamps: Option<Bound<'py, PyAny>>,
    index: bool,
    timestamp: bool,
) -> Result<Bound<'py, PyAny>> {
    let times = timestamps_from(timestamps)?;
    let mut stamper = Stamper::new(start_index, Interceptors { timestamp, index })?;
    let (schema, input) = batches_and_schema(entries)?;
    let (schema, out) = py.detach(|| stamp_batches(&schema, &input, &mut stamper, &times))?;
    table(py, out, schema)
}

/// Where a seek lands in an entry table.
#[pyclass(
    frozen,
    eq,
    get_all,
    module = "pulsar_entries._native",
    name = "Position"
)]
#[derive(Clone, PartialEq, Eq)]
pub struct Position {
    /// Row in the entry table (its length when past the last entry).
    row: usize,
    ledger_id: i64,
    entry_id: i64,
    /// Offset seeks: the message's index in the entry holding the offset.
    batch_index: Option<i32>,
    /// Entries the binary search read.
    entries_read: usize,
}

#[pymethods]
impl Position {
    fn __repr__(&self) -> String {
        let bi = self
            .batch_index
            .map_or_else(|| "None".into(), |b| b.to_string());
        format!(
            "Position(row={}, ledger_id={}, entry_id={}, batch_index={bi}, entries_read={})",
            self.row, self.ledger_id, self.entry_id, self.entries_read
        )
    }
}

impl From<seek::Position> for Position {
    fn from(p: seek::Position) -> Self {
        let (row, ledger_id, entry_id) = (p.row, p.ledger_id, p.entry_id);
        let (batch_index, entries_read) = (p.batch_index, p.entries_read);
        Position {
            row,
            ledger_id,
            entry_id,
            batch_index,
            entries_read,
        }
    }
}

/// Pulsar's seek by timestamp over entries in topic order.
#[pyfunction]
pub fn find_position_by_time(
    py: Python<'_>,
    entries: AnyRecordBatch,
    time: Bound<'_, PyAny>,
) -> Result<Position> {
    let t = millis(&time)?;
    let table = EntryTable::new(&batches(entries)?)?;
    Ok(py.detach(|| seek::find_position_by_time(&table, t))?.into())
}

/// KoP's seek by continuous offset over entries in topic order.
#[pyfunction]
pub fn find_position_by_offset(
    py: Python<'_>,
    entries: AnyRecordBatch,
    offset: i64,
) -> Result<Position> {
    let table = EntryTable::new(&batches(entries)?)?;
    Ok(py
        .detach(|| seek::find_position_by_offset(&table, offset))?
        .into())
}
