//! Bindings for reading a live cluster: the metadata-store node formats and
//! the read-only BookKeeper client. Registration and conversion only.

use std::collections::HashMap;

use pulsar_entries_core::bookkeeper::{
    entries_batch, files, BookieClient, ClientOptions, LedgerMetadata, ReadEntry,
};
use pulsar_entries_core::metadata_store::{self as ms, TopicName};
use pulsar_entries_core::value::cluster::{
    ledger_metadata_value, managed_ledger_value, topic_paths_value,
};
use pulsar_entries_core::ErrorKind;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::PyRecordBatch;

use crate::convert::dict_to_py;
use crate::errors::Class;

/// Through the one mapping of core error kinds to Python classes.
fn to_py(kind: ErrorKind, msg: String) -> PyErr {
    crate::errors::class_of(kind, Class::Data).err(msg).into()
}

fn meta_err(e: ms::MetadataError) -> PyErr {
    to_py(e.kind(), e.to_string())
}

fn bk_err(e: pulsar_entries_core::bookkeeper::BookKeeperError) -> PyErr {
    to_py(e.kind(), e.to_string())
}

/// The store paths of a topic name.
#[pyfunction]
fn topic_paths<'py>(py: Python<'py>, topic: &str) -> PyResult<Bound<'py, PyDict>> {
    let t = TopicName::parse(topic).map_err(meta_err)?;
    dict_to_py(py, &topic_paths_value(&t))
}

/// The topic name of partition `index` of `topic`.
#[pyfunction]
fn partition_name(topic: &str, index: i32) -> PyResult<String> {
    Ok(TopicName::parse(topic)
        .map_err(meta_err)?
        .with_partition(index)
        .full())
}

/// A RocksDB metadata-store value without its `MetaValue` header.
#[pyfunction]
fn strip_rocksdb_header<'py>(py: Python<'py>, value: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(
        py,
        ms::strip_rocksdb_header(value).map_err(meta_err)?,
    ))
}

/// A topic's `ManagedLedgerInfo` node as a dict with its ledgers in order.
#[pyfunction]
fn managed_ledger_info<'py>(py: Python<'py>, node: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let ml = ms::managed_ledger_info(node).map_err(meta_err)?;
    dict_to_py(py, &managed_ledger_value(&ml))
}

/// The compacted ledger and the compaction horizon named by the
/// `__compaction` cursor node, or by the last entry of its cursor ledger when
/// given; also the cursor ledger id (≥ 0: that ledger's last entry is
/// authoritative).
#[pyfunction]
#[pyo3(signature = (cursor_node, last_position_entry=None))]
#[allow(clippy::type_complexity)]
fn compacted_ledger(
    cursor_node: &[u8],
    last_position_entry: Option<&[u8]>,
) -> PyResult<(Option<i64>, Option<(i64, i64)>, i64)> {
    let c = ms::cursor_info(cursor_node).map_err(meta_err)?;
    let state = ms::compacted_ledger(&c, last_position_entry).map_err(meta_err)?;
    Ok((state.ledger_id, state.horizon, c.cursors_ledger_id))
}

/// The partition count in a partitioned-topic metadata node.
#[pyfunction]
fn partition_count(node: &[u8]) -> PyResult<i32> {
    ms::partition_count(node).map_err(meta_err)
}

/// A bookie's `host:port` from its registration node.
#[pyfunction]
fn bookie_address(bookie_id: &str, node: &[u8]) -> PyResult<String> {
    ms::bookie_address(bookie_id, node).map_err(meta_err)
}

/// A ledger node (`/ledgers/...`) as a dict. The password is left out.
#[pyfunction]
fn ledger_metadata<'py>(
    py: Python<'py>,
    ledger_id: i64,
    node: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let m = LedgerMetadata::parse(ledger_id, node).map_err(bk_err)?;
    dict_to_py(py, &ledger_metadata_value(&m))
}

/// The ledger node (format v3) equivalent to BookKeeper's text form of a
/// ledger's metadata, as the admin REST API's `internal-stats?metadata=true`
/// gives it. That text omits the password: `password` stands in for it.
#[pyfunction]
#[pyo3(signature = (ledger_id, text, password=b"".as_slice()))]
fn ledger_node_from_text<'py>(
    py: Python<'py>,
    ledger_id: i64,
    text: &str,
    password: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let m = LedgerMetadata::from_safe_string(ledger_id, text, password).map_err(bk_err)?;
    Ok(PyBytes::new(py, &m.to_node()))
}

/// The ledger-node path of a ledger id.
#[pyfunction]
#[pyo3(signature = (ledger_id, root="/ledgers"))]
fn ledger_path(ledger_id: i64, root: &str) -> String {
    pulsar_entries_core::bookkeeper::ledger_path(root, ledger_id)
}

/// Reads ledgers from bookies, read only; connections are kept for reuse.
#[pyclass(module = "pulsar_entries._native")]
struct BookieReader {
    client: std::sync::Mutex<BookieClient>,
}

#[pymethods]
impl BookieReader {
    #[new]
    #[pyo3(signature = (bookies=None, *, timeout_ms=30_000, connect_timeout_ms=5_000, pipeline_depth=64, max_frame_bytes=5_308_416))]
    fn new(
        bookies: Option<HashMap<String, String>>,
        timeout_ms: u64,
        connect_timeout_ms: u64,
        pipeline_depth: usize,
        max_frame_bytes: usize,
    ) -> PyResult<Self> {
        let opts = ClientOptions::checked(
            timeout_ms,
            connect_timeout_ms,
            pipeline_depth,
            max_frame_bytes,
        )
        .map_err(bk_err)?;
        let map = bookies.unwrap_or_default();
        let resolver =
            Box::new(move |id: &str| Ok(map.get(id).cloned().unwrap_or_else(|| id.to_string())));
        Ok(Self {
            client: std::sync::Mutex::new(BookieClient::with_resolver(opts, resolver)),
        })
    }

    /// The readable bound of a ledger: its last entry if CLOSED, its
    /// last-add-confirmed if OPEN.
    fn last_readable(&self, py: Python<'_>, ledger_id: i64, metadata: &[u8]) -> PyResult<i64> {
        let m = LedgerMetadata::parse(ledger_id, metadata).map_err(bk_err)?;
        py.detach(|| self.client.lock().expect("reader lock").last_readable(&m))
            .map_err(bk_err)
    }

    /// Entries `first..=last` of a ledger (bounded by what is readable) as
    /// an entry table `ledger_id, entry_id, data, error`.
    #[pyo3(signature = (ledger_id, metadata, first=0, last=None))]
    fn read_ledger(
        &self,
        py: Python<'_>,
        ledger_id: i64,
        metadata: &[u8],
        first: i64,
        last: Option<i64>,
    ) -> PyResult<Py<PyAny>> {
        let m = LedgerMetadata::parse(ledger_id, metadata).map_err(bk_err)?;
        let rows = py
            .detach(|| {
                self.client
                    .lock()
                    .expect("reader lock")
                    .read_ledger(&m, first, last)
            })
            .map_err(bk_err)?;
        Ok(PyRecordBatch::new(entries_batch(&rows))
            .into_pyarrow(py)?
            .unbind())
    }
}

fn bookie_rows(read: files::BookieRead) -> Vec<ReadEntry> {
    read.errors
        .into_iter()
        .map(|e| ReadEntry {
            ledger_id: -1,
            entry_id: -1,
            data: Err(e),
        })
        .chain(read.rows)
        .collect()
}

/// Reads ledgers from a bookie's entry-log files (offline): `logs` are the
/// `*.log` paths, `ledgers` the `(ledger_id, ledger node)` pairs to read. One
/// row per entry of each ledger, an error row per damaged place in a file.
#[pyfunction]
fn read_bookie_files(
    py: Python<'_>,
    logs: Vec<String>,
    ledgers: Vec<(i64, Vec<u8>)>,
) -> PyResult<Py<PyAny>> {
    let metas = ledgers
        .iter()
        .map(|(id, node)| LedgerMetadata::parse(*id, node).map_err(bk_err))
        .collect::<PyResult<Vec<_>>>()?;
    let dir = files::LedgerDirFiles {
        dir: String::new(),
        logs,
        index: None,
    };
    let rows = py.detach(|| bookie_rows(files::read_bookie(&[dir], &[], &metas)));
    Ok(PyRecordBatch::new(entries_batch(&rows))
        .into_pyarrow(py)?
        .unbind())
}

/// One ledger directory as Python passes it: the directory, its entry logs,
/// and its `locations` index rows `(ledger, entry, location)` when read.
type PyLedgerDir = (String, Vec<String>, Option<Vec<(i64, i64, u64)>>);

/// Reads ledgers from a bookie's directories (offline). `dirs` holds one
/// `(directory, entry-log paths, locations-index rows or None)` per ledger
/// directory, the rows `(ledger, entry, location)`; `journals` the `*.txn`
/// paths. Returns the rows (error rows first, ledger id -1, each naming a
/// file and offset), the ledgers scanned for in the entry logs, and the
/// ledgers read from the journals.
#[pyfunction]
#[pyo3(signature = (dirs, ledgers, journals=Vec::new()))]
fn read_bookie_dirs(
    py: Python<'_>,
    dirs: Vec<PyLedgerDir>,
    ledgers: Vec<(i64, Vec<u8>)>,
    journals: Vec<String>,
) -> PyResult<(Py<PyAny>, Vec<i64>, Vec<i64>)> {
    let metas = ledgers
        .iter()
        .map(|(id, node)| LedgerMetadata::parse(*id, node).map_err(bk_err))
        .collect::<PyResult<Vec<_>>>()?;
    let dirs: Vec<_> = dirs
        .into_iter()
        .map(|(dir, logs, index)| files::LedgerDirFiles { dir, logs, index })
        .collect();
    let (rows, scanned, journaled) = py.detach(|| {
        let read = files::read_bookie(&dirs, &journals, &metas);
        let (scanned, journaled) = (read.scanned.clone(), read.journaled.clone());
        (bookie_rows(read), scanned, journaled)
    });
    let batch = PyRecordBatch::new(entries_batch(&rows))
        .into_pyarrow(py)?
        .unbind();
    Ok((batch, scanned, journaled))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_bookie_files, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_node_from_text, m)?)?;
    m.add_function(wrap_pyfunction!(read_bookie_dirs, m)?)?;
    m.add_class::<BookieReader>()?;
    m.add_function(wrap_pyfunction!(topic_paths, m)?)?;
    m.add_function(wrap_pyfunction!(partition_name, m)?)?;
    m.add_function(wrap_pyfunction!(strip_rocksdb_header, m)?)?;
    m.add_function(wrap_pyfunction!(managed_ledger_info, m)?)?;
    m.add_function(wrap_pyfunction!(compacted_ledger, m)?)?;
    m.add_function(wrap_pyfunction!(partition_count, m)?)?;
    m.add_function(wrap_pyfunction!(bookie_address, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_path, m)?)?;
    Ok(())
}
