//! Bindings for `pulsar_entries_core::compaction`: the two-pass compactors,
//! the Spark building blocks, ledger records and position lookups.
//!
//! The GIL is released while entries are processed. A Python strategy is
//! called back with the GIL re-acquired for each call only.

use std::collections::{HashMap, HashSet};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pulsar_entries_core::compaction::builtin::BuiltinStrategy;
use pulsar_entries_core::compaction::compactor::{aborted_in, output_schema};
use pulsar_entries_core::compaction::distributed::{
    self, candidate_schema, SurvivorFolder as Folder,
};
use pulsar_entries_core::compaction::keyed::{keyed_messages as keyed, keyed_schema};
use pulsar_entries_core::compaction::lookup::{self, source_name};
use pulsar_entries_core::compaction::records::{self, parsed_records_schema, records_schema};
use pulsar_entries_core::compaction::strategic_distributed::{
    self as sd, PartitionPass, StrategicFold,
};
use pulsar_entries_core::compaction::strategy::Strategy;
use pulsar_entries_core::compaction::topic::TopicCompactor;
use pulsar_entries_core::compaction::CompactOptions;
use pulsar_entries_core::kwargs::Kwargs;
use pulsar_entries_core::options::order as parse_order;
use pulsar_entries_core::{EntryError, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{batches, dict, table, with_kwargs};
use crate::errors::{Error, Result};
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
    fn new(
        strategy: Option<Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> Result<Self> {
        let read = |kw: &mut Kwargs| Ok((kw.compact(true, true)?, kw.pairs(ABORTED)?));
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
        let result =
            py.detach(move || reader.into_iter().try_for_each(|b| Ok(inner.observe(&b?)?)));
        result.map_err(|e: Error| self.failure.raise(e))
    }

    fn write<'py>(
        &mut self,
        py: Python<'py>,
        entries: AnyRecordBatch,
    ) -> Result<Bound<'py, PyAny>> {
        let (reader, inner) = (entries.into_reader()?, &mut self.inner);
        let schema = output_schema(reader.schema().column_with_name("partition").is_some());
        let write = |b: Result<RecordBatch, _>| Ok::<_, Error>(inner.write(&b?)?);
        let result = py.detach(move || reader.into_iter().map(write).collect::<Result<Vec<_>>>());
        let batches = result.map_err(|e| self.failure.raise(e))?;
        table(py, batches.into_iter().flatten().collect(), schema)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, self.inner.stats())
    }
}

// ---------------------------------------------------------------- Spark blocks

/// The keyword of the aborted transactions to drop, `[(most, least), ...]`.
const ABORTED: &str = "aborted_transactions";

/// [`Kwargs::compact`] in publish order (with `retain_null_key` when `retain`).
fn publish_options(
    function: &'static str,
    options: Option<&Bound<'_, PyDict>>,
    retain: bool,
) -> Result<CompactOptions> {
    with_kwargs(function, options, |kw| kw.compact(false, retain))
}

/// `f` over all of `entries`' batches, with the GIL released.
fn with_batches<T: Send, E: Into<Error> + Send>(
    py: Python<'_>,
    entries: AnyRecordBatch,
    f: impl FnOnce(&[RecordBatch]) -> Result<T, E> + Send,
) -> Result<T> {
    let input = batches(entries)?;
    py.detach(|| f(&input)).map_err(Into::into)
}

/// `f` over each batch of `entries` (GIL released), the outputs as one table.
fn per_batch<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    schema: SchemaRef,
    f: impl Fn(&RecordBatch) -> Result<Vec<RecordBatch>, EntryError> + Send + Sync,
) -> Result<Bound<'py, PyAny>> {
    let each = |input: &[RecordBatch]| input.iter().map(f).collect::<Result<Vec<_>, _>>();
    let out = with_batches(py, entries, each)?;
    table(py, out.into_iter().flatten().collect(), schema)
}

/// `retain_null_key`, `reduce_for_publish_order`, `verify_checksum`,
/// `max_uncompressed_size`, `aborted_transactions`.
#[pyfunction]
#[pyo3(signature = (entries, **options))]
pub fn compaction_candidates<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>> {
    let read = |kw: &mut Kwargs| {
        let opts = kw.compact(false, true)?;
        Ok((
            opts,
            kw.flag("reduce_for_publish_order", false)?,
            kw.pairs(ABORTED)?,
        ))
    };
    let (opts, reduce, aborted): (_, _, HashSet<_>) =
        with_kwargs("compaction_candidates", options, read)?;
    per_batch(py, entries, candidate_schema(), |b| {
        Ok(vec![distributed::candidates(b, &opts, reduce, &aborted)?])
    })
}

batch_pass! {
    SurvivorFolder(candidates): Folder;
    #[pyo3(signature = (*, order="publish"))]
    fn new(_failure, order: &str) {
        Folder::new(parse_order(order)?)
    }
}

/// `retain_null_key`, `verify_checksum`, `max_uncompressed_size`.
#[pyfunction]
#[pyo3(signature = (entries, **options))]
pub fn rebuild_entries<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>> {
    let opts = publish_options("rebuild_entries", options, true)?;
    let input = batches(entries)?;
    let partition = |b: &RecordBatch| b.schema().column_with_name("partition").is_some();
    let schema = output_schema(input.first().is_some_and(partition));
    let rebuild = |b| distributed::rebuild(b, &opts);
    let out = py.detach(|| input.iter().map(rebuild).collect::<Result<Vec<_>, _>>())?;
    table(py, out.into_iter().flatten().collect(), schema)
}

batch_pass! {
    /// [`Kwargs::compact`] and `aborted_transactions`.
    StrategicPartitionPass(entries): PartitionPass;
    #[pyo3(signature = (**options))]
    fn new(_failure, **options) {
        let read = |kw: &mut Kwargs| Ok((kw.compact(true, true)?, kw.pairs(ABORTED)?));
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

/// `verify_checksum`, `max_uncompressed_size`.
#[pyfunction]
#[pyo3(signature = (entries, **options))]
pub fn strategic_rebuild<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>> {
    let opts = publish_options("strategic_rebuild", options, false)?;
    per_batch(py, entries, sd::rebuild_schema(), |b| sd::rebuild(b, &opts))
}

// ---------------------------------------------------------------- ledger records

#[pyfunction]
pub fn to_ledger_records(py: Python<'_>, entries: AnyRecordBatch) -> Result<Bound<'_, PyAny>> {
    let records = |b: &_| Ok(vec![records::to_ledger_records(b)?]);
    per_batch(py, entries, records_schema(), records)
}

#[pyfunction]
pub fn from_ledger_records(py: Python<'_>, records: AnyRecordBatch) -> Result<Bound<'_, PyAny>> {
    let entries = |b: &_| Ok(vec![records::from_ledger_records(b)?]);
    per_batch(py, records, parsed_records_schema(), entries)
}

// ---------------------------------------------------------------- positions

/// `(ledger_id, entry_id, batch_index, publish_time, source)`.
type LastPosition = (i64, i64, i32, u64, &'static str);

#[pyfunction]
#[pyo3(signature = (entries, *, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn compacted_last_position(
    py: Python<'_>,
    entries: AnyRecordBatch,
    max_uncompressed_size: usize,
) -> Result<Option<LastPosition>> {
    let last = |b: &[_]| lookup::compacted_last_position(b, max_uncompressed_size);
    let found = with_batches(py, entries, last)?;
    Ok(found.map(|(p, s)| {
        (
            p.ledger_id,
            p.entry_id,
            p.batch_index,
            p.publish_time,
            source_name(s),
        )
    }))
}

#[pyfunction]
#[pyo3(signature = (data, *, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn last_batch_indexes(
    py: Python<'_>,
    data: PyArray,
    max_uncompressed_size: usize,
) -> Result<Bound<'_, PyAny>> {
    let array = data.array().clone();
    let batch = py.detach(|| lookup::last_batch_indexes(array.as_ref(), max_uncompressed_size))?;
    table(py, vec![batch], lookup::last_batch_index_schema())
}

#[pyfunction]
pub fn topic_last_position(
    py: Python<'_>,
    entries: AnyRecordBatch,
) -> Result<Option<(i64, i64, i32, u64)>> {
    let found = with_batches(py, entries, lookup::topic_last_position)?;
    Ok(found.map(|p| (p.ledger_id, p.entry_id, p.batch_index, p.publish_time)))
}

#[pyfunction]
pub fn max_entry_position(py: Python<'_>, entries: AnyRecordBatch) -> Result<Option<(i64, i64)>> {
    with_batches(py, entries, lookup::max_entry_position)
}

#[pyfunction]
pub fn find_by_publish_time(
    py: Python<'_>,
    entries: AnyRecordBatch,
    publish_time: u64,
) -> Result<Option<(i64, i64)>> {
    let find = |b: &_| lookup::find_by_publish_time(b, publish_time);
    with_batches(py, entries, find)
}

/// `verify_checksum`, `max_uncompressed_size`.
#[pyfunction]
#[pyo3(signature = (entries, **options))]
pub fn keyed_messages<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>> {
    let opts = publish_options("keyed_messages", options, false)?;
    let out = with_batches(py, entries, |b| keyed(b, opts))?;
    table(py, out, keyed_schema())
}

#[pyfunction]
pub fn aborted_transactions(py: Python<'_>, entries: AnyRecordBatch) -> Result<Vec<(u64, u64)>> {
    let mut out: Vec<_> = with_batches(py, entries, aborted_in)?.into_iter().collect();
    out.sort_unstable();
    Ok(out)
}
