//! Bindings for `pulsar_entries_core::compaction`: the strategies (built in,
//! or Python's through an adapter), the two-pass compactor, the Spark steps
//! (stateful passes and stateless steps over tables), ledger records and the
//! position lookups.
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
use pulsar_entries_core::compaction::position::MessagePosition;
use pulsar_entries_core::compaction::records::{self, parsed_records_schema, records_schema};
use pulsar_entries_core::compaction::strategic_distributed::{
    self as sd, PartitionPass, StrategicFold,
};
use pulsar_entries_core::compaction::strategy::Strategy;
use pulsar_entries_core::compaction::topic::TopicCompactor;
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::EntryError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{batches, Table};
use crate::errors::{detach, Error, Result};
use crate::options::{CompactionOptions, Named};
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

/// The core options of an optional `CompactionOptions` (`None`: the defaults).
fn compact(options: Option<PyRef<'_, CompactionOptions>>) -> CompactOptions {
    options.map_or(CompactOptions::DEFAULT, |o| o.0)
}

/// The `(most, least)` ids of the transactions to skip.
type Aborted = Option<Vec<(u64, u64)>>;

fn aborted_set(aborted: Aborted) -> HashSet<(u64, u64)> {
    aborted.unwrap_or_default().into_iter().collect()
}

#[pyclass(name = "Compactor", module = "pulsar_entries._native")]
pub struct CompactorPy {
    inner: TopicCompactor<DynStrategy>,
    failure: Failure,
}

#[pymethods]
impl CompactorPy {
    #[new]
    #[pyo3(signature = (*, strategy=None, options=None, aborted_transactions=None))]
    fn new(
        strategy: Option<Bound<'_, PyAny>>,
        options: Option<PyRef<'_, CompactionOptions>>,
        aborted_transactions: Aborted,
    ) -> Result<Self> {
        let failure = Failure::default();
        let strategy = strategy
            .map(|s| strategy_instance(s, &failure))
            .transpose()?;
        let aborted = aborted_set(aborted_transactions);
        let inner = TopicCompactor::new(compact(options), strategy, aborted)?;
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

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.stats().into_py_dict(py)
    }
}

// ---------------------------------------------------------------- Spark blocks

batch_pass! {
    SurvivorFolder(candidates): Folder;
    #[pyo3(signature = (*, order=None))]
    fn new(_failure, order: Option<Named<Order>>) {
        Folder::new(order.map_or(Order::default(), |o| o.0))
    }
}

batch_pass! {
    StrategicPartitionPass(entries): PartitionPass;
    #[pyo3(signature = (*, options=None, aborted_transactions=None))]
    fn new(_failure, options: Option<PyRef<'_, CompactionOptions>>, aborted_transactions: Aborted) {
        let aborted = aborted_set(aborted_transactions);
        PartitionPass::new(compact(options))?.with_aborted_transactions(aborted)
    }
}

batch_pass! {
    StrategicFolder(rows): StrategicFold<DynStrategy>;
    #[pyo3(signature = (strategy, *, options=None))]
    fn new(failure, strategy: Bound<'_, PyAny>, options: Option<PyRef<'_, CompactionOptions>>) {
        StrategicFold::new(compact(options), strategy_instance(strategy, &failure)?)?
    }
}

// ---------------------------------------------------------------- steps over tables

/// `f` over each batch of `input`, GIL released, the outputs as one table of `schema`.
fn per_batch<B: IntoIterator<Item = RecordBatch> + Send>(
    py: Python<'_>,
    name: &str,
    input: AnyRecordBatch,
    schema: impl FnOnce(&[RecordBatch]) -> SchemaRef,
    f: impl Fn(&RecordBatch) -> pulsar_entries_core::Result<B> + Send + Sync,
) -> Result<Table> {
    let batches = batches(input)?;
    let schema = schema(&batches);
    let out = detach(py, name, "PulsarEntriesError", || {
        batches
            .iter()
            .map(&f)
            .collect::<pulsar_entries_core::Result<Vec<_>>>()
    })??;
    Ok(Table(out.into_iter().flatten().collect(), schema))
}

/// The (most, least) ids of the transactions the entries' markers abort, sorted.
#[pyfunction]
pub fn aborted_transactions(py: Python<'_>, entries: AnyRecordBatch) -> Result<Vec<(u64, u64)>> {
    let batches = batches(entries)?;
    let found = detach(py, "aborted_transactions", "PulsarEntriesError", || {
        aborted_in(&batches)
    })??;
    let mut found: Vec<_> = found.into_iter().collect();
    found.sort_unstable();
    Ok(found)
}

/// `(ledger, entry, batch index, publish time)` of a message.
type Position = (i64, i64, i32, u64);

/// A [`Position`] and where it was found.
type Sourced = (i64, i64, i32, u64, &'static str);

fn position(p: &MessagePosition) -> Position {
    (p.ledger_id, p.entry_id, p.batch_index, p.publish_time)
}

/// The last message of a compacted ledger: its position and where it was found.
#[pyfunction]
#[pyo3(signature = (entries, *, max_uncompressed_size=None))]
pub fn compacted_last_position(
    py: Python<'_>,
    entries: AnyRecordBatch,
    max_uncompressed_size: Option<usize>,
) -> Result<Option<Sourced>> {
    let batches = batches(entries)?;
    let size = max_uncompressed_size.unwrap_or(CompactOptions::DEFAULT.max_uncompressed_size);
    let found = detach(py, "compacted_last_position", "PulsarEntriesError", || {
        lookup::compacted_last_position(&batches, size)
    })??;
    Ok(found.map(|(p, s)| {
        let (l, e, b, t) = position(&p);
        (l, e, b, t, source_name(s))
    }))
}

/// The topic's last message, or None.
#[pyfunction]
pub fn topic_last_position(py: Python<'_>, entries: AnyRecordBatch) -> Result<Option<Position>> {
    let batches = batches(entries)?;
    let found = detach(py, "topic_last_position", "PulsarEntriesError", || {
        lookup::topic_last_position(&batches)
    })??;
    Ok(found.as_ref().map(position))
}

/// The largest (ledger, entry), or None.
#[pyfunction]
pub fn max_entry_position(entries: AnyRecordBatch) -> Result<Option<(i64, i64)>> {
    Ok(lookup::max_entry_position(&batches(entries)?)?)
}

/// The first (ledger, entry) of a compacted ledger at or after `publish_time`, or None.
#[pyfunction]
pub fn find_by_publish_time(
    entries: AnyRecordBatch,
    publish_time: u64,
) -> Result<Option<(i64, i64)>> {
    Ok(lookup::find_by_publish_time(
        &batches(entries)?,
        publish_time,
    )?)
}

/// Compacted entries as the records of a ledger (ledger_id, entry_id, record).
#[pyfunction]
pub fn to_ledger_records(py: Python<'_>, entries: AnyRecordBatch) -> Result<Table> {
    let f = |b: &RecordBatch| records::to_ledger_records(b).map(Some);
    per_batch(py, "to_ledger_records", entries, |_| records_schema(), f)
}

/// Ledger records back as entries.
#[pyfunction]
pub fn from_ledger_records(py: Python<'_>, records: AnyRecordBatch) -> Result<Table> {
    let f = |b: &RecordBatch| records::from_ledger_records(b).map(Some);
    per_batch(
        py,
        "from_ledger_records",
        records,
        |_| parsed_records_schema(),
        f,
    )
}

/// Every message with its key, in publish order (a TableView's input).
#[pyfunction]
#[pyo3(signature = (entries, *, options=None))]
pub fn keyed_messages(
    py: Python<'_>,
    entries: AnyRecordBatch,
    options: Option<PyRef<'_, CompactionOptions>>,
) -> Result<Table> {
    let (opts, batches) = (compact(options), batches(entries)?);
    let out = detach(py, "keyed_messages", "PulsarEntriesError", || {
        keyed(&batches, opts)
    })??;
    Ok(Table(out, keyed_schema()))
}

/// The candidates a partition of entries offers for compaction (Spark's first step).
#[pyfunction]
#[pyo3(signature = (entries, *, options=None, reduce_for_publish_order=false, aborted_transactions=None))]
pub fn compaction_candidates(
    py: Python<'_>,
    entries: AnyRecordBatch,
    options: Option<PyRef<'_, CompactionOptions>>,
    reduce_for_publish_order: bool,
    aborted_transactions: Aborted,
) -> Result<Table> {
    let (opts, aborted) = (compact(options), aborted_set(aborted_transactions));
    let f = |b: &RecordBatch| {
        distributed::candidates(b, &opts, reduce_for_publish_order, &aborted).map(Some)
    };
    per_batch(
        py,
        "compaction_candidates",
        entries,
        |_| candidate_schema(),
        f,
    )
}

/// The compacted entries, rebuilt from the survivors (Spark's last step).
#[pyfunction]
#[pyo3(signature = (entries, *, options=None))]
pub fn rebuild_entries(
    py: Python<'_>,
    entries: AnyRecordBatch,
    options: Option<PyRef<'_, CompactionOptions>>,
) -> Result<Table> {
    let opts = compact(options);
    let partition = |b: &[RecordBatch]| {
        let first = b.first();
        output_schema(first.is_some_and(|b| b.schema().column_with_name("partition").is_some()))
    };
    per_batch(py, "rebuild_entries", entries, partition, |b| {
        distributed::rebuild(b, &opts)
    })
}

/// The compacted entries of a strategic compaction, rebuilt (Spark's last step).
#[pyfunction]
#[pyo3(signature = (entries, *, options=None))]
pub fn strategic_rebuild(
    py: Python<'_>,
    entries: AnyRecordBatch,
    options: Option<PyRef<'_, CompactionOptions>>,
) -> Result<Table> {
    let opts = compact(options);
    per_batch(
        py,
        "strategic_rebuild",
        entries,
        |_| sd::rebuild_schema(),
        |b| sd::rebuild(b, &opts),
    )
}

// ---------------------------------------------------------------- positions

#[pyfunction]
#[pyo3(signature = (data, *, max_uncompressed_size=None))]
pub fn last_batch_indexes(
    py: Python<'_>,
    data: PyArray,
    max_uncompressed_size: Option<usize>,
) -> Result<Table> {
    let array = data.array().clone();
    let size = max_uncompressed_size.unwrap_or(CompactOptions::DEFAULT.max_uncompressed_size);
    let batch = detach(py, "last_batch_indexes", "PulsarEntriesError", || {
        lookup::last_batch_indexes(array.as_ref(), size)
    })??;
    Ok(Table(vec![batch], lookup::last_batch_index_schema()))
}
