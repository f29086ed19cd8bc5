//! Bindings for `pulsar_entries_core::compaction`'s classes: the strategies
//! (built in, or Python's through an adapter), the two-pass compactor, and
//! the stateful Spark steps. (The stateless steps, ledger records and
//! position lookups are core functions over tables: [`crate::calls`].)
//!
//! The GIL is released while entries are processed. A Python strategy is
//! called back with the GIL re-acquired for each call only.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use pulsar_entries_core::compaction::builtin::BuiltinStrategy;
use pulsar_entries_core::compaction::compactor::output_schema;
use pulsar_entries_core::compaction::distributed::SurvivorFolder as Folder;
use pulsar_entries_core::compaction::lookup;
use pulsar_entries_core::compaction::strategic_distributed::{PartitionPass, StrategicFold};
use pulsar_entries_core::compaction::strategy::Strategy;
use pulsar_entries_core::compaction::topic::TopicCompactor;
use pulsar_entries_core::kwargs::Kwargs;
use pulsar_entries_core::options::order as parse_order;
use pulsar_entries_core::value::Dict;
use pulsar_entries_core::{EntryError, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{obj, with_kwargs, KwDict, Obj, Table};
use crate::errors::{detach, Error, Result};
use crate::pass::{batch_pass, Failure};

type DynStrategy = Box<dyn Strategy + Send + Sync>;

// ---------------------------------------------------------------- strategies

#[pyclass(module = "pulsar_entries._native", frozen)]
pub struct NativeStrategy(BuiltinStrategy);

#[pymethods]
impl NativeStrategy {
    #[new]
    #[pyo3(signature = (kind, transitions=None, initial_state="Init", allow_version_gaps=true, first_version=None))]
    fn new(
        kind: &str,
        transitions: Option<HashMap<String, Vec<String>>>,
        initial_state: &str,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> Result<Self> {
        let (gaps, first) = (allow_version_gaps, first_version);
        let strategy = BuiltinStrategy::from_args(kind, transitions, initial_state, gaps, first)?;
        Ok(NativeStrategy(strategy))
    }

    #[pyo3(signature = (prev, cur))]
    fn should_keep_left(&self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> Result<bool> {
        Ok(self.0.instance().should_keep_left(prev, cur)?)
    }
}

/// A Python strategy, reached through an adapter object (built in
/// `pulsar_entries.strategies`) whose `keep_left_raw(prev, cur)` and
/// `merge_raw(prev, cur)` take and return raw bytes. Its exceptions are
/// kept in `failure` and re-raised as they are.
struct PyStrategy {
    adapter: Py<PyAny>,
    merge_enabled: bool,
    failure: Failure,
}

impl Strategy for PyStrategy {
    fn should_keep_left(
        &mut self,
        prev: Option<&[u8]>,
        cur: Option<&[u8]>,
    ) -> pulsar_entries_core::Result<bool> {
        Python::attach(|py| {
            let prev = prev.map(|b| PyBytes::new(py, b));
            let cur = cur.map(|b| PyBytes::new(py, b));
            let call = self
                .adapter
                .bind(py)
                .call_method1("keep_left_raw", (prev, cur));
            call.and_then(|r| r.is_truthy())
                .map_err(|e| EntryError::Strategy(self.failure.keep(e)))
        })
    }

    fn is_merge_enabled(&self) -> bool {
        self.merge_enabled
    }

    fn merge(&mut self, prev: &[u8], cur: &[u8]) -> pulsar_entries_core::Result<Vec<u8>> {
        Python::attach(|py| {
            let args = (PyBytes::new(py, prev), PyBytes::new(py, cur));
            let call = self.adapter.bind(py).call_method1("merge_raw", args);
            call.and_then(|r| r.extract::<Vec<u8>>())
                .map_err(|e| EntryError::Strategy(self.failure.keep(e)))
        })
    }
}

/// The native form of what `pulsar_entries.strategies.native_strategy` returns.
fn strategy_instance(s: Bound<'_, PyAny>, failure: &Failure) -> PyResult<DynStrategy> {
    if let Ok(native) = s.cast::<NativeStrategy>() {
        return Ok(native.get().0.instance());
    }
    if !s.hasattr("keep_left_raw")? {
        return Err(PyTypeError::new_err(
            "strategy must be built by pulsar_entries.strategies (an adapter with keep_left_raw)",
        ));
    }
    let merge_enabled = s.getattr("merge_enabled")?.is_truthy()?;
    let (adapter, failure) = (s.unbind(), failure.clone());
    Ok(Box::new(PyStrategy {
        adapter,
        merge_enabled,
        failure,
    }))
}

// ---------------------------------------------------------------- compactor

#[pyclass(name = "Compactor", module = "pulsar_entries._native")]
pub struct CompactorPy {
    inner: TopicCompactor<DynStrategy>,
    failure: Failure,
}

#[pymethods]
impl CompactorPy {
    /// `order`, `retain_null_key`, `verify_checksum`,
    /// `max_uncompressed_size`, `aborted_transactions` ([`Kwargs::compact`]).
    #[new]
    #[pyo3(signature = (*, strategy=None, **options))]
    fn new(strategy: Option<Bound<'_, PyAny>>, options: Option<KwDict>) -> Result<Self> {
        let read = |kw: &mut Kwargs| Ok((kw.compact(true, true)?, kw.aborted_transactions()?));
        let (opts, aborted) = with_kwargs("Compactor", options, read)?;
        let failure = Failure::default();
        let strategy = strategy
            .map(|s| strategy_instance(s, &failure))
            .transpose()?;
        let inner = TopicCompactor::new(opts, strategy, aborted)?;
        Ok(CompactorPy { inner, failure })
    }

    fn observe(&mut self, py: Python<'_>, entries: AnyRecordBatch) -> Result<()> {
        let (reader, inner) = (entries.into_reader()?, &mut self.inner);
        let result = detach(py, "Compactor.observe", "PulsarEntriesError", move || {
            reader.into_iter().try_for_each(|b| Ok(inner.observe(&b?)?))
        })?;
        result.map_err(|e: Error| self.failure.raise(e))
    }

    fn write(&mut self, py: Python<'_>, entries: AnyRecordBatch) -> Result<Table> {
        let (reader, inner) = (entries.into_reader()?, &mut self.inner);
        let schema = output_schema(reader.schema().column_with_name("partition").is_some());
        let write = |b: Result<RecordBatch, _>| Ok::<_, Error>(inner.write(&b?)?);
        let result = detach(py, "Compactor.write", "PulsarEntriesError", move || {
            reader.into_iter().map(write).collect::<Result<Vec<_>>>()
        })?;
        let batches = result.map_err(|e| self.failure.raise(e))?;
        Ok(Table(batches.into_iter().flatten().collect(), schema))
    }

    fn stats(&self) -> Obj {
        let fields = self.inner.stats().into_iter();
        obj(Dict(fields.map(|(k, v)| (k.into(), v.into())).collect()))
    }
}

// ---------------------------------------------------------------- Spark blocks

batch_pass! {
    SurvivorFolder(candidates): Folder;
    #[pyo3(signature = (*, order="publish"))]
    fn new(_failure, order: &str) {
        Folder::new(parse_order(order)?)
    }
}

batch_pass! {
    /// [`Kwargs::compact`] and `aborted_transactions`.
    StrategicPartitionPass(entries): PartitionPass;
    #[pyo3(signature = (**options))]
    fn new(_failure, **options) {
        let read = |kw: &mut Kwargs| Ok((kw.compact(true, true)?, kw.aborted_transactions()?));
        let (opts, aborted) = with_kwargs("StrategicPartitionPass", options, read)?;
        PartitionPass::new(opts)?.with_aborted_transactions(aborted)
    }
}

batch_pass! {
    /// [`Kwargs::compact`].
    StrategicFolder(rows): StrategicFold<DynStrategy>;
    #[pyo3(signature = (strategy, **options))]
    fn new(failure, strategy: Bound<'_, PyAny>, **options) {
        let opts = with_kwargs("StrategicFolder", options, |kw| kw.compact(true, true))?;
        StrategicFold::new(opts, strategy_instance(strategy, &failure)?)?
    }
}

// ---------------------------------------------------------------- positions

#[pyfunction]
#[pyo3(signature = (data, *, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn last_batch_indexes(
    py: Python<'_>,
    data: PyArray,
    max_uncompressed_size: usize,
) -> Result<Table> {
    let array = data.array().clone();
    let batch = detach(py, "last_batch_indexes", "PulsarEntriesError", || {
        lookup::last_batch_indexes(array.as_ref(), max_uncompressed_size)
    })??;
    Ok(Table(vec![batch], lookup::last_batch_index_schema()))
}
