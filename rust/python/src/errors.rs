//! The one place where core errors become Python exceptions.
//!
//! Every kind of core error (`pulsar_entries_core::ErrorKind`) has one class
//! under `PulsarEntriesError`, each also a subclass of the matching built-in
//! (`ValueError`, `OSError`). The classes are defined in Python, in
//! `pulsar_entries._errors` (which shows the hierarchy); this module picks
//! the class for each core error and exports them from `_native` too.

use pulsar_entries_core::bookkeeper::BookKeeperError;
use pulsar_entries_core::compaction::lookup::LookupError;
use pulsar_entries_core::metadata_store::MetadataError;
use pulsar_entries_core::offload::OffloadError;
use pulsar_entries_core::schema::SchemaError;
use pulsar_entries_core::stamp::StampError;
use pulsar_entries_core::{EntryError, ErrorKind};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The classes of `pulsar_entries._errors`, each exported from `_native` too.
const CLASSES: &[&str] = &[
    "PulsarEntriesError",
    "InputSchemaError",
    "OptionsError",
    "OrderError",
    "DataError",
    "EntryFormatError",
    "OffloadFormatError",
    "StorageError",
];

/// The class for a core error kind; `data` is the layer's own data class.
fn class_of(kind: ErrorKind, data: &'static str) -> &'static str {
    match kind {
        ErrorKind::InputSchema => "InputSchemaError",
        ErrorKind::Options => "OptionsError",
        ErrorKind::Order => "OrderError",
        ErrorKind::Data => data,
        ErrorKind::Io => "StorageError",
    }
}

/// What every binding returns on failure: a core error's class and text, or
/// a Python exception (from a callback, or an argument of the wrong type)
/// that propagates as it is.
pub enum Error {
    /// The name of a class of [`CLASSES`], and the text.
    Raise(&'static str, String),
    Py(PyErr),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Each core error type by its `kind()`, data errors as the given class.
macro_rules! from_core {
    ($($error:ty => $data:literal),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(e: $error) -> Self {
                Error::Raise(class_of(e.kind(), $data), e.to_string())
            }
        }
    )*};
}

from_core! {
    EntryError => "EntryFormatError",
    LookupError => "EntryFormatError",
    StampError => "EntryFormatError",
    BookKeeperError => "DataError",
    SchemaError => "EntryFormatError",
}

/// A failing writer is reported as a malformed object, as it always was; a
/// local file that cannot be written is a storage error; the other kinds are
/// the core's.
impl From<OffloadError> for Error {
    fn from(e: OffloadError) -> Self {
        let kind = match (&e, e.kind()) {
            (OffloadError::File(_), kind) => kind,
            (_, ErrorKind::Io) => ErrorKind::Data,
            (_, kind) => kind,
        };
        Error::Raise(class_of(kind, "OffloadFormatError"), e.to_string())
    }
}

/// A node that must exist and does not (an unknown topic) is Python's `LookupError`.
impl From<MetadataError> for Error {
    fn from(e: MetadataError) -> Self {
        match e {
            MetadataError::Missing(text) => {
                Error::Py(pyo3::exceptions::PyLookupError::new_err(text))
            }
            e => Error::Raise(class_of(e.kind(), "DataError"), e.to_string()),
        }
    }
}

/// Every error of a type as one class.
macro_rules! from_fixed {
    ($($error:ty => $class:literal),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(e: $error) -> Self {
                Error::Raise($class, e.to_string())
            }
        }
    )*};
}

from_fixed! {
    arrow_schema::ArrowError => "InputSchemaError",
    std::io::Error => "StorageError",
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
            Error::Raise(class, text) => Python::attach(|py| {
                let class = py
                    .import("pulsar_entries._errors")
                    .and_then(|m| m.getattr(class));
                match class.and_then(|c| Ok(c.cast_into::<PyType>()?)) {
                    Ok(ty) => PyErr::from_type(ty, text),
                    Err(e) => e,
                }
            }),
        }
    }
}

/// Runs `f` with the GIL released, turning a panic into an error of
/// `class` (`StorageError` for the readers, `PulsarEntriesError` elsewhere):
/// a bug reaches the caller as an exception it can catch, never as a
/// `PanicException` (a `BaseException`).
pub fn detach<T: Send>(
    py: Python<'_>,
    what: &str,
    class: &'static str,
    f: impl FnOnce() -> T + Send,
) -> Result<T> {
    py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)))
        .map_err(|payload| {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Error::Raise(
                class,
                format!("{what}: internal error ({msg}); this is a bug, please report it"),
            )
        })
}

/// Adds every class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let errors = m.py().import("pulsar_entries._errors")?;
    CLASSES
        .iter()
        .try_for_each(|name| m.add(name, errors.getattr(name)?))
}
