//! One pattern for every streaming pyclass: a core [`BatchPass`] wrapped by
//! [`batch_pass!`], which writes the class, its constructor, `push` (every
//! batch of the input, GIL released) and `finish`.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use pulsar_entries_core::chunks::{PartitionReassembler, PartitionResult};
use pulsar_entries_core::pass::BatchPass;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches, Table};
use crate::errors::{detach, Error, Result};

/// The Python exception that stopped a pass inside a callback (a strategy
/// written in Python), re-raised as is instead of the core's error.
#[derive(Clone, Default)]
pub struct Failure(Arc<Mutex<Option<PyErr>>>);

impl Failure {
    /// Keeps `e` for [`Failure::raise`]; returns its text for the core error.
    pub fn keep(&self, e: PyErr) -> String {
        let text = e.to_string();
        *self.0.lock().unwrap() = Some(e);
        text
    }

    /// The kept Python exception, if any (taken).
    pub fn take(&self) -> Option<PyErr> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The kept Python exception, else `e`.
    pub fn raise(&self, e: impl Into<Error>) -> Error {
        match self.0.lock().unwrap().take() {
            Some(original) => original.into(),
            None => e.into(),
        }
    }
}

/// A pass output as what Python gets.
pub trait ToPython<P> {
    type Out: for<'py> IntoPyObject<'py, Error = PyErr>;
    fn to_python(self, pass: &P) -> Self::Out;
}

impl<P: BatchPass> ToPython<P> for Vec<RecordBatch> {
    type Out = Table;
    fn to_python(self, pass: &P) -> Table {
        Table(self, pass.schema())
    }
}

/// `(done, leftovers)` tables.
impl ToPython<PartitionReassembler> for PartitionResult {
    type Out = (Table, Table);
    fn to_python(self, pass: &PartitionReassembler) -> (Table, Table) {
        let leftovers = Table(vec![self.leftovers], pass.leftover_schema());
        (Table(self.done, pass.schema()), leftovers)
    }
}

/// `push` (every batch of `input`) or, without an input, `finish`, with the
/// GIL released; a kept callback exception is re-raised as it is.
pub fn run<'py, P>(
    py: Python<'py>,
    pass: &mut P,
    input: Option<AnyRecordBatch>,
    f: &Failure,
) -> Result<Bound<'py, PyAny>>
where
    P: BatchPass + Send,
    P::Output: ToPython<P> + Send,
{
    let input = input.map(batches).transpose()?;
    let step = |pass: &mut P| match &input {
        Some(input) => pass.push_all(input),
        None => pass.finish_pass(),
    };
    let out = detach(py, "pass", "PulsarEntriesError", || step(pass))?.map_err(|e| f.raise(e))?;
    Ok(out.to_python(pass).into_bound_py_any(py)?)
}

/// A pyclass over a core [`BatchPass`]: `$class(input name of push)` holding
/// `$inner`, built by the constructor body (which sees the class's
/// [`Failure`] as `$failure`).
macro_rules! batch_pass {
    (
        $(#[$meta:meta])*
        $class:ident($push_arg:ident): $inner:ty;
        #[pyo3($($pyo3:tt)*)]
        fn new($failure:ident $(, $arg:ident: $ty:ty)* $(,)?) $body:block
    ) => {
        $(#[$meta])*
        #[pyclass(module = "pulsar_entries._native")]
        pub struct $class {
            inner: $inner,
            failure: $crate::pass::Failure,
        }

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3($($pyo3)*)]
            fn new(
                $($arg: $ty,)*
            ) -> $crate::errors::Result<Self> {
                let $failure = $crate::pass::Failure::default();
                let inner = $body;
                Ok($class { inner, failure: $failure })
            }

            fn push<'py>(
                &mut self,
                py: Python<'py>,
                $push_arg: pyo3_arrow::input::AnyRecordBatch,
            ) -> $crate::errors::Result<Bound<'py, PyAny>> {
                $crate::pass::run(py, &mut self.inner, Some($push_arg), &self.failure)
            }

            fn finish<'py>(&mut self, py: Python<'py>) -> $crate::errors::Result<Bound<'py, PyAny>> {
                $crate::pass::run(py, &mut self.inner, None, &self.failure)
            }
        }
    };
}
pub(crate) use batch_pass;
