//! The core's options groups as Python classes: frozen, built by keyword
//! (`None`: the core's default, except where `None` is itself a value), checked
//! by the core when built, compared and pickled by their fields.

use std::str::FromStr;

use pulsar_entries_core::chunks::ReassemblyOptions as Reassembly;
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::{DecodeOptions as Decode, EntryError, Utf8Errors};
use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

use crate::errors::{Error, Result};

/// A `str` parsed by the core (`order`, `utf8_errors`, codecs): a bad name is
/// the core's `OptionsError`, which lists the names it takes.
pub struct Named<T>(pub T);

impl<'py, T: FromStr<Err = EntryError>> FromPyObject<'_, 'py> for Named<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let name: String = obj.extract()?;
        Ok(Named(name.parse().map_err(Error::from)?))
    }
}

/// An int option that must not be negative (`None`: not given); a negative
/// one is an `OptionsError` naming it, as the core's range checks are.
pub fn count<T: TryFrom<i64>>(name: &str, v: Option<i64>) -> Result<Option<T>> {
    v.map(|n| {
        T::try_from(n).map_err(|_| {
            let text = format!("argument '{name}' must be a non-negative int, not {n}");
            Error::from(EntryError::Options(text))
        })
    })
    .transpose()
}

/// `Class(field=value, ...)`: an options object's repr, its `fields` read back.
pub fn options_repr(o: &Bound<'_, PyAny>, fields: &[&str]) -> PyResult<String> {
    let each = |f: &&str| Ok(format!("{f}={}", o.getattr(*f)?.repr()?));
    let shown = fields.iter().map(each).collect::<PyResult<Vec<_>>>()?;
    Ok(format!("{}({})", o.get_type().name()?, shown.join(", ")))
}

/// How an options object pickles: `functools.partial(type(o), **fields)()`.
pub fn options_reduce<'py>(
    o: &Bound<'py, PyAny>,
    fields: &[&str],
) -> PyResult<(Bound<'py, PyAny>, ())> {
    let py = o.py();
    let kw = fields
        .iter()
        .map(|f| Ok((*f, o.getattr(*f)?)))
        .collect::<PyResult<Vec<_>>>()?;
    let partial = py.import("functools")?.getattr("partial")?;
    let kw = kw.into_py_dict(py)?;
    Ok((partial.call((o.get_type(),), Some(&kw))?, ()))
}

/// An options class wrapping its core struct: the constructor, one getter
/// per field (`field: type = expr` over the core struct `s`), `__repr__` and
/// `__reduce__` (by the fields).
macro_rules! options_class {
    (
        $(#[$doc:meta])* $class:ident($core:ty);
        #[$sig:meta] fn new($($p:ident: $pt:ty),* $(,)?) $body:block
        |$s:ident| { $($field:ident: $ty:ty = $get:expr),* $(,)? }
    ) => {
        $(#[$doc])*
        #[pyclass(frozen, eq, module = "pulsar_entries._native")]
        #[derive(Clone, PartialEq, Default)]
        pub struct $class(pub $core);

        #[pymethods]
        impl $class {
            #[new]
            #[$sig]
            // Keyword-only options, each with its default: Python's way, not a long positional list.
            #[allow(clippy::too_many_arguments)]
            fn new($($p: $pt),*) -> Result<Self> {
                Ok(Self($body))
            }

            $(#[getter]
            fn $field(&self) -> $ty {
                let $s = &self.0;
                $get
            })*

            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                $crate::options::options_repr(slf.as_any(), &[$(stringify!($field)),*])
            }

            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, ())> {
                $crate::options::options_reduce(slf.as_any(), &[$(stringify!($field)),*])
            }
        }
    };
}
pub(crate) use options_class;

options_class! {
    /// What `decode` is asked to do (the core's `DecodeOptions`).
    DecodeOptions(Decode);
    #[pyo3(signature = (*, verify_checksum=None, keep_markers=None, max_uncompressed_size=None, utf8_errors=None, max_output_bytes=None))]
    fn new(
        verify_checksum: Option<bool>,
        keep_markers: Option<bool>,
        max_uncompressed_size: Option<i64>,
        utf8_errors: Option<Named<Utf8Errors>>,
        max_output_bytes: Option<i64>,
    ) {
        let d = Decode::DEFAULT;
        Decode::try_new(
            verify_checksum.unwrap_or(d.verify_checksum),
            keep_markers.unwrap_or(d.keep_markers),
            count("max_uncompressed_size", max_uncompressed_size)?.unwrap_or(d.max_uncompressed_size),
            utf8_errors.map_or(d.utf8_errors, |n| n.0),
            count("max_output_bytes", max_output_bytes)?,
        )?
    }
    |o| {
        verify_checksum: bool = o.verify_checksum,
        keep_markers: bool = o.keep_markers,
        max_uncompressed_size: usize = o.max_uncompressed_size,
        utf8_errors: &'static str = o.utf8_errors.name(),
        max_output_bytes: Option<usize> = o.max_output_bytes,
    }
}

options_class! {
    /// The limits of chunk reassembly (the core's `ReassemblyOptions`).
    ReassemblyOptions(Reassembly);
    #[pyo3(signature = (*, max_pending=Reassembly::DEFAULT.max_pending.map(|n| n as i64), expire_after_ms=Reassembly::DEFAULT.expire_after_ms, max_message_size=None))]
    fn new(max_pending: Option<i64>, expire_after_ms: Option<i64>, max_message_size: Option<i64>) {
        let size = count("max_message_size", max_message_size)?;
        let size = size.unwrap_or(Reassembly::DEFAULT.max_message_size);
        Reassembly::try_new(count("max_pending", max_pending)?, expire_after_ms, size)?
    }
    |o| {
        max_pending: Option<usize> = o.max_pending,
        expire_after_ms: Option<i64> = o.expire_after_ms,
        max_message_size: usize = o.max_message_size,
    }
}

options_class! {
    /// How a topic is compacted (the core's `CompactOptions`).
    CompactionOptions(CompactOptions);
    #[pyo3(signature = (*, order=None, retain_null_key=None, verify_checksum=None, max_uncompressed_size=None))]
    fn new(
        order: Option<Named<Order>>,
        retain_null_key: Option<bool>,
        verify_checksum: Option<bool>,
        max_uncompressed_size: Option<i64>,
    ) {
        let d = CompactOptions::DEFAULT;
        let size = count("max_uncompressed_size", max_uncompressed_size)?;
        CompactOptions::try_new(
            order.map_or(d.order, |n| n.0),
            retain_null_key.unwrap_or(d.retain_null_key),
            verify_checksum.unwrap_or(d.verify_checksum),
            size.unwrap_or(d.max_uncompressed_size),
        )?
    }
    |o| {
        order: &'static str = o.order.name(),
        retain_null_key: bool = o.retain_null_key,
        verify_checksum: bool = o.verify_checksum,
        max_uncompressed_size: usize = o.max_uncompressed_size,
    }
}
