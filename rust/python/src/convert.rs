//! Conversions every binding shares: Arrow input and output, times, pairs.

use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;

use crate::errors::Result;

/// Every batch of an Arrow input (table, record batch or stream).
pub fn batches(input: AnyRecordBatch) -> Result<Vec<RecordBatch>> {
    Ok(input.into_reader()?.collect::<Result<Vec<_>, _>>()?)
}

/// Every batch of an Arrow input, and its schema.
pub fn batches_and_schema(input: AnyRecordBatch) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let reader = input.into_reader()?;
    let schema = reader.schema();
    Ok((schema, reader.collect::<Result<Vec<_>, _>>()?))
}

/// Batches as a `pyarrow.Table`.
pub fn table(
    py: Python<'_>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> Result<Bound<'_, PyAny>> {
    Ok(PyTable::try_new(batches, schema)?.into_pyarrow(py)?)
}

/// Milliseconds from an int, or from anything with `.timestamp()` (datetime).
pub fn millis(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(v);
    }
    if obj.hasattr("timestamp")? {
        let secs: f64 = obj.call_method0("timestamp")?.extract()?;
        return Ok((secs * 1000.0).round() as i64);
    }
    Err(PyTypeError::new_err(
        "expected an int (milliseconds) or a datetime",
    ))
}

/// Optional milliseconds (None and absent alike), else `default`.
pub fn millis_or(obj: Option<Bound<'_, PyAny>>, default: i64) -> PyResult<i64> {
    match obj.filter(|o| !o.is_none()) {
        Some(t) => millis(&t),
        None => Ok(default),
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A `dict[str, str]` (or None) as ordered pairs.
pub fn string_pairs(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    if obj.is_none() {
        return Ok(Vec::new());
    }
    let dict = obj
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("properties must be a dict of str to str"))?;
    dict.iter()
        .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
        .collect()
}

/// `[(key, value), ...]` as a list of tuples.
pub fn pairs<'py, 'a>(
    py: Python<'py>,
    it: impl Iterator<Item = (&'a str, &'a str)>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, it)
}

/// A dict from `(name, value)` items.
pub fn dict<'py, V: IntoPyObject<'py>>(
    py: Python<'py>,
    items: impl IntoIterator<Item = (&'static str, V)>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in items {
        d.set_item(k, v)?;
    }
    Ok(d)
}
