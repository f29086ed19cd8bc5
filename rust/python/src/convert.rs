//! Conversions every binding shares: Arrow input and output, times, pairs.

use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pulsar_entries_core::kwargs::{ArgsError, Kwargs};
use pulsar_entries_core::value::{Dict, Value};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};
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

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A core value tree as Python objects (dicts, lists, tuples, scalars, bytes).
pub fn to_py<'py>(py: Python<'py>, v: &Value<'_>) -> PyResult<Bound<'py, PyAny>> {
    let items = |vs: &[Value<'_>]| {
        vs.iter()
            .map(|v| to_py(py, v))
            .collect::<PyResult<Vec<_>>>()
    };
    Ok(match v {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(vs) => PyList::new(py, items(vs)?)?.into_any(),
        Value::Tuple(vs) => PyTuple::new(py, items(vs)?)?.into_any(),
        Value::Dict(d) => dict_to_py(py, d)?.into_any(),
        Value::Time(ms) => ms.into_pyobject(py)?.into_any(),
        Value::Other(name) => PyString::new(py, name).into_any(),
    })
}

/// Python objects as a core value tree, for inputs the core parses: None,
/// bool, int, str, bytes-likes, dicts with str keys, lists, tuples, times
/// (anything with `.timestamp()`), other iterables as lists; anything else
/// by its type's name.
pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value<'static>> {
    let owned = |b: Vec<u8>| Value::Bytes(b.into());
    let list = |it: Bound<'_, pyo3::types::PyIterator>| {
        it.map(|v| from_py(&v?)).collect::<PyResult<Vec<_>>>()
    };
    Ok(if obj.is_none() {
        Value::None
    } else if let Ok(b) = obj.cast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if let Ok(i) = obj.extract::<i64>() {
        Value::Int(i)
    } else if let Ok(u) = obj.extract::<u64>() {
        Value::UInt(u)
    } else if let Ok(s) = obj.cast::<PyString>() {
        Value::Str(s.to_cow()?.into_owned().into())
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        owned(b.as_bytes().to_vec())
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        owned(b.to_vec())
    } else if let Ok(d) = obj.cast::<PyDict>() {
        let mut out = Dict::default();
        for (k, v) in d.iter() {
            let k = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("dict keys must be str"))?;
            out.set(k.to_cow()?.into_owned(), from_py(&v)?);
        }
        Value::Dict(out)
    } else if let Ok(l) = obj.cast::<PyList>() {
        Value::List(list(l.as_any().try_iter()?)?)
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        Value::Tuple(list(t.as_any().try_iter()?)?)
    } else if obj.hasattr("tobytes")? {
        owned(obj.call_method0("tobytes")?.extract()?)
    } else if obj.hasattr("timestamp")? {
        let secs: f64 = obj.call_method0("timestamp")?.extract()?;
        Value::Time((secs * 1000.0).round() as i64)
    } else if let Ok(it) = obj.try_iter() {
        Value::List(list(it)?)
    } else {
        Value::Other(obj.get_type().name()?.to_string().into())
    })
}

/// What `read` takes of a binding's `**options`, the keyword arguments of
/// `function` (see [`Kwargs`]); a keyword it leaves is refused.
pub fn with_kwargs<T>(
    function: &'static str,
    options: Option<&Bound<'_, PyDict>>,
    read: impl for<'v> FnOnce(&mut Kwargs<'v>) -> Result<T, ArgsError>,
) -> Result<T> {
    let v = options.map_or(Ok(Value::None), |d| from_py(d.as_any()))?;
    let mut kw = Kwargs::new(function, &v)?;
    let out = read(&mut kw)?;
    Ok(kw.done(out)?)
}

pub fn dict_to_py<'py>(py: Python<'py>, d: &Dict<'_>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (k, v) in &d.0 {
        out.set_item(k.as_ref(), to_py(py, v)?)?;
    }
    Ok(out)
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
