//! `pulsar_entries._native`: the thin PyO3 layer over `pulsar-entries-core`.
//!
//! Arrow data crosses the boundary through the Arrow C stream interface
//! (pyo3-arrow), so input entries and output messages are never copied
//! between Python and Rust. The GIL is released while entries are processed.
//! Every core error becomes a Python exception in one place, [`errors`].

// Decoding hands every output buffer to pyarrow, which frees it when the table
// dies; the next call then allocates the same sizes again. glibc returns those
// pages to the OS in between (trimming, mmap for large blocks), so each call
// faulted its output in afresh: a fifth of decode time on small messages.
// mimalloc keeps freed pages for reuse.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod broker;
mod chunks;
mod cluster;
mod compaction;
mod convert;
mod entry;
mod errors;
mod ids;
mod kafka;
mod offload;
mod pass;
mod processors;
mod typed;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "DEFAULT_MAX_UNCOMPRESSED_SIZE",
        pulsar_entries_core::DEFAULT_MAX_UNCOMPRESSED_SIZE,
    )?;
    errors::register(m)?;
    cluster::register(m)?;
    entry::register(m)?;
    processors::register(m)?;
    broker::register(m)?;
    kafka::register(m)?;
    chunks::register(m)?;
    ids::register(m)?;
    compaction::register(m)?;
    offload::register(m)?;
    typed::register(m)?;
    Ok(())
}
