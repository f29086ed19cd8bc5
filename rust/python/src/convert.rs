//! Arrow input and output, as every binding takes and gives it.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
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
