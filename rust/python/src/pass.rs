//! One pattern for every streaming pyclass: a core [`BatchPass`] wrapped by
//! [`batch_pass!`], which writes the class, its constructor, `push` (every
//! batch of the input, GIL released) and `finish`.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use pulsar_entries_core::chunks::{PartitionReassembler, PartitionResult};
use pulsar_entries_core::pass::BatchPass;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches, table};
use crate::errors::{Error, Result};

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

    /// The kept Python exception, else `e`.
    pub fn raise(&self, e: impl Into<Error>) -> Error {
        match self.0.lock().unwrap().take() {
            Some(original) => original.into(),
            None => e.into(),
        }
    }
}

/// A pass output as Python objects.
pub trait ToPython<P> {
    fn to_python<'py>(self, py: Python<'py>, pass: &P) -> Result<Bound<'py, PyAny>>;
}

impl<P: BatchPass> ToPython<P> for Vec<RecordBatch> {
    fn to_python<'py>(self, py: Python<'py>, pass: &P) -> Result<Bound<'py, PyAny>> {
        table(py, self, pass.schema())
    }
}

/// `(done, leftovers)` tables.
impl ToPython<PartitionReassembler> for PartitionResult {
    fn to_python<'py>(
        self,
        py: Python<'py>,
        pass: &PartitionReassembler,
    ) -> Result<Bound<'py, PyAny>> {
        let done = table(py, self.done, pass.schema())?;
        let leftovers = table(py, vec![self.leftovers], pass.leftover_schema())?;
        Ok(PyTuple::new(py, [done, leftovers])?.into_any())
    }
}

pub fn push<'py, P>(
    py: Python<'py>,
    pass: &mut P,
    input: AnyRecordBatch,
    f: &Failure,
) -> Result<Bound<'py, PyAny>>
where
    P: BatchPass + Send,
    P::Output: ToPython<P> + Send,
{
    let input = batches(input)?;
    let out = py
        .detach(|| pass.push_all(&input))
        .map_err(|e| f.raise(e))?;
    out.to_python(py, pass)
}

pub fn finish<'py, P>(py: Python<'py>, pass: &mut P, f: &Failure) -> Result<Bound<'py, PyAny>>
where
    P: BatchPass + Send,
    P::Output: ToPython<P> + Send,
{
    let out = py.detach(|| pass.finish_pass()).map_err(|e| f.raise(e))?;
    out.to_python(py, pass)
}

/// A pyclass over a core [`BatchPass`]: `$class(input name of push)` holding
/// `$inner`, built by the constructor body (which sees the class's
/// [`Failure`] as `$failure`, and `**name`, when it ends the arguments, as
/// the keyword dict `name`).
macro_rules! batch_pass {
    (
        $(#[$meta:meta])*
        $class:ident($push_arg:ident): $inner:ty;
        #[pyo3($($pyo3:tt)*)]
        fn new($failure:ident $(, $arg:ident: $ty:ty)* $(, **$kwargs:ident)? $(,)?) $body:block
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
                $($kwargs: Option<&Bound<'_, pyo3::types::PyDict>>)?
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
                $crate::pass::push(py, &mut self.inner, $push_arg, &self.failure)
            }

            fn finish<'py>(&mut self, py: Python<'py>) -> $crate::errors::Result<Bound<'py, PyAny>> {
                $crate::pass::finish(py, &mut self.inner, &self.failure)
            }
        }
    };
}
pub(crate) use batch_pass;
