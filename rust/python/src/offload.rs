//! Bindings for `pulsar_entries_core::offload` (tiered-storage offload objects).
//!
//! Object bytes arrive as a one-element binary/large_binary Arrow array, so a
//! pyarrow `Buffer` (memory-mapped file, pyarrow.fs read) crosses without a
//! copy; `pulsar_entries.offload` wraps any bytes-like object that way.

use pulsar_entries_core::decode::binary::single_value;
use pulsar_entries_core::offload::table::{entry_rows, single_ledger};
use pulsar_entries_core::offload::{self as core, EntryRange, OffloadIndex};
use pulsar_entries_core::value::{blocks_value, offload_index_value};
use pulsar_entries_core::EntryError;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{batches, obj, with_kwargs, KwDict, Obj, Table};
use crate::errors::{detach, Result};

/// The bytes of a one-element binary array, borrowed (no copy).
fn object<'a>(array: &'a PyArray, what: &str) -> Result<&'a [u8]> {
    Ok(single_value(array.array().as_ref(), what)?)
}

fn index_of(index: Option<PyArray>) -> Result<Option<OffloadIndex>> {
    let parse =
        |i: &PyArray| Ok::<_, crate::errors::Error>(OffloadIndex::parse(object(i, "index")?)?);
    index.as_ref().map(parse).transpose()
}

#[pyfunction]
#[pyo3(signature = (data, *, index=None, ledger_id=None))]
pub fn read_offload_object(
    py: Python<'_>,
    data: PyArray,
    index: Option<PyArray>,
    ledger_id: Option<i64>,
) -> Result<Table> {
    let data = object(&data, "data")?;
    let index = index.as_ref().map(|i| object(i, "index")).transpose()?;
    let opts = core::ReadOptions {
        ledger_id,
        ranges: None,
    };
    let batches = detach(py, "read_offload_object", "StorageError", || {
        core::read_ledger(data, index, &opts)
    })?;
    Ok(Table(batches, core::offload_schema()))
}

#[pyfunction]
#[pyo3(signature = (data, base_offset, *, index=None, ledger_id=None, ranges=None))]
pub fn read_offload_blocks(
    py: Python<'_>,
    data: PyArray,
    base_offset: u64,
    index: Option<PyArray>,
    ledger_id: Option<i64>,
    ranges: Option<Vec<(i64, i64, i64)>>,
) -> Result<Table> {
    let data = object(&data, "data")?;
    let index = index_of(index)?;
    let range = |(ledger_id, first_entry_id, last_entry_id)| EntryRange {
        ledger_id,
        first_entry_id,
        last_entry_id,
    };
    let ranges = ranges.map(|rs| rs.into_iter().map(range).collect());
    let opts = core::ReadOptions { ledger_id, ranges };
    let batches = detach(py, "read_offload_blocks", "StorageError", || {
        core::read_object(data, base_offset, index.as_ref(), &opts)
    })?;
    Ok(Table(batches, core::offload_schema()))
}

#[pyfunction]
#[pyo3(signature = (index, *, ledger_id=None))]
pub fn parse_offload_index(index: PyArray, ledger_id: Option<i64>) -> Result<Obj> {
    let idx = OffloadIndex::parse(object(&index, "index")?)?;
    Ok(obj(offload_index_value(&idx, ledger_id)))
}

#[pyfunction]
#[pyo3(signature = (index, *, ledger_id=None))]
pub fn offload_blocks(index: PyArray, ledger_id: Option<i64>) -> Result<Obj> {
    let idx = OffloadIndex::parse(object(&index, "index")?)?;
    Ok(obj(blocks_value(&idx.blocks(ledger_id))))
}

/// The ledger's metadata, `spec`, is [`Kwargs::ledger_spec`]'s.
#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, ledger_id, block_size, **spec))]
pub fn write_offload_ledger(
    py: Python<'_>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    ledger_id: Option<i64>,
    block_size: usize,
    spec: Option<KwDict>,
) -> Result<Obj> {
    let spec = with_kwargs("write_offload_ledger", spec, |kw| kw.ledger_spec())?;
    let batches = batches(entries)?;
    let rows = entry_rows(&batches, ledger_id)?;
    let ledgers = core::group_entries(rows)?;
    let l = single_ledger(&ledgers, ledger_id)?;
    let write = |out: &mut _| core::write_ledger(out, l.ledger_id, &l.entries, block_size, &spec);
    let written = detach(py, "write_offload", "StorageError", || {
        core::write_files(data_path, index_path, write, |w| &w.index)
    })??;
    Ok(obj(blocks_value(&written.blocks)))
}

#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, block_size, timestamp, ledger_id=None))]
pub fn write_offload_streaming(
    py: Python<'_>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    block_size: usize,
    timestamp: i64,
    ledger_id: Option<i64>,
) -> Result<Obj> {
    let batches = batches(entries)?;
    let ledgers = core::group_entries(entry_rows(&batches, ledger_id)?)?;
    if ledgers.is_empty() {
        return Err(EntryError::Options("no entries to write".into()).into());
    }
    let write = |out: &mut _| core::write_streaming(out, &ledgers, block_size, timestamp);
    let written = detach(py, "write_offload", "StorageError", || {
        core::write_files(data_path, index_path, write, |w| &w.index)
    })??;
    Ok(obj(blocks_value(&written.blocks)))
}
