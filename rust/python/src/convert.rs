//! Conversions every binding shares: Arrow input and output, times, pairs.

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

/// Batches to return as a `pyarrow.Table`.
pub struct Table(pub Vec<RecordBatch>, pub SchemaRef);

impl<'py> IntoPyObject<'py> for Table {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyTable::try_new(self.0, self.1)?.into_pyarrow(py)
    }
}

/// A core value tree to return as Python objects ([`to_py`]).
pub struct Obj(Value<'static>);

/// `v` as an [`Obj`], owning what it borrowed.
pub fn obj<'a>(v: impl Into<Value<'a>>) -> Obj {
    Obj(v.into().into_owned())
}

impl<'py> IntoPyObject<'py> for Obj {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0)
    }
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
        Value::Dict(d) => {
            let out = PyDict::new(py);
            for (k, v) in &d.0 {
                out.set_item(k.as_ref(), to_py(py, v)?)?;
            }
            out.into_any()
        }
        Value::Time(ms) => ms.into_pyobject(py)?.into_any(),
        Value::Other(name) => PyString::new(py, name).into_any(),
        Value::Table(schema, batches) => {
            Table(batches.clone(), schema.clone()).into_pyobject(py)?
        }
    })
}

/// Python objects as a core value tree, for inputs the core parses: None,
/// bool, int, str, bytes-likes, dicts with str keys, lists, tuples, times
/// (anything with `.timestamp()`), other iterables as lists; anything else
/// by its type's name.
/// A `bytes` object is borrowed, not copied; what it holds is owned.
pub fn from_py<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Value<'a>> {
    let owned = |b: Vec<u8>| Value::Bytes(b.into());
    let item = |v: &Bound<'_, PyAny>| from_py(v).map(Value::into_owned);
    let list = |it: Bound<'_, pyo3::types::PyIterator>| {
        it.map(|v| item(&v?)).collect::<PyResult<Vec<_>>>()
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
        Value::Bytes(b.as_bytes().into())
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        owned(b.to_vec())
    } else if let Ok(d) = obj.cast::<PyDict>() {
        let mut out = Dict::default();
        for (k, v) in d.iter() {
            let k = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("dict keys must be str"))?;
            out.set(k.to_cow()?.into_owned(), item(&v)?);
        }
        Value::Dict(out)
    } else if let Ok(l) = obj.cast::<PyList>() {
        Value::List(list(l.as_any().try_iter()?)?)
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        Value::Tuple(list(t.as_any().try_iter()?)?)
    } else if obj.hasattr("__arrow_c_stream__")? {
        // A table, record batch or stream (pyarrow, polars, ...), not copied.
        let (schema, batches) = batches_and_schema(obj.extract()?).map_err(PyErr::from)?;
        Value::Table(schema, batches)
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

/// A binding's `**options` (as `Option<KwDict>`): the keyword arguments the
/// core reads ([`Kwargs`]).
pub type KwDict<'a, 'py> = &'a Bound<'py, PyDict>;

/// What `read` takes of a binding's `**options`, the keyword arguments of
/// `function` (see [`Kwargs`]); a keyword it leaves is refused.
pub fn with_kwargs<T>(
    function: &'static str,
    options: Option<KwDict>,
    read: impl for<'v> FnOnce(&mut Kwargs<'v>) -> Result<T, ArgsError>,
) -> Result<T> {
    let v = options.map_or(Ok(Value::None), |d| from_py(d.as_any()))?;
    let mut kw = Kwargs::new(function, &v)?;
    let out = read(&mut kw)?;
    Ok(kw.done(out)?)
}
