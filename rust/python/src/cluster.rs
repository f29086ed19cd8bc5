//! Bindings for reading a live cluster: the metadata-store node formats and
//! the read-only BookKeeper client. Registration and conversion only.

use std::collections::HashMap;
use std::sync::Mutex;

use pulsar_entries_core::bookkeeper::files::{read_bookie, LedgerDirFiles};
use pulsar_entries_core::bookkeeper::{entries_batch, BookieClient, LedgerMetadata};
use pulsar_entries_core::metadata_store::{self as ms, TopicName};
use pulsar_entries_core::value::cluster::{
    ledger_metadata_value, managed_ledger_value, topic_paths_value,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::PyRecordBatch;

use crate::convert::{dict_to_py, with_kwargs};
use crate::errors::Result;

#[pyfunction]
pub fn topic_paths<'py>(py: Python<'py>, topic: &str) -> Result<Bound<'py, PyDict>> {
    let paths = topic_paths_value(&TopicName::parse(topic)?);
    Ok(dict_to_py(py, &paths)?)
}

#[pyfunction]
pub fn partition_name(topic: &str, index: i32) -> Result<String> {
    Ok(TopicName::parse(topic)?.with_partition(index).full())
}

#[pyfunction]
pub fn strip_rocksdb_header<'py>(py: Python<'py>, value: &[u8]) -> Result<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, ms::strip_rocksdb_header(value)?))
}

#[pyfunction]
pub fn managed_ledger_info<'py>(py: Python<'py>, node: &[u8]) -> Result<Bound<'py, PyDict>> {
    let ml = ms::managed_ledger_info(node)?;
    Ok(dict_to_py(py, &managed_ledger_value(&ml))?)
}

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

#[pyfunction]
pub fn partition_count(node: &[u8]) -> Result<i32> {
    Ok(ms::partition_count(node)?)
}

#[pyfunction]
pub fn bookie_address(bookie_id: &str, node: &[u8]) -> Result<String> {
    Ok(ms::bookie_address(bookie_id, node)?)
}

#[pyfunction]
pub fn ledger_metadata<'py>(
    py: Python<'py>,
    ledger_id: i64,
    node: &[u8],
) -> Result<Bound<'py, PyDict>> {
    let m = LedgerMetadata::parse(ledger_id, node)?;
    Ok(dict_to_py(py, &ledger_metadata_value(&m))?)
}

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

#[pyfunction]
#[pyo3(signature = (ledger_id, root="/ledgers"))]
pub fn ledger_path(ledger_id: i64, root: &str) -> String {
    pulsar_entries_core::bookkeeper::ledger_path(root, ledger_id)
}

#[pyclass(module = "pulsar_entries._native")]
pub struct BookieReader {
    client: Mutex<BookieClient>,
}

#[pymethods]
impl BookieReader {
    /// `options` are [`Kwargs::bookie_client`]'s.
    #[new]
    #[pyo3(signature = (bookies=None, **options))]
    fn new(
        bookies: Option<HashMap<String, String>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> Result<Self> {
        let opts = with_kwargs("BookieReader", options, |kw| kw.bookie_client())?;
        let client = BookieClient::with_addresses(opts, bookies.unwrap_or_default());
        Ok(Self {
            client: Mutex::new(client),
        })
    }

    fn last_readable(&self, py: Python<'_>, ledger_id: i64, metadata: &[u8]) -> Result<i64> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        Ok(py.detach(|| self.client.lock().expect("reader lock").last_readable(&m))?)
    }

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

/// One ledger directory as Python passes it: the directory, its entry logs,
/// and its `locations` index rows `(ledger, entry, location)` when read.
type PyLedgerDir = (String, Vec<String>, Option<Vec<(i64, i64, u64)>>);

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
    let (batch, scanned, journaled) =
        py.detach(|| read_bookie(&dirs, &journals, &metas).into_parts());
    let batch = PyRecordBatch::new(batch).into_pyarrow(py)?.unbind();
    Ok((batch, scanned, journaled))
}
