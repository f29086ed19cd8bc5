//! The one place where core errors become Python exceptions.
//!
//! Every kind of core error (`pulsar_entries_core::ErrorKind`) has one class
//! under `PulsarEntriesError`, and each also subclasses the matching built-in,
//! so `except ValueError` / `except OSError` keep working:
//!
//! ```text
//! PulsarEntriesError(Exception)
//! ├── InputSchemaError(PulsarEntriesError, ValueError)
//! ├── OptionsError(PulsarEntriesError, ValueError)
//! ├── OrderError(PulsarEntriesError, ValueError)
//! ├── DataError(PulsarEntriesError, ValueError)
//! │   ├── EntryFormatError   (stored entries, message ids)
//! │   └── OffloadFormatError (tiered-storage objects)
//! └── StorageError(PulsarEntriesError, OSError)
//! ```
//!
//! The classes are built with `type(name, bases, namespace)`, which takes
//! several bases and works on the stable ABI. Their `__module__` is
//! `pulsar_entries`, which exports them, so they pickle (Spark ships them
//! from executors).

use pulsar_entries_core::bookkeeper::BookKeeperError;
use pulsar_entries_core::compaction::lookup::LookupError;
use pulsar_entries_core::metadata_store::MetadataError;
use pulsar_entries_core::offload::OffloadError;
use pulsar_entries_core::stamp::StampError;
use pulsar_entries_core::value::input::InputError;
use pulsar_entries_core::{EntryError, ErrorKind};
use pyo3::exceptions::{PyException, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// The Python classes, in registration order (see [`CLASSES`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Base,
    InputSchema,
    Options,
    Order,
    Data,
    EntryFormat,
    OffloadFormat,
    Storage,
}

/// `(class, name, parent, doc)`; a child of `Base` also subclasses the
/// built-in of its kind, a child of another class only that class.
const CLASSES: [(Class, &str, Option<Class>, &str); 8] = [
    (
        Class::Base,
        "PulsarEntriesError",
        None,
        "Any error pulsar-entries raises.",
    ),
    (
        Class::InputSchema,
        "InputSchemaError",
        Some(Class::Base),
        "The input table lacks a column, or a column or argument has the wrong shape.",
    ),
    (
        Class::Options,
        "OptionsError",
        Some(Class::Base),
        "An option's value is out of range or contradicts another option.",
    ),
    (
        Class::Order,
        "OrderError",
        Some(Class::Base),
        "Input rows are not in the order the operation needs.",
    ),
    (
        Class::Data,
        "DataError",
        Some(Class::Base),
        "Stored bytes are malformed: framing, checksum, protobuf, codec, batch.",
    ),
    (
        Class::EntryFormat,
        "EntryFormatError",
        Some(Class::Data),
        "An entry's bytes are not a valid Pulsar stored entry.",
    ),
    (
        Class::OffloadFormat,
        "OffloadFormatError",
        Some(Class::Data),
        "An offload object's bytes are not a valid Pulsar tiered-storage object.",
    ),
    (
        Class::Storage,
        "StorageError",
        Some(Class::Base),
        "Reading or writing storage failed: a file, an object, a connection.",
    ),
];

impl Class {
    fn make(self, py: Python<'_>) -> PyResult<Py<PyType>> {
        let (_, name, parent, doc) = CLASSES[self as usize];
        let builtin = match self {
            Class::Base => py.get_type::<PyException>(),
            Class::Storage => py.get_type::<PyOSError>(),
            _ => py.get_type::<PyValueError>(),
        };
        let bases = match parent {
            None => PyTuple::new(py, [builtin])?,
            Some(Class::Base) => PyTuple::new(py, [Class::Base.get(py)?, builtin])?,
            Some(p) => PyTuple::new(py, [p.get(py)?])?,
        };
        let ns = PyDict::new(py);
        ns.set_item("__module__", "pulsar_entries")?;
        ns.set_item("__doc__", doc)?;
        let ty = py.get_type::<PyType>().call1((name, bases, ns))?;
        Ok(ty.cast_into::<PyType>()?.unbind())
    }

    /// The class, created on first use.
    pub fn get(self, py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
        static TYPES: [PyOnceLock<Py<PyType>>; 8] = [const { PyOnceLock::new() }; 8];
        let cell = &TYPES[self as usize];
        Ok(cell.get_or_try_init(py, || self.make(py))?.bind(py).clone())
    }

    pub fn err(self, message: impl Into<String>) -> Error {
        Error::Raise(self, message.into())
    }

    /// The class for a core error kind; `data` is the layer's own data class.
    fn of(kind: ErrorKind, data: Class) -> Class {
        match kind {
            ErrorKind::InputSchema => Class::InputSchema,
            ErrorKind::Options => Class::Options,
            ErrorKind::Order => Class::Order,
            ErrorKind::Data => data,
            ErrorKind::Io => Class::Storage,
        }
    }
}

/// What every binding returns on failure: a core error's class and text, or
/// a Python exception (from a callback, or an argument of the wrong type)
/// that propagates as it is.
pub enum Error {
    Raise(Class, String),
    Py(PyErr),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Each core error type by its `kind()`, data errors as the given class.
macro_rules! from_core {
    ($($error:ty => $data:ident),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(e: $error) -> Self {
                Error::Raise(Class::of(e.kind(), Class::$data), e.to_string())
            }
        }
    )*};
}

from_core! {
    EntryError => EntryFormat,
    LookupError => EntryFormat,
    StampError => EntryFormat,
    MetadataError => Data,
    BookKeeperError => Data,
}

/// A failing writer is reported as a malformed object, as it always was;
/// the other kinds are the core's.
impl From<OffloadError> for Error {
    fn from(e: OffloadError) -> Self {
        let kind = match e.kind() {
            ErrorKind::Io => ErrorKind::Data,
            kind => kind,
        };
        Error::Raise(Class::of(kind, Class::OffloadFormat), e.to_string())
    }
}

/// A value of the wrong type is Python's `TypeError`.
impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        match e {
            InputError::Type(text) => Error::Py(PyTypeError::new_err(text)),
            InputError::UnknownKey(text) => Error::Raise(Class::InputSchema, text),
        }
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::Raise(Class::InputSchema, e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Raise(Class::Storage, e.to_string())
    }
}

impl From<PyErr> for Error {
    fn from(e: PyErr) -> Self {
        Error::Py(e)
    }
}

impl From<pyo3_arrow::error::PyArrowError> for Error {
    fn from(e: pyo3_arrow::error::PyArrowError) -> Self {
        Error::Py(e.into())
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Py(e) => e,
            Error::Raise(class, text) => Python::attach(|py| match class.get(py) {
                Ok(ty) => PyErr::from_type(ty, text),
                Err(e) => e,
            }),
        }
    }
}

/// Adds every class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (class, name, ..) in CLASSES {
        m.add(name, class.get(m.py())?)?;
    }
    Ok(())
}
