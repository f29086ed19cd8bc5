//! Bindings for reading a live cluster: the read-only BookKeeper client and
//! a bookie's own files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pulsar_entries_core::bookkeeper::files::{read_bookie_with, LedgerDirFiles};
use pulsar_entries_core::bookkeeper::tls::{BookieTls, TlsFiles};
use pulsar_entries_core::bookkeeper::{
    entries_batch, BookKeeperError, BookieClient, ClientOptions, LedgerMetadata,
};
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;

use crate::errors::{detach, Error, Result};
use crate::options::{count, options_class};
use crate::pass::Failure;

const D: ClientOptions = ClientOptions::DEFAULT;

options_class! {
    /// How a [`BookieReader`] talks to bookies (the core's `ClientOptions`).
    BookieClientOptions(ClientOptions);
    #[pyo3(signature = (*, timeout_ms=None, connect_timeout_ms=None, pipeline_depth=None, max_frame_bytes=None, tls_trust_certs_file=None, tls_certificate_file=None, tls_key_file=None, tls_hostname_verification=false))]
    fn new(
        timeout_ms: Option<i64>,
        connect_timeout_ms: Option<i64>,
        pipeline_depth: Option<i64>,
        max_frame_bytes: Option<i64>,
        tls_trust_certs_file: Option<PathBuf>,
        tls_certificate_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
        tls_hostname_verification: bool,
    ) {
        let ms = |d: Duration| d.as_millis() as u64;
        let tls = match tls_trust_certs_file {
            Some(ca) => Some(BookieTls::from_files(
                &ca,
                tls_certificate_file.as_deref(),
                tls_key_file.as_deref(),
                tls_hostname_verification,
            )?),
            None if tls_certificate_file.is_some() || tls_key_file.is_some() || tls_hostname_verification => {
                return Err(BookKeeperError::Options(
                    "bookie TLS: tls_trust_certs_file (the CA bundle) is needed for TLS".into(),
                )
                .into())
            }
            None => None,
        };
        ClientOptions::try_new(
            count("timeout_ms", timeout_ms)?.unwrap_or(ms(D.request_timeout)),
            count("connect_timeout_ms", connect_timeout_ms)?.unwrap_or(ms(D.connect_timeout)),
            count("pipeline_depth", pipeline_depth)?.unwrap_or(D.pipeline_depth),
            count("max_frame_bytes", max_frame_bytes)?.unwrap_or(D.max_frame_bytes),
        )?
        .with_tls(tls)
    }
    |o| {
        timeout_ms: u64 = o.request_timeout.as_millis() as u64,
        connect_timeout_ms: u64 = o.connect_timeout.as_millis() as u64,
        pipeline_depth: usize = o.pipeline_depth,
        max_frame_bytes: usize = o.max_frame_bytes,
        tls_trust_certs_file: Option<String> = tls_file(o, |f| Some(&f.ca)),
        tls_certificate_file: Option<String> = tls_file(o, |f| f.certificate.as_ref()),
        tls_key_file: Option<String> = tls_file(o, |f| f.key.as_ref()),
        tls_hostname_verification: bool = o.tls.as_ref().is_some_and(|t| t.verifies_hostname()),
    }
}

/// One of the files the options' TLS was read from.
fn tls_file(o: &ClientOptions, pick: impl Fn(&TlsFiles) -> Option<&PathBuf>) -> Option<String> {
    let files = o.tls.as_ref()?.files()?;
    pick(files).map(|p| p.to_string_lossy().into_owned())
}

/// The read-only BookKeeper client. Every call releases the GIL; while it
/// waits it checks for signals (Ctrl-C) at least every 200 ms and stops with
/// the signal handler's exception. A panic in the core is a `StorageError`,
/// and cannot leave the client unusable.
#[pyclass(module = "pulsar_entries._native")]
pub struct BookieReader {
    client: Mutex<BookieClient>,
    /// The exception a signal handler raised while a read waited.
    signal: Failure,
}

impl BookieReader {
    /// Runs `f` on the client with the GIL released; an interrupt re-raises
    /// the signal handler's exception, a panic is an error.
    fn with_client<T: Send>(
        &self,
        py: Python<'_>,
        what: &str,
        f: impl FnOnce(&mut BookieClient) -> Result<T, BookKeeperError> + Send,
    ) -> Result<T> {
        let run = || {
            // A panic while the lock was held poisons it: the client is taken
            // over as new (connections dropped, nothing learnt kept).
            let mut client = self.client.lock().unwrap_or_else(|p| {
                let mut c = p.into_inner();
                c.reset();
                self.client.clear_poison();
                c
            });
            client.set_interrupt(Some(Box::new(signal_check(self.signal.clone()))));
            let out = f(&mut client);
            client.set_interrupt(None);
            out
        };
        detach(py, what, "StorageError", run)?.map_err(|e| self.signal.raise(e))
    }
}

#[pymethods]
impl BookieReader {
    #[new]
    #[pyo3(signature = (bookies=None, *, options=None))]
    fn new(
        bookies: Option<HashMap<String, String>>,
        options: Option<PyRef<BookieClientOptions>>,
    ) -> Result<Self> {
        let opts = options.map_or(D, |o| o.0.clone());
        let client = BookieClient::with_addresses(opts, bookies.unwrap_or_default());
        Ok(Self {
            client: Mutex::new(client),
            signal: Failure::default(),
        })
    }

    /// A deadline `seconds` from now for every later call (`None`: none).
    #[pyo3(signature = (seconds))]
    fn set_deadline(&self, py: Python<'_>, seconds: Option<f64>) -> Result<()> {
        let deadline = match seconds {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => {
                Some(Instant::now() + Duration::from_secs_f64(s.min(1e9)))
            }
            Some(s) => {
                return Err(Error::Raise(
                    "OptionsError",
                    format!("deadline: expected a non-negative number of seconds, got {s}"),
                ))
            }
        };
        self.with_client(py, "set_deadline", |c| {
            c.set_deadline(deadline);
            Ok(())
        })
    }

    fn last_readable(&self, py: Python<'_>, ledger_id: i64, metadata: &[u8]) -> Result<i64> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        self.with_client(py, "last_readable", |c| c.last_readable(&m))
    }

    /// `(last, conflict)`: see the core's `BookieClient::bounded_last`.
    #[pyo3(signature = (ledger_id, metadata, entries=None))]
    fn bounded_last(
        &self,
        py: Python<'_>,
        ledger_id: i64,
        metadata: &[u8],
        entries: Option<i64>,
    ) -> Result<(i64, Option<String>)> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        self.with_client(py, "bounded_last", |c| c.bounded_last(&m, entries))
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
        let rows = self.with_client(py, "read_ledger", |c| c.read_ledger(&m, first, last))?;
        Ok(PyRecordBatch::new(entries_batch(&rows))
            .into_pyarrow(py)?
            .unbind())
    }

    /// One window of `first..=last`: `(entries, next)`; see the core's
    /// `BookieClient::read_window`.
    #[pyo3(signature = (ledger_id, metadata, first, last, max_bytes))]
    fn read_window(
        &self,
        py: Python<'_>,
        ledger_id: i64,
        metadata: &[u8],
        first: i64,
        last: i64,
        max_bytes: usize,
    ) -> Result<(Py<PyAny>, Option<i64>)> {
        let m = LedgerMetadata::parse(ledger_id, metadata)?;
        let w = self.with_client(py, "read_window", |c| {
            c.read_window(&m, first, last, max_bytes)
        })?;
        let batch = PyRecordBatch::new(entries_batch(&w.entries))
            .into_pyarrow(py)?
            .unbind();
        Ok((batch, w.next))
    }
}

/// Asks Python for pending signals (Ctrl-C) from a thread that released the
/// GIL; the handler's exception is kept in `signal` and the answer is `true`.
pub fn signal_check(signal: Failure) -> impl Fn() -> bool + Send + Sync {
    move || {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                signal.keep(e);
                true
            }
        })
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
    let signal = Failure::default();
    let check = signal_check(signal.clone());
    let (batch, scanned, journaled) = detach(py, "read_bookie_dirs", "StorageError", || {
        read_bookie_with(&dirs, &journals, &metas, &check).into_parts()
    })?;
    if let Some(e) = signal.take() {
        // Interrupted: what was read is dropped, the signal handler's exception raised.
        return Err(e.into());
    }
    let batch = PyRecordBatch::new(batch).into_pyarrow(py)?.unbind();
    Ok((batch, scanned, journaled))
}
