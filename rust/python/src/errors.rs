//! The one place where core errors become Python exceptions.
//!
//! Every kind of core error (`pulsar_entries_core::ErrorKind`) has one class
//! under `PulsarEntriesError`, each also a subclass of the matching built-in
//! (`ValueError`, `OSError`). The classes are defined in Python, in
//! `pulsar_entries._errors` (which shows the hierarchy); this module picks
//! the class for each core error and exports them from `_native` too.

use pulsar_entries_core::bookkeeper::BookKeeperError;
use pulsar_entries_core::compaction::lookup::LookupError;
use pulsar_entries_core::kwargs::ArgsError;
use pulsar_entries_core::metadata_store::MetadataError;
use pulsar_entries_core::offload::OffloadError;
use pulsar_entries_core::schema::SchemaError;
use pulsar_entries_core::stamp::StampError;
use pulsar_entries_core::value::input::InputError;
use pulsar_entries_core::{EntryError, ErrorKind};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Declares [`Class`] and the names of its classes, in one table.
macro_rules! classes {
    ($($class:ident => $name:literal),* $(,)?) => {
        /// The classes of `pulsar_entries._errors`.
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub enum Class { $($class),* }
        const NAMES: &[&str] = &[$($name),*];
    };
}

classes! {
    Base => "PulsarEntriesError",
    InputSchema => "InputSchemaError",
    Options => "OptionsError",
    Order => "OrderError",
    Data => "DataError",
    EntryFormat => "EntryFormatError",
    OffloadFormat => "OffloadFormatError",
    Storage => "StorageError",
}

impl Class {
    /// The class, imported on first use.
    pub fn get(self, py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
        static TYPES: [PyOnceLock<Py<PyType>>; NAMES.len()] =
            [const { PyOnceLock::new() }; NAMES.len()];
        let name = NAMES[self as usize];
        let class = TYPES[self as usize].import(py, "pulsar_entries._errors", name)?;
        Ok(class.clone())
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
    SchemaError => EntryFormat,
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
        Error::Raise(Class::of(kind, Class::OffloadFormat), e.to_string())
    }
}

/// A value of the wrong type is Python's `TypeError`.
impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        match e {
            InputError::Type(text) => Error::Py(PyTypeError::new_err(text)),
            InputError::UnknownKey(text) => Error::Raise(Class::InputSchema, text),
            InputError::Range(text) => Error::Raise(Class::Options, text),
        }
    }
}

/// Keyword arguments: a wrong type is Python's `TypeError`, the rest the core's.
impl From<ArgsError> for Error {
    fn from(e: ArgsError) -> Self {
        match e {
            ArgsError::Input(e) => e.into(),
            ArgsError::Entry(e) => e.into(),
            ArgsError::BookKeeper(e) => e.into(),
        }
    }
}

/// Every error of a type as one class.
macro_rules! from_fixed {
    ($($error:ty => $class:ident),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(e: $error) -> Self {
                Error::Raise(Class::$class, e.to_string())
            }
        }
    )*};
}

from_fixed! {
    arrow_schema::ArrowError => InputSchema,
    std::io::Error => Storage,
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
    let errors = m.py().import("pulsar_entries._errors")?;
    NAMES
        .iter()
        .try_for_each(|name| m.add(name, errors.getattr(name)?))
}
