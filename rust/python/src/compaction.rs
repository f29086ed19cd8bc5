//! Bindings for `pulsar_entries_core::compaction`: the two-pass compactors,
//! the Spark building blocks, ledger records and position lookups.
//!
//! The GIL is released while entries are processed. A Python strategy is
//! called back with the GIL re-acquired for each call only.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pulsar_entries_core::compaction::compactor::{output_schema, CompactStats, Compactor};
use pulsar_entries_core::compaction::distributed::{
    candidate_schema, candidates, rebuild, survivor_schema, SurvivorFolder as CoreFolder,
};
use pulsar_entries_core::compaction::ledger_record::{from_record, message_id, to_record};
use pulsar_entries_core::compaction::messages::{MessageReader, Outcome};
use pulsar_entries_core::compaction::position::{
    entry_summary, last_in_compacted_entry, last_in_topic_entry, Source, MARKER_TXN_ABORT,
};
use pulsar_entries_core::compaction::strategic::{StrategicCompactor, StrategicStats};
use pulsar_entries_core::compaction::strategic_distributed::{
    rebuild as strategic_rebuild_batch, rebuild_schema, row_schema, PartitionPass, StrategicFold,
};
use pulsar_entries_core::compaction::strategy::{
    service_unit_transitions, FirstWins, LatestWins, Strategy, VersionedState,
};
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::decode::MAX_UNCOMPRESSED_SIZE_CAP;
use pulsar_entries_core::entries::EntryRows;
use pulsar_entries_core::{EntryError, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;

use crate::{collect_batches, push_batches, EntryFormatError};

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn options(
    order: &str,
    retain_null_key: bool,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> PyResult<CompactOptions> {
    if max_uncompressed_size > MAX_UNCOMPRESSED_SIZE_CAP {
        return Err(PyValueError::new_err(format!(
            "max_uncompressed_size {max_uncompressed_size} exceeds the supported maximum {MAX_UNCOMPRESSED_SIZE_CAP}"
        )));
    }
    Ok(CompactOptions {
        order: order.parse::<Order>().map_err(value_error)?,
        retain_null_key,
        verify_checksum,
        max_uncompressed_size,
    })
}

fn table<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyArrowResult<Bound<'py, PyAny>> {
    Ok(PyTable::try_new(batches, schema)?.into_pyarrow(py)?)
}

// ---------------------------------------------------------------- strategies

/// A built-in strategy implemented in Rust.
#[pyclass(module = "pulsar_entries._native", frozen)]
#[derive(Clone)]
pub struct NativeStrategy {
    kind: Builtin,
    /// The constructor's arguments, for pickling (Spark ships strategies to executors).
    args: StrategyArgs,
}

/// `(kind, transitions, initial_state, allow_version_gaps, first_version)`.
type StrategyArgs = (
    String,
    Option<HashMap<String, Vec<String>>>,
    String,
    bool,
    Option<i64>,
);

fn builtin_args(kind: &str) -> StrategyArgs {
    (kind.to_owned(), None, "Init".to_owned(), true, None)
}

#[derive(Clone)]
enum Builtin {
    LatestWins,
    FirstWins,
    Versioned(VersionedState),
}

impl NativeStrategy {
    fn instance(&self) -> Box<dyn Strategy + Send + Sync> {
        match &self.kind {
            Builtin::LatestWins => Box::new(LatestWins),
            Builtin::FirstWins => Box::new(FirstWins),
            Builtin::Versioned(v) => Box::new(v.clone()),
        }
    }
}

#[pymethods]
impl NativeStrategy {
    #[staticmethod]
    fn latest_wins() -> Self {
        NativeStrategy {
            kind: Builtin::LatestWins,
            args: builtin_args("latest_wins"),
        }
    }

    #[staticmethod]
    fn first_wins() -> Self {
        NativeStrategy {
            kind: Builtin::FirstWins,
            args: builtin_args("first_wins"),
        }
    }

    /// `transitions` maps a state to the states it may move to; `None` uses
    /// Pulsar's service-unit state transitions.
    #[staticmethod]
    #[pyo3(signature = (transitions=None, initial_state="Init", allow_version_gaps=true, first_version=None))]
    fn versioned_state(
        transitions: Option<HashMap<String, Vec<String>>>,
        initial_state: &str,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> Self {
        let args = (
            "versioned_state".to_owned(),
            transitions.clone(),
            initial_state.to_owned(),
            allow_version_gaps,
            first_version,
        );
        let v = match transitions {
            None => VersionedState::new(
                service_unit_transitions(),
                initial_state.into(),
                allow_version_gaps,
                first_version,
            ),
            Some(t) => VersionedState::new(
                t.into_iter()
                    .map(|(k, v)| (k, v.into_iter().collect::<HashSet<_>>()))
                    .collect(),
                initial_state.into(),
                allow_version_gaps,
                first_version,
            ),
        };
        NativeStrategy {
            kind: Builtin::Versioned(v),
            args,
        }
    }

    /// Rebuilds a strategy from its constructor's arguments (what pickling stores).
    #[new]
    #[pyo3(signature = (kind, transitions=None, initial_state="Init", allow_version_gaps=true, first_version=None))]
    fn new(
        kind: &str,
        transitions: Option<HashMap<String, Vec<String>>>,
        initial_state: &str,
        allow_version_gaps: bool,
        first_version: Option<i64>,
    ) -> PyResult<Self> {
        match kind {
            "latest_wins" => Ok(Self::latest_wins()),
            "first_wins" => Ok(Self::first_wins()),
            "versioned_state" => Ok(Self::versioned_state(
                transitions,
                initial_state,
                allow_version_gaps,
                first_version,
            )),
            other => Err(PyValueError::new_err(format!(
                "unknown built-in strategy {other:?}; expected latest_wins, first_wins or versioned_state"
            ))),
        }
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, StrategyArgs) {
        (slf.get_type(), slf.get().args.clone())
    }

    /// The strategy's decision on raw values (`None` is a tombstone).
    #[pyo3(signature = (prev, cur))]
    fn should_keep_left(&self, prev: Option<&[u8]>, cur: Option<&[u8]>) -> PyResult<bool> {
        self.instance()
            .should_keep_left(prev, cur)
            .map_err(value_error)
    }
}

/// A Python strategy, reached through an adapter object (built in
/// `pulsar_entries.strategies`) whose `keep_left_raw(prev, cur)` and
/// `merge_raw(prev, cur)` take and return raw bytes.
struct PyStrategy {
    adapter: Py<PyAny>,
    merge_enabled: bool,
    /// The Python exception that stopped the run, re-raised as is.
    failure: Arc<Mutex<Option<PyErr>>>,
}

impl PyStrategy {
    fn fail(&self, e: PyErr) -> EntryError {
        let text = e.to_string();
        *self.failure.lock().unwrap() = Some(e);
        EntryError::Strategy(text)
    }
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
            self.adapter
                .bind(py)
                .call_method1("keep_left_raw", (prev, cur))
                .and_then(|r| r.is_truthy())
                .map_err(|e| self.fail(e))
        })
    }

    fn is_merge_enabled(&self) -> bool {
        self.merge_enabled
    }

    fn merge(&mut self, prev: &[u8], cur: &[u8]) -> pulsar_entries_core::Result<Vec<u8>> {
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .call_method1("merge_raw", (PyBytes::new(py, prev), PyBytes::new(py, cur)))
                .and_then(|r| r.extract::<Vec<u8>>())
                .map_err(|e| self.fail(e))
        })
    }
}

/// The native form of what `pulsar_entries.strategies.native_strategy` returns.
fn strategy_instance(
    s: Bound<'_, PyAny>,
    failure: &Arc<Mutex<Option<PyErr>>>,
) -> PyResult<Box<dyn Strategy + Send + Sync>> {
    if let Ok(native) = s.cast::<NativeStrategy>() {
        return Ok(native.get().instance());
    }
    if !s.hasattr("keep_left_raw")? {
        return Err(PyTypeError::new_err(
            "strategy must be built by pulsar_entries.strategies (an adapter with keep_left_raw)",
        ));
    }
    let merge_enabled = s.getattr("merge_enabled")?.is_truthy()?;
    Ok(Box::new(PyStrategy {
        adapter: s.unbind(),
        merge_enabled,
        failure: failure.clone(),
    }))
}

// ---------------------------------------------------------------- compactor

enum Inner {
    Plain(Compactor),
    Strategic(StrategicCompactor<Box<dyn Strategy + Send + Sync>>),
}

/// Two-pass compactor: `observe(entries)` for every batch in topic order,
/// then `write(entries)` for the same batches, in the same order.
#[pyclass(name = "Compactor", module = "pulsar_entries._native")]
pub struct CompactorPy {
    inner: Inner,
    failure: Arc<Mutex<Option<PyErr>>>,
}

fn stats_dict<'py>(py: Python<'py>, s: &CompactStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries_read", s.entries_read)?;
    d.set_item("messages_read", s.messages_read)?;
    d.set_item("markers", s.markers)?;
    d.set_item("tombstones", s.tombstones)?;
    d.set_item("null_key_dropped", s.null_key_dropped)?;
    d.set_item("unreadable_entries", s.unreadable_entries)?;
    d.set_item("keys", s.keys)?;
    d.set_item("entries_written", s.entries_written)?;
    d.set_item("messages_written", s.messages_written)?;
    Ok(d)
}

fn strategic_dict<'py>(py: Python<'py>, s: &StrategicStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries_read", s.entries_read)?;
    d.set_item("messages_read", s.messages_read)?;
    d.set_item("accepted", s.accepted)?;
    d.set_item("rejected", s.rejected)?;
    d.set_item("merged", s.merged)?;
    d.set_item("kept_unchanged", s.kept_unchanged)?;
    d.set_item("entries_written", s.entries_written)?;
    Ok(d)
}

impl CompactorPy {
    fn raise(&self, e: EntryError) -> PyErr {
        match self.failure.lock().unwrap().take() {
            Some(original) => original,
            None => value_error(e),
        }
    }
}

#[pymethods]
impl CompactorPy {
    #[new]
    #[pyo3(signature = (*, order="publish", retain_null_key=false, strategy=None, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
    fn new(
        order: &str,
        retain_null_key: bool,
        strategy: Option<Bound<'_, PyAny>>,
        verify_checksum: bool,
        max_uncompressed_size: usize,
    ) -> PyResult<Self> {
        let opts = options(
            order,
            retain_null_key,
            verify_checksum,
            max_uncompressed_size,
        )?;
        let failure = Arc::new(Mutex::new(None));
        let inner = match strategy {
            None => Inner::Plain(Compactor::new(opts)),
            Some(s) => Inner::Strategic(
                StrategicCompactor::new(opts, strategy_instance(s, &failure)?)
                    .map_err(value_error)?,
            ),
        };
        Ok(CompactorPy { inner, failure })
    }

    /// Phase one over entries (a table, record batch or Arrow stream).
    fn observe(&mut self, py: Python<'_>, entries: AnyRecordBatch) -> PyResult<()> {
        let reader = entries.into_reader()?;
        let inner = &mut self.inner;
        let result = py.detach(move || -> Result<(), EntryError> {
            for batch in reader {
                let batch = batch.map_err(|e| EntryError::Input(e.to_string()))?;
                match inner {
                    Inner::Plain(c) => c.observe(&batch)?,
                    Inner::Strategic(c) => c.observe(&batch)?,
                }
            }
            Ok(())
        });
        result.map_err(|e| self.raise(e))
    }

    /// Phase two over the same entries: the compacted entries as a table.
    fn write<'py>(
        &mut self,
        py: Python<'py>,
        entries: AnyRecordBatch,
    ) -> PyArrowResult<Bound<'py, PyAny>> {
        let reader = entries.into_reader()?;
        let with_partition = reader.schema().column_with_name("partition").is_some();
        let inner = &mut self.inner;
        let result = py.detach(move || -> Result<Vec<RecordBatch>, EntryError> {
            let mut out = Vec::new();
            for batch in reader {
                let batch = batch.map_err(|e| EntryError::Input(e.to_string()))?;
                out.extend(match inner {
                    Inner::Plain(c) => c.write(&batch)?,
                    Inner::Strategic(c) => c.write(&batch)?,
                });
            }
            Ok(out)
        });
        let batches = result.map_err(|e| self.raise(e))?;
        table(py, batches, output_schema(with_partition))
    }

    /// Counts so far (see the README for their meaning).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match &self.inner {
            Inner::Plain(c) => stats_dict(py, &c.stats()),
            Inner::Strategic(c) => strategic_dict(py, &c.stats()),
        }
    }
}

// ---------------------------------------------------------------- Spark blocks

/// Phase-one candidate rows for entries (see `pulsar_entries.spark`).
#[pyfunction]
#[pyo3(signature = (entries, *, retain_null_key=false, reduce_for_publish_order=false, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn compaction_candidates<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    retain_null_key: bool,
    reduce_for_publish_order: bool,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = options(
        "publish",
        retain_null_key,
        verify_checksum,
        max_uncompressed_size,
    )?;
    let batches = collect_batches(entries)?;
    let out = py
        .detach(|| {
            batches
                .iter()
                .map(|b| candidates(b, &opts, reduce_for_publish_order))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(value_error)?;
    table(py, out, candidate_schema())
}

/// Folds candidate rows sorted by `(partition, key, ledger_id, entry_id,
/// batch_index)` into survivor rows, keeping one key's state across batches.
#[pyclass(module = "pulsar_entries._native")]
pub struct SurvivorFolder {
    inner: CoreFolder,
}

#[pymethods]
impl SurvivorFolder {
    #[new]
    #[pyo3(signature = (*, order="publish"))]
    fn new(order: &str) -> PyResult<Self> {
        Ok(SurvivorFolder {
            inner: CoreFolder::new(order.parse::<Order>().map_err(value_error)?),
        })
    }

    fn push<'py>(
        &mut self,
        py: Python<'py>,
        candidates: AnyRecordBatch,
    ) -> PyArrowResult<Bound<'py, PyAny>> {
        let inner = &mut self.inner;
        let out = push_batches(py, candidates, |b| inner.push(b))?.map_err(value_error)?;
        table(py, out, survivor_schema())
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyArrowResult<Bound<'py, PyAny>> {
        let out = self.inner.finish();
        table(py, vec![out], survivor_schema())
    }
}

/// Phase two for entries with a `retained` list column.
#[pyfunction]
#[pyo3(signature = (entries, *, retain_null_key=false, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn rebuild_entries<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    retain_null_key: bool,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = options(
        "publish",
        retain_null_key,
        verify_checksum,
        max_uncompressed_size,
    )?;
    let batches = collect_batches(entries)?;
    let with_partition = batches
        .first()
        .is_some_and(|b| b.schema().column_with_name("partition").is_some());
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, EntryError> {
            let mut out = Vec::new();
            for b in &batches {
                out.extend(rebuild(b, &opts)?);
            }
            Ok(out)
        })
        .map_err(value_error)?;
    table(py, out, output_schema(with_partition))
}

// ---------------------------------------------------------------- strategic Spark blocks

/// Phase one of strategic compaction over one Spark partition's entries, in
/// topic order: message, plan and leftover-chunk rows (see
/// `pulsar_entries.spark_strategic`).
#[pyclass(module = "pulsar_entries._native")]
pub struct StrategicPartitionPass {
    inner: PartitionPass,
}

#[pymethods]
impl StrategicPartitionPass {
    #[new]
    #[pyo3(signature = (*, order="publish", retain_null_key=false, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
    fn new(
        order: &str,
        retain_null_key: bool,
        verify_checksum: bool,
        max_uncompressed_size: usize,
    ) -> PyResult<Self> {
        let opts = options(
            order,
            retain_null_key,
            verify_checksum,
            max_uncompressed_size,
        )?;
        Ok(StrategicPartitionPass {
            inner: PartitionPass::new(opts).map_err(value_error)?,
        })
    }

    fn push<'py>(
        &mut self,
        py: Python<'py>,
        entries: AnyRecordBatch,
    ) -> PyArrowResult<Bound<'py, PyAny>> {
        let inner = &mut self.inner;
        let out = push_batches(py, entries, |b| inner.push(b))?.map_err(value_error)?;
        table(py, out, row_schema())
    }

    /// The chunks of messages still assembling at the partition's end.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyArrowResult<Bound<'py, PyAny>> {
        let out = self.inner.finish();
        table(py, vec![out], row_schema())
    }
}

/// Folds strategic rows sorted by `(partition, key, ledger_id, entry_id,
/// batch_index, kind)` with a strategy into plan rows, one key at a time.
#[pyclass(module = "pulsar_entries._native")]
pub struct StrategicFolder {
    inner: StrategicFold<Box<dyn Strategy + Send + Sync>>,
    failure: Arc<Mutex<Option<PyErr>>>,
}

impl StrategicFolder {
    fn raise(&self, e: EntryError) -> PyErr {
        match self.failure.lock().unwrap().take() {
            Some(original) => original,
            None => value_error(e),
        }
    }
}

#[pymethods]
impl StrategicFolder {
    #[new]
    #[pyo3(signature = (strategy, *, order="publish", retain_null_key=false, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
    fn new(
        strategy: Bound<'_, PyAny>,
        order: &str,
        retain_null_key: bool,
        verify_checksum: bool,
        max_uncompressed_size: usize,
    ) -> PyResult<Self> {
        let opts = options(
            order,
            retain_null_key,
            verify_checksum,
            max_uncompressed_size,
        )?;
        let failure = Arc::new(Mutex::new(None));
        let instance = strategy_instance(strategy, &failure)?;
        Ok(StrategicFolder {
            inner: StrategicFold::new(opts, instance).map_err(value_error)?,
            failure,
        })
    }

    fn push<'py>(
        &mut self,
        py: Python<'py>,
        rows: AnyRecordBatch,
    ) -> PyArrowResult<Bound<'py, PyAny>> {
        let inner = &mut self.inner;
        let out = push_batches(py, rows, |b| inner.push(b))?;
        let out = out.map_err(|e| self.raise(e))?;
        table(py, out, row_schema())
    }

    /// Plans of the last key.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyArrowResult<Bound<'py, PyAny>> {
        let out = self.inner.finish();
        table(py, vec![out], row_schema())
    }
}

/// Phase two of strategic compaction: entries with a `note` and a `slots`
/// list column → compacted entries (with `partition`).
#[pyfunction]
#[pyo3(signature = (entries, *, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn strategic_rebuild<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = options("publish", false, verify_checksum, max_uncompressed_size)?;
    let batches = collect_batches(entries)?;
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, EntryError> {
            let mut out = Vec::new();
            for b in &batches {
                out.extend(strategic_rebuild_batch(b, &opts)?);
            }
            Ok(out)
        })
        .map_err(value_error)?;
    table(py, out, rebuild_schema())
}

// ---------------------------------------------------------------- ledger records

fn records_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("record", DataType::Binary, true),
    ]))
}

fn parsed_records_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("partition", DataType::Int32, false),
        Field::new("data", DataType::Binary, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

/// Entries → compacted-ledger records `[u32 idLen][MessageIdData][u32 len][entry]`.
#[pyfunction]
pub fn to_ledger_records<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let batches = collect_batches(entries)?;
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, EntryError> {
            let mut out = Vec::new();
            for b in &batches {
                let rows = EntryRows::new(b)?;
                let (mut ledger, mut entry, mut record) = (
                    Int64Builder::new(),
                    Int64Builder::new(),
                    BinaryBuilder::new(),
                );
                for i in 0..rows.len() {
                    if rows.id_is_null(i) {
                        return Err(EntryError::Input(format!(
                            "entry row {i} has a null ledger_id or entry_id"
                        )));
                    }
                    let id = rows.id(i);
                    ledger.append_value(id.ledger_id);
                    entry.append_value(id.entry_id);
                    let partition = rows.has_partition().then_some(id.partition);
                    match rows.data(i) {
                        Some(data) => record.append_value(to_record(
                            &message_id(id.ledger_id, id.entry_id, partition),
                            data,
                        )?),
                        None => record.append_null(),
                    }
                }
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(ledger.finish()),
                    Arc::new(entry.finish()),
                    Arc::new(record.finish()),
                ];
                out.push(RecordBatch::try_new(records_schema(), columns).expect("schema"));
            }
            Ok(out)
        })
        .map_err(value_error)?;
    table(py, out, records_schema())
}

/// Compacted-ledger records (a `record` column) → entries with their ids.
/// A bad record gives a row with `error` set; the others are unaffected.
#[pyfunction]
pub fn from_ledger_records<'py>(
    py: Python<'py>,
    records: AnyRecordBatch,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let batches = collect_batches(records)?;
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, EntryError> {
            let mut out = Vec::new();
            for b in &batches {
                let col = b
                    .column_by_name("record")
                    .ok_or_else(|| EntryError::Input("input has no `record` column".into()))?;
                let col = match col.data_type() {
                    DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
                        arrow_cast::cast(col, &DataType::Binary)
                            .map_err(|e| EntryError::Input(format!("`record`: {e}")))?
                    }
                    other => {
                        return Err(EntryError::Input(format!(
                            "`record` must be binary, not {other}"
                        )))
                    }
                };
                let col = col.as_any().downcast_ref::<BinaryArray>().unwrap();
                let get = |i: usize| (!col.is_null(i)).then(|| col.value(i));
                let mut ledger = Int64Builder::new();
                let mut entry = Int64Builder::new();
                let mut partition = Int32Builder::new();
                let mut data = BinaryBuilder::new();
                let mut error = StringBuilder::new();
                for i in 0..b.num_rows() {
                    let parsed = match get(i) {
                        None => Err(EntryError::Input("record is null".into())),
                        Some(r) => from_record(r),
                    };
                    match parsed {
                        Ok((id, bytes)) => {
                            ledger.append_value(id.ledger_id as i64);
                            entry.append_value(id.entry_id as i64);
                            partition.append_value(id.partition.unwrap_or(-1));
                            data.append_value(bytes);
                            error.append_null();
                        }
                        Err(e) => {
                            ledger.append_null();
                            entry.append_null();
                            partition.append_value(-1);
                            data.append_option(get(i));
                            error.append_value(e.to_string());
                        }
                    }
                }
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(ledger.finish()),
                    Arc::new(entry.finish()),
                    Arc::new(partition.finish()),
                    Arc::new(data.finish()),
                    Arc::new(error.finish()),
                ];
                out.push(RecordBatch::try_new(parsed_records_schema(), columns).expect("schema"));
            }
            Ok(out)
        })
        .map_err(value_error)?;
    table(py, out, parsed_records_schema())
}

// ---------------------------------------------------------------- positions

/// Every row of entry batches, for lookups by row.
struct Rows<'a> {
    rows: Vec<EntryRows<'a>>,
}

impl<'a> Rows<'a> {
    fn new(batches: &'a [RecordBatch]) -> Result<Self, EntryError> {
        Ok(Rows {
            rows: batches
                .iter()
                .map(EntryRows::new)
                .collect::<Result<_, _>>()?,
        })
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = (&EntryRows<'a>, usize)> + '_ {
        self.rows
            .iter()
            .flat_map(|r| (0..r.len()).map(move |i| (r, i)))
    }

    /// The row with the greatest `(ledger_id, entry_id)`.
    fn max_position(&self) -> Option<(&EntryRows<'a>, usize)> {
        self.iter()
            .filter(|(r, i)| !r.id_is_null(*i))
            .max_by_key(|(r, i)| {
                let id = r.id(*i);
                (id.ledger_id, id.entry_id)
            })
    }
}

/// `(ledger_id, entry_id, batch_index, publish_time, source)`.
type LastPosition = (i64, i64, i32, u64, &'static str);

fn entry_error(e: EntryError) -> PyErr {
    EntryFormatError::new_err(e.to_string())
}

/// The last message of a compacted ledger's entries (PIP-429 rules):
/// `(ledger_id, entry_id, batch_index, publish_time, source)`, or `None`
/// when there is no entry. Only the metadata of the last entry is read,
/// except when its batch has to be scanned.
#[pyfunction]
#[pyo3(signature = (entries, *, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn compacted_last_position(
    py: Python<'_>,
    entries: AnyRecordBatch,
    max_uncompressed_size: usize,
) -> PyResult<Option<LastPosition>> {
    let batches = collect_batches(entries)?;
    py.detach(|| -> Result<_, EntryError> {
        let rows = Rows::new(&batches)?;
        let Some((r, i)) = rows.max_position() else {
            return Ok(None);
        };
        let id = r.id(i);
        let data = r.data(i).ok_or_else(|| {
            EntryError::Input(format!(
                "the last compacted entry {}:{} has no data",
                id.ledger_id, id.entry_id
            ))
        })?;
        let (p, source) =
            last_in_compacted_entry(id.ledger_id, id.entry_id, data, max_uncompressed_size)?;
        let source = source_name(source);
        Ok(Some((
            p.ledger_id,
            p.entry_id,
            p.batch_index,
            p.publish_time,
            source,
        )))
    })
    .map_err(entry_error)
}

/// The PIP-429 last batch index of each compacted entry, vectorized:
/// `(last_batch_index int32, source string, error string)` per entry of a
/// binary (or large_binary) array. A null entry, or one whose index cannot be
/// found (bad framing, every slot compacted out), gives a null index and an
/// `error`; the other rows are unaffected.
#[pyfunction]
#[pyo3(signature = (data, *, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn last_batch_indexes<'py>(
    py: Python<'py>,
    data: pyo3_arrow::PyArray,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    use arrow_array::builder::{Int32Builder, StringBuilder};
    use arrow_array::cast::AsArray;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn build<'a>(
        entries: impl Iterator<Item = Option<&'a [u8]>>,
        max: usize,
    ) -> (Int32Builder, StringBuilder, StringBuilder) {
        let (mut index, mut source, mut error) = (
            Int32Builder::new(),
            StringBuilder::new(),
            StringBuilder::new(),
        );
        for data in entries {
            match data.map(|d| last_in_compacted_entry(0, 0, d, max)) {
                Some(Ok((p, s))) => {
                    index.append_value(p.batch_index);
                    source.append_value(source_name(s));
                    error.append_null();
                }
                Some(Err(e)) => {
                    index.append_null();
                    source.append_null();
                    error.append_value(e.to_string());
                }
                None => {
                    index.append_null();
                    source.append_null();
                    error.append_value("no entry data (null)");
                }
            }
        }
        (index, source, error)
    }
    let array = data.array().clone();
    let max = max_uncompressed_size;
    let built = py.detach(|| match array.data_type() {
        DataType::Binary => Ok(build(array.as_binary::<i32>().iter(), max)),
        DataType::LargeBinary => Ok(build(array.as_binary::<i64>().iter(), max)),
        DataType::BinaryView => Ok(build(array.as_binary_view().iter(), max)),
        other => Err(format!(
            "entry data must be binary or large_binary, not {other}"
        )),
    });
    let (mut index, mut source, mut error) = built.map_err(PyValueError::new_err)?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("last_batch_index", DataType::Int32, true),
        Field::new("source", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(index.finish()),
            Arc::new(source.finish()),
            Arc::new(error.finish()),
        ],
    )
    .map_err(value_error)?;
    table(py, vec![batch], schema)
}

fn source_name(s: Source) -> &'static str {
    match s {
        Source::NotBatched => "not-batched",
        Source::CompactedBatchIndexes => "compacted-batch-indexes",
        Source::Encrypted => "encrypted",
        Source::Scan => "scan",
    }
}

/// The managed-ledger answer of GetLastMessageId for a topic's entries:
/// `(ledger_id, entry_id, batch_index, publish_time)` of the last
/// dispatchable entry — not a marker, and not part of a transaction aborted
/// by a `TXN_ABORT` marker among the entries — or `None`. Entries whose
/// metadata cannot be read count as dispatchable (with publish time 0).
#[pyfunction]
pub fn topic_last_position(
    py: Python<'_>,
    entries: AnyRecordBatch,
) -> PyResult<Option<(i64, i64, i32, u64)>> {
    let batches = collect_batches(entries)?;
    py.detach(|| -> Result<_, EntryError> {
        let rows = Rows::new(&batches)?;
        let mut aborted = HashSet::new();
        for (r, i) in rows.iter() {
            if let Some(s) = r.data(i).and_then(|d| entry_summary(d).ok()) {
                if let (Some(MARKER_TXN_ABORT), Some(t)) = (s.marker_type, s.txn) {
                    aborted.insert(t);
                }
            }
        }
        for (r, i) in rows.iter().rev() {
            if r.id_is_null(i) {
                continue;
            }
            let id = r.id(i);
            let data = r.data(i).unwrap_or_default();
            match entry_summary(data) {
                Ok(s) if s.marker_type.is_some() => continue,
                Ok(s) if s.txn.is_some_and(|t| aborted.contains(&t)) => continue,
                Ok(_) => {
                    let p = last_in_topic_entry(id.ledger_id, id.entry_id, data)?;
                    return Ok(Some((
                        p.ledger_id,
                        p.entry_id,
                        p.batch_index,
                        p.publish_time,
                    )));
                }
                Err(_) => return Ok(Some((id.ledger_id, id.entry_id, -1, 0))),
            }
        }
        Ok(None)
    })
    .map_err(entry_error)
}

/// The greatest `(ledger_id, entry_id)` among entries, or `None`.
#[pyfunction]
pub fn max_entry_position(py: Python<'_>, entries: AnyRecordBatch) -> PyResult<Option<(i64, i64)>> {
    let batches = collect_batches(entries)?;
    py.detach(|| -> Result<_, EntryError> {
        let rows = Rows::new(&batches)?;
        Ok(rows.max_position().map(|(r, i)| {
            let id = r.id(i);
            (id.ledger_id, id.entry_id)
        }))
    })
    .map_err(entry_error)
}

/// `findEntryByPublishTime`: binary search over the entries in table order
/// (the compacted ledger's order) for the lowest one whose batch-level
/// `publish_time` ≥ `publish_time`. Assumes publish times grow along the
/// ledger, as the broker does. Returns `(ledger_id, entry_id)` or `None`.
#[pyfunction]
pub fn find_by_publish_time(
    py: Python<'_>,
    entries: AnyRecordBatch,
    publish_time: u64,
) -> PyResult<Option<(i64, i64)>> {
    let batches = collect_batches(entries)?;
    py.detach(|| -> Result<_, EntryError> {
        let rows = Rows::new(&batches)?;
        let all: Vec<_> = rows.iter().collect();
        let (mut lo, mut hi) = (0i64, all.len() as i64 - 1);
        let mut found = None;
        while lo <= hi {
            let mid = lo + (hi - lo) / 2;
            let (r, i) = all[mid as usize];
            let data = r.data(i).ok_or_else(|| {
                EntryError::Input(format!("compacted entry at row {mid} has no data"))
            })?;
            if entry_summary(data)?.publish_time >= publish_time {
                found = Some(mid as usize);
                hi = mid - 1;
            } else {
                lo = mid + 1;
            }
        }
        Ok(found.map(|m| {
            let (r, i) = all[m];
            let id = r.id(i);
            (id.ledger_id, id.entry_id)
        }))
    })
    .map_err(entry_error)
}

// ---------------------------------------------------------------- messages

fn keyed_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
        Field::new("publish_time", DataType::Int64, true),
        Field::new("event_time", DataType::Int64, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

/// Keyed messages with values in topic order, chunked messages reassembled,
/// for TableView. Key-less messages are left out; unreadable and encrypted
/// entries give one row with `error` set.
#[pyfunction]
#[pyo3(signature = (entries, *, verify_checksum=true, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
pub fn keyed_messages<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = options("publish", false, verify_checksum, max_uncompressed_size)?;
    let batches = collect_batches(entries)?;
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, EntryError> {
            let mut reader = MessageReader::new(opts);
            let mut out = Vec::new();
            for b in &batches {
                let rows = EntryRows::new(b)?;
                let mut partition = Int32Builder::new();
                let mut ledger = Int64Builder::new();
                let mut entry = Int64Builder::new();
                let mut index = Int32Builder::new();
                let mut key = StringBuilder::new();
                let mut value = BinaryBuilder::new();
                let mut publish = Int64Builder::new();
                let mut event = Int64Builder::new();
                let mut error = StringBuilder::new();
                // (ledger, entry, batch_index, key, value, publish_time, event_time, error)
                type Row = (
                    i64,
                    i64,
                    i32,
                    Option<String>,
                    Option<Vec<u8>>,
                    Option<u64>,
                    Option<u64>,
                    Option<String>,
                );
                let mut found: Vec<(i32, Row)> = Vec::new();
                for i in 0..rows.len() {
                    let id = rows.id(i);
                    let ek = (id.partition, id.ledger_id, id.entry_id);
                    let failed = |e: String| {
                        (
                            id.partition,
                            (
                                id.ledger_id,
                                id.entry_id,
                                -1,
                                None,
                                None,
                                None,
                                None,
                                Some(e),
                            ),
                        )
                    };
                    let Some(data) = rows.data(i) else {
                        found.push(failed("entry data is null".into()));
                        continue;
                    };
                    let outcome = reader.read_entry(ek, data, &mut |m| {
                        if let Some(k) = m.key {
                            // A chunked message is reported at its last chunk.
                            found.push((
                                id.partition,
                                (
                                    m.position.ledger_id,
                                    m.position.entry_id,
                                    m.position.batch_index,
                                    Some(k.to_owned()),
                                    m.value.map(<[u8]>::to_vec),
                                    Some(m.publish_time),
                                    m.event_time,
                                    m.error.map(str::to_owned),
                                ),
                            ));
                        }
                        Ok(())
                    })?;
                    match outcome {
                        Outcome::Read | Outcome::Marker => {}
                        Outcome::Encrypted => {
                            found.push(failed("encrypted entry: its values cannot be read".into()))
                        }
                        Outcome::Unreadable(e) => found.push(failed(e.to_string())),
                    }
                }
                for (p, (l, e, bi, k, v, pt, et, err)) in found {
                    partition.append_value(p);
                    ledger.append_value(l);
                    entry.append_value(e);
                    index.append_value(bi);
                    key.append_option(k);
                    value.append_option(v);
                    publish.append_option(pt.map(|t| t as i64));
                    event.append_option(et.map(|t| t as i64));
                    error.append_option(err);
                }
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(partition.finish()),
                    Arc::new(ledger.finish()),
                    Arc::new(entry.finish()),
                    Arc::new(index.finish()),
                    Arc::new(key.finish()),
                    Arc::new(value.finish()),
                    Arc::new(publish.finish()),
                    Arc::new(event.finish()),
                    Arc::new(error.finish()),
                ];
                out.push(RecordBatch::try_new(keyed_schema(), columns).expect("schema"));
            }
            Ok(out)
        })
        .map_err(value_error)?;
    table(py, out, keyed_schema())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CompactorPy>()?;
    m.add_class::<NativeStrategy>()?;
    m.add_class::<SurvivorFolder>()?;
    m.add_class::<StrategicPartitionPass>()?;
    m.add_class::<StrategicFolder>()?;
    m.add_function(wrap_pyfunction!(strategic_rebuild, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(rebuild_entries, m)?)?;
    m.add_function(wrap_pyfunction!(to_ledger_records, m)?)?;
    m.add_function(wrap_pyfunction!(from_ledger_records, m)?)?;
    m.add_function(wrap_pyfunction!(compacted_last_position, m)?)?;
    m.add_function(wrap_pyfunction!(last_batch_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(topic_last_position, m)?)?;
    m.add_function(wrap_pyfunction!(max_entry_position, m)?)?;
    m.add_function(wrap_pyfunction!(find_by_publish_time, m)?)?;
    m.add_function(wrap_pyfunction!(keyed_messages, m)?)?;
    Ok(())
}
