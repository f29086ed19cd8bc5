//! Bindings for reading a live cluster: the metadata-store node formats and
//! the read-only BookKeeper client. Registration and conversion only.

use std::collections::HashMap;
use std::mem::take;
use std::sync::Mutex;

use pulsar_entries_core::bookkeeper::files::{read_bookie, LedgerDirFiles};
use pulsar_entries_core::bookkeeper::{entries_batch, BookieClient, ClientOptions, LedgerMetadata};
use pulsar_entries_core::metadata_store::{self as ms, TopicName};
use pulsar_entries_core::value::cluster::{
    ledger_metadata_value, managed_ledger_value, topic_paths_value,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::PyRecordBatch;

use crate::convert::dict_to_py;
use crate::errors::Result;

/// The store paths of a topic name.
#[pyfunction]
pub fn topic_paths<'py>(py: Python<'py>, topic: &str) -> Result<Bound<'py, PyDict>> {
    Ok(dict_to_py(
        py,
        &topic_paths_value(&TopicName::parse(topic)?),
    )?)
}

/// The topic name of partition `index` of `topic`.
#[pyfunction]
pub fn partition_name(topic: &str, index: i32) -> Result<String> {
    Ok(TopicName::parse(topic)?.with_partition(index).full())
}

/// A RocksDB metadata-store value without its `MetaValue` header.
#[pyfunction]
pub fn strip_rocksdb_header<'py>(py: Python<'py>, value: &[u8]) -> Result<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, ms::strip_rocksdb_header(value)?))
}

/// A topic's `ManagedLedgerInfo` node as a dict with its ledgers in order.
#[pyfunction]
pub fn managed_ledger_info<'py>(py: Python<'py>, node: &[u8]) -> Result<Bound<'py, PyDict>> {
    let ml = ms::managed_ledger_info(node)?;
    Ok(dict_to_py(py, &managed_ledger_value(&ml))?)
}

/// The compacted ledger and the compaction horizon named by the
/// `__compaction` cursor node, or by the last entry of its cursor ledger when
/// given; also the cursor ledger id (≥ 0: that ledger's last entry is
/// authoritative).
#[pyfunction]
#[pyo3(signature = (cursor_node, last_position_entry=None))]
#[allow(clippy::type_complexity)]
pub fn compacted_ledger(
    cursor_node: &[u8],
    last_position_entry: Option<&[u8]>,
) -> Result<(Option<i64>, Option<(i64, i64)>, i64)> {
    let c = ms::cursor_info(cursor_node)?;
    let state = ms::compacted_ledger(&c, last_position_entry)?;
    Ok((state.ledger_id, state.horizon, c.cursors_ledger_id))
}

/// The partition count in a partitioned-topic metadata node.
#[pyfunction]
pub fn partition_count(node: &[u8]) -> Result<i32> {
    Ok(ms::partition_count(node)?)
}

/// A bookie's `host:port` from its registration node.
#[pyfunction]
pub fn bookie_address(bookie_id: &str, node: &[u8]) -> Result<String> {
    Ok(ms::bookie_address(bookie_id, node)?)
}

/// A ledger node (`/ledgers/...`) as a dict. The password is left out.
#[pyfunction]
pub fn ledger_metadata<'py>(
    py: Python<'py>,
    ledger_id: i64,
    node: &[u8],
) -> Result<Bound<'py, PyDict>> {
    let m = LedgerMetadata::parse(ledger_id, node)?;
    Ok(dict_to_py(py, &ledger_metadata_value(&m))?)
}

/// The ledger node (format v3) equivalent to BookKeeper's text form of a
/// ledger's metadata, as the admin REST API's `internal-stats?metadata=true`
/// gives it. That text omits the password: `password` stands in for it.
#[pyfunction]
#[pyo3(signature = (ledger_id, text, password=b"".as_slice()))]
pub fn ledger_node_from_text<'py>(
    py: Python<'py>,
    ledger_id: i64,
    text: &str,
    password: &[u8],
) -> Result<Bound<'py, PyBytes>> {
    let m = LedgerMetadata::from_safe_string(ledger_id, text, password)?;
    Ok(PyBytes::new(py, &m.to_node()))
}

/// The ledger-node path of a ledger id.
#[pyfunction]
#[pyo3(signature = (ledger_id, root="/ledgers"))]
pub fn ledger_path(ledger_id: i64, root: &str) -> String {
    pulsar_entries_core::bookkeeper::ledger_path(root, ledger_id)
}

/// Reads ledgers from bookies, read only; connections are kept for reuse.
#[pyclass(module = "pulsar_entries._native")]
pub struct BookieReader {
    client: Mutex<BookieClient>,
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
    ) -> Result<Self> {
        let (timeout, connect) = (timeout_ms, connect_timeout_ms);
        let opts = ClientOptions::checked(timeout, connect, pipeline_depth, max_frame_bytes)?;
        let map = bookies.unwrap_or_default();
        let resolver =
            Box::new(move |id: &str| Ok(map.get(id).cloned().unwrap_or_else(|| id.to_string())));
        let client = Mutex::new(BookieClient::with_resolver(opts, resolver));
        Ok(Self { client })
    }

    /// The readable bound of a ledger: its last entry if CLOSED, its
    /// last-add-confirmed if OPEN.
    fn last_readable(&self, py: Python<'_>, ledger_id: i64, metadata: &[u8]) -> Result<i64> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        Ok(py.detach(|| self.client.lock().expect("reader lock").last_readable(&m))?)
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
    ) -> Result<Py<PyAny>> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        let read = |c: &mut BookieClient| c.read_ledger(&m, first, last);
        let rows = py.detach(|| read(&mut self.client.lock().expect("reader lock")))?;
        Ok(PyRecordBatch::new(entries_batch(&rows))
            .into_pyarrow(py)?
            .unbind())
    }
}

/// Reads ledgers from a bookie's entry-log files (offline): `logs` are the
/// `*.log` paths, `ledgers` the `(ledger_id, ledger node)` pairs to read. One
/// row per entry of each ledger, an error row per damaged place in a file.
#[pyfunction]
pub fn read_bookie_files(
    py: Python<'_>,
    logs: Vec<String>,
    ledgers: Vec<(i64, Vec<u8>)>,
) -> Result<Py<PyAny>> {
    let dir = (String::new(), logs, None);
    Ok(read_bookie_dirs(py, vec![dir], ledgers, Vec::new())?.0)
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
pub fn read_bookie_dirs(
    py: Python<'_>,
    dirs: Vec<PyLedgerDir>,
    ledgers: Vec<(i64, Vec<u8>)>,
    journals: Vec<String>,
) -> Result<(Py<PyAny>, Vec<i64>, Vec<i64>)> {
    let parse = |(id, node): &(i64, Vec<u8>)| LedgerMetadata::parse(*id, node);
    let metas = ledgers.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
    let dir = |(dir, logs, index)| LedgerDirFiles { dir, logs, index };
    let dirs: Vec<_> = dirs.into_iter().map(dir).collect();
    let (batch, scanned, journaled) = py.detach(|| {
        let mut read = read_bookie(&dirs, &journals, &metas);
        let (scanned, journaled) = (take(&mut read.scanned), take(&mut read.journaled));
        (read.into_batch(), scanned, journaled)
    });
    let batch = PyRecordBatch::new(batch).into_pyarrow(py)?.unbind();
    Ok((batch, scanned, journaled))
}
