//! `stamp` (the broker's entry-metadata interceptors) and the seeks.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, LargeBinaryBuilder};
use arrow_array::{Array, ArrayRef, BinaryArray, BinaryViewArray, LargeBinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use pulsar_entries_core::broker::{Interceptors, Stamper};
use pulsar_entries_core::seek::{self, EntryTable};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;

use crate::{millis, now_ms, EntryFormatError};

/// Broker timestamps for `stamp`: the clock, one value, or one per entry.
enum Timestamps {
    Clock,
    Fixed(u64),
    PerEntry(Vec<u64>),
}

fn timestamps_from(obj: Option<Bound<'_, PyAny>>) -> PyResult<Timestamps> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Timestamps::Clock);
    };
    let non_negative = |v: i64| {
        u64::try_from(v)
            .map_err(|_| PyValueError::new_err(format!("timestamps must be >= 0, got {v}")))
    };
    if obj.extract::<i64>().is_ok() || obj.hasattr("timestamp")? && !obj.hasattr("__len__")? {
        return Ok(Timestamps::Fixed(non_negative(millis(&obj)?)?));
    }
    let list = if obj.hasattr("to_pylist")? {
        obj.call_method0("to_pylist")?
    } else {
        obj
    };
    let mut out = Vec::new();
    for item in list.try_iter().map_err(|_| {
        PyTypeError::new_err("timestamps must be None, an int, or a sequence of ints (ms)")
    })? {
        out.push(non_negative(millis(&item?)?)?);
    }
    Ok(Timestamps::PerEntry(out))
}

fn stamp_column(
    stamper: &mut Stamper,
    data: &ArrayRef,
    times: &Timestamps,
    first_row: usize,
    ids: &dyn Fn(usize) -> String,
) -> Result<ArrayRef, String> {
    let n = data.len();
    let get = |i: usize| -> Option<&[u8]> {
        if data.is_null(i) {
            return None;
        }
        Some(match data.data_type() {
            DataType::Binary => data
                .as_any()
                .downcast_ref::<BinaryArray>()
                .unwrap()
                .value(i),
            DataType::LargeBinary => data
                .as_any()
                .downcast_ref::<LargeBinaryArray>()
                .unwrap()
                .value(i),
            _ => data
                .as_any()
                .downcast_ref::<BinaryViewArray>()
                .unwrap()
                .value(i),
        })
    };
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(n);
    for i in 0..n {
        let row = first_row + i;
        let entry = get(i).ok_or_else(|| format!("{}: entry data is null", ids(i)))?;
        let t = match times {
            Timestamps::Clock => now_ms(),
            Timestamps::Fixed(t) => *t,
            Timestamps::PerEntry(v) => v[row],
        };
        out.push(
            stamper
                .stamp(entry, t)
                .map_err(|e| format!("{}: {e}", ids(i)))?,
        );
    }
    Ok(if data.data_type() == &DataType::LargeBinary {
        let mut b = LargeBinaryBuilder::new();
        out.iter().for_each(|v| b.append_value(v));
        Arc::new(b.finish())
    } else {
        let mut b = BinaryBuilder::new();
        out.iter().for_each(|v| b.append_value(v));
        Arc::new(b.finish())
    })
}

/// Adds or replaces the `0e 02` broker-entry-metadata prefix of every entry,
/// in table order, as Pulsar's interceptors do.
#[pyfunction]
#[pyo3(signature = (entries, *, start_index=-1, timestamps=None, index=true, timestamp=true))]
fn stamp<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    start_index: i64,
    timestamps: Option<Bound<'py, PyAny>>,
    index: bool,
    timestamp: bool,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let times = timestamps_from(timestamps)?;
    let mut stamper = Stamper::new(start_index, Interceptors { timestamp, index })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let reader = entries.into_reader()?;
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>()?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if let Timestamps::PerEntry(v) = &times {
        if v.len() != rows {
            return Err(PyValueError::new_err(format!(
                "{rows} entries but {} timestamps",
                v.len()
            ))
            .into());
        }
    }
    let data_at = schema
        .index_of("data")
        .map_err(|_| PyValueError::new_err("input has no `data` column"))?;
    let data_type = match schema.field(data_at).data_type() {
        DataType::LargeBinary => DataType::LargeBinary,
        DataType::Binary | DataType::BinaryView => DataType::Binary,
        other => {
            return Err(PyValueError::new_err(format!(
                "`data` must be binary or large_binary, not {other}"
            ))
            .into())
        }
    };
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[data_at] = Field::new("data", data_type, schema.field(data_at).is_nullable());
    let out_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let result = py.detach(|| -> Result<Vec<RecordBatch>, String> {
        let mut first_row = 0;
        let mut out = Vec::with_capacity(batches.len());
        for b in &batches {
            let id_col = |name: &str| {
                b.column_by_name(name)
                    .and_then(|c| arrow_cast::cast(c, &DataType::Int64).ok())
            };
            let (ledger, entry) = (id_col("ledger_id"), id_col("entry_id"));
            let ids = |i: usize| {
                let get = |c: &Option<ArrayRef>| {
                    c.as_ref()
                        .and_then(|c| c.as_any().downcast_ref::<arrow_array::Int64Array>())
                        .filter(|a| !a.is_null(i))
                        .map_or(-1, |a| a.value(i))
                };
                format!(
                    "row {} (ledger {}, entry {})",
                    first_row + i,
                    get(&ledger),
                    get(&entry)
                )
            };
            let mut columns = b.columns().to_vec();
            columns[data_at] =
                stamp_column(&mut stamper, &columns[data_at], &times, first_row, &ids)?;
            out.push(RecordBatch::try_new(out_schema.clone(), columns).map_err(|e| e.to_string())?);
            first_row += b.num_rows();
        }
        Ok(out)
    });
    let batches = result.map_err(EntryFormatError::new_err)?;
    Ok(PyTable::try_new(batches, out_schema)?.into_pyarrow(py)?)
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
            .map_or_else(|| "None".to_string(), |b| b.to_string());
        format!(
            "Position(row={}, ledger_id={}, entry_id={}, batch_index={bi}, entries_read={})",
            self.row, self.ledger_id, self.entry_id, self.entries_read
        )
    }
}

impl From<seek::Position> for Position {
    fn from(p: seek::Position) -> Self {
        Position {
            row: p.row,
            ledger_id: p.ledger_id,
            entry_id: p.entry_id,
            batch_index: p.batch_index,
            entries_read: p.entries_read,
        }
    }
}

fn entry_table(entries: AnyRecordBatch) -> PyResult<EntryTable> {
    let reader = entries.into_reader()?;
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    EntryTable::new(&batches).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Pulsar's seek by timestamp over entries in topic order.
#[pyfunction]
fn find_position_by_time(
    py: Python<'_>,
    entries: AnyRecordBatch,
    time: Bound<'_, PyAny>,
) -> PyResult<Position> {
    let t = millis(&time)?;
    let table = entry_table(entries)?;
    py.detach(|| seek::find_position_by_time(&table, t))
        .map(Position::from)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// KoP's seek by continuous offset over entries in topic order.
#[pyfunction]
fn find_position_by_offset(
    py: Python<'_>,
    entries: AnyRecordBatch,
    offset: i64,
) -> PyResult<Position> {
    let table = entry_table(entries)?;
    py.detach(|| seek::find_position_by_offset(&table, offset))
        .map(Position::from)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Position>()?;
    m.add_function(wrap_pyfunction!(stamp, m)?)?;
    m.add_function(wrap_pyfunction!(find_position_by_time, m)?)?;
    m.add_function(wrap_pyfunction!(find_position_by_offset, m)?)?;
    Ok(())
}
