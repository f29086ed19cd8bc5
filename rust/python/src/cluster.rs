//! Bindings for reading a live cluster: the read-only BookKeeper client and
//! a bookie's own files. (The metadata-store node formats are core functions
//! over plain values: [`crate::calls`].)

use std::collections::HashMap;
use std::sync::Mutex;

use pulsar_entries_core::bookkeeper::files::{read_bookie, LedgerDirFiles};
use pulsar_entries_core::bookkeeper::{entries_batch, BookieClient, LedgerMetadata};
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;

use crate::convert::{with_kwargs, KwDict};
use crate::errors::Result;

#[pyclass(module = "pulsar_entries._native")]
pub struct BookieReader {
    client: Mutex<BookieClient>,
}

#[pymethods]
impl BookieReader {
    /// `options` are [`Kwargs::bookie_client`]'s.
    #[new]
    #[pyo3(signature = (bookies=None, **options))]
    fn new(bookies: Option<HashMap<String, String>>, options: Option<KwDict>) -> Result<Self> {
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
