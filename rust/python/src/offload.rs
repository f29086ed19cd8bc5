//! Bindings for `pulsar_entries_core::offload` (tiered-storage offload objects).
//!
//! Object bytes arrive as a one-element binary/large_binary Arrow array, so a
//! pyarrow `Buffer` (memory-mapped file, pyarrow.fs read) crosses without a
//! copy; `pulsar_entries.offload` wraps any bytes-like object that way.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use pulsar_entries_core::offload::{
    group_entries, offload_schema, read_ledger, read_object, write_ledger, write_streaming,
    BlockRange, EntryRange, LedgerMeta, LedgerMetadataSpec, ObjectName, ObjectRole, OffloadIndex,
    ReadOptions,
};
use pulsar_entries_core::proto::offload::{
    ledger_metadata_format, LedgerInfo, LedgerMetadataFormat,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyArray, PyTable};

pyo3::create_exception!(
    _native,
    OffloadFormatError,
    PyValueError,
    "An offload object's bytes are not a valid Pulsar tiered-storage object."
);

fn offload_error(e: impl std::fmt::Display) -> PyErr {
    OffloadFormatError::new_err(e.to_string())
}

/// The bytes of a one-element binary array.
fn object_bytes<'a>(array: &'a ArrayRef, what: &str) -> PyResult<&'a [u8]> {
    if array.len() != 1 || array.is_null(0) {
        return Err(PyValueError::new_err(format!(
            "{what} must be one non-null binary value, got {} values",
            array.len()
        )));
    }
    match array.data_type() {
        DataType::Binary => Ok(array.as_binary::<i32>().value(0)),
        DataType::LargeBinary => Ok(array.as_binary::<i64>().value(0)),
        DataType::BinaryView => Ok(array.as_binary_view().value(0)),
        other => Err(PyTypeError::new_err(format!(
            "{what} must be binary, not {other}"
        ))),
    }
}

fn table<'py>(py: Python<'py>, batches: Vec<RecordBatch>) -> PyArrowResult<Bound<'py, PyAny>> {
    Ok(PyTable::try_new(batches, offload_schema())?.into_pyarrow(py)?)
}

/// All entries of a whole data object; with its index, entries the index
/// promises but the data lacks are reported too.
#[pyfunction]
#[pyo3(signature = (data, *, index=None, ledger_id=None))]
pub fn read_offload_object<'py>(
    py: Python<'py>,
    data: PyArray,
    index: Option<PyArray>,
    ledger_id: Option<i64>,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let data = data.array().clone();
    let index = index.map(|i| i.array().clone());
    let d = object_bytes(&data, "data")?;
    let i = index
        .as_ref()
        .map(|i| object_bytes(i, "index"))
        .transpose()?;
    let opts = ReadOptions {
        ledger_id,
        ranges: None,
    };
    let batches = py.detach(|| read_ledger(d, i, &opts));
    table(py, batches)
}

/// A run of whole blocks read on its own (`base_offset` = where `data`
/// starts in the data object); `ranges` = (ledger_id, first, last) entries to keep.
#[pyfunction]
#[pyo3(signature = (data, base_offset, *, index=None, ledger_id=None, ranges=None))]
pub fn read_offload_blocks<'py>(
    py: Python<'py>,
    data: PyArray,
    base_offset: u64,
    index: Option<PyArray>,
    ledger_id: Option<i64>,
    ranges: Option<Vec<(i64, i64, i64)>>,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let data = data.array().clone();
    let d = object_bytes(&data, "data")?;
    let index = match index {
        Some(i) => {
            let a = i.array().clone();
            Some(OffloadIndex::parse(object_bytes(&a, "index")?).map_err(offload_error)?)
        }
        None => None,
    };
    let opts = ReadOptions {
        ledger_id,
        ranges: ranges.map(|rs| {
            rs.into_iter()
                .map(|(l, f, t)| EntryRange {
                    ledger_id: l,
                    first_entry_id: f,
                    last_entry_id: t,
                })
                .collect()
        }),
    };
    let batches = py.detach(|| read_object(d, base_offset, index.as_ref(), &opts));
    table(py, batches)
}

fn block_dict<'py>(py: Python<'py>, b: &BlockRange) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ledger_id", b.ledger_id)?;
    d.set_item("first_entry_id", b.first_entry_id)?;
    d.set_item("last_entry_id", b.last_entry_id)?;
    d.set_item("part_id", b.part_id)?;
    d.set_item("offset", b.offset)?;
    d.set_item("length", b.length)?;
    Ok(d)
}

fn blocks_list<'py>(py: Python<'py>, blocks: &[BlockRange]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for b in blocks {
        list.append(block_dict(py, b)?)?;
    }
    Ok(list)
}

fn enum_name(value: i32, name: Option<&str>) -> String {
    name.map_or_else(|| value.to_string(), str::to_string)
}

fn bookkeeper_dict<'py>(py: Python<'py>, m: &LedgerMetadataFormat) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", "bookkeeper")?;
    d.set_item("quorum_size", m.quorum_size)?;
    d.set_item("ensemble_size", m.ensemble_size)?;
    d.set_item("ack_quorum_size", m.ack_quorum_size)?;
    d.set_item("length", m.length)?;
    d.set_item("last_entry_id", m.last_entry_id)?;
    d.set_item(
        "state",
        enum_name(
            m.state,
            ledger_metadata_format::State::try_from(m.state)
                .ok()
                .map(|s| s.as_str_name()),
        ),
    )?;
    d.set_item(
        "digest_type",
        m.digest_type.map(|t| {
            enum_name(
                t,
                ledger_metadata_format::DigestType::try_from(t)
                    .ok()
                    .map(|s| s.as_str_name()),
            )
        }),
    )?;
    d.set_item("ctime", m.ctime)?;
    d.set_item(
        "password",
        m.password.as_deref().map(|p| PyBytes::new(py, p)),
    )?;
    d.set_item("ctoken", m.c_token)?;
    let ensembles = PyList::empty(py);
    for s in &m.segment {
        ensembles.append((s.first_entry_id, s.ensemble_member.clone()))?;
    }
    d.set_item("ensembles", ensembles)?;
    let custom = PyDict::new(py);
    for kv in &m.custom_metadata {
        custom.set_item(
            kv.key.as_deref().unwrap_or(""),
            PyBytes::new(py, kv.value.as_deref().unwrap_or_default()),
        )?;
    }
    d.set_item("custom_metadata", custom)?;
    Ok(d)
}

fn uuid_text(msb: i64, lsb: i64) -> String {
    let v = ((msb as u64 as u128) << 64) | lsb as u64 as u128;
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn ledger_info_dict<'py>(py: Python<'py>, i: &LedgerInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", "ledger_info")?;
    d.set_item("ledger_id", i.ledger_id)?;
    d.set_item("entries", i.entries)?;
    d.set_item("size", i.size)?;
    d.set_item("timestamp", i.timestamp)?;
    match &i.offload_context {
        Some(c) => {
            let o = PyDict::new(py);
            let uuid = match (c.uid_msb, c.uid_lsb) {
                (Some(m), Some(l)) => Some(uuid_text(m, l)),
                _ => None,
            };
            o.set_item("uuid", uuid)?;
            o.set_item("complete", c.complete)?;
            o.set_item("bookkeeper_deleted", c.bookkeeper_deleted)?;
            o.set_item("timestamp", c.timestamp)?;
            if let Some(dm) = &c.driver_metadata {
                o.set_item("driver_name", &dm.name)?;
                let props = PyDict::new(py);
                for kv in &dm.properties {
                    props.set_item(&kv.key, &kv.value)?;
                }
                o.set_item("driver_metadata", props)?;
            }
            o.set_item("segments", c.offload_segment.len())?;
            d.set_item("offload_context", o)?;
        }
        None => d.set_item("offload_context", py.None())?,
    }
    Ok(d)
}

/// An index object's fields, each ledger's metadata and blocks.
#[pyfunction]
#[pyo3(signature = (index, *, ledger_id=None))]
pub fn parse_offload_index<'py>(
    py: Python<'py>,
    index: PyArray,
    ledger_id: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let a = index.array().clone();
    let idx = OffloadIndex::parse(object_bytes(&a, "index")?).map_err(offload_error)?;
    let d = PyDict::new(py);
    d.set_item(
        "version",
        match idx.version {
            pulsar_entries_core::offload::IndexVersion::V1 => 1,
            pulsar_entries_core::offload::IndexVersion::V2 => 2,
        },
    )?;
    d.set_item("index_block_length", idx.index_block_length)?;
    d.set_item("data_object_length", idx.data_object_length)?;
    d.set_item("data_header_length", idx.data_header_length)?;
    let ledgers = PyList::empty(py);
    let blocks = idx.blocks(ledger_id);
    for l in &idx.ledgers {
        let ld = PyDict::new(py);
        let id = l.ledger_id.or(ledger_id);
        ld.set_item("ledger_id", id)?;
        ld.set_item("last_entry_id", l.metadata.last_entry_id())?;
        ld.set_item("length", l.metadata.length())?;
        ld.set_item(
            "metadata",
            match &l.metadata {
                LedgerMeta::BookKeeper(m) => bookkeeper_dict(py, m)?,
                LedgerMeta::LedgerInfo(i) => ledger_info_dict(py, i)?,
            },
        )?;
        let mine: Vec<BlockRange> = blocks
            .iter()
            .filter(|b| b.ledger_id == id)
            .copied()
            .collect();
        ld.set_item("blocks", blocks_list(py, &mine)?)?;
        ledgers.append(ld)?;
    }
    d.set_item("ledgers", ledgers)?;
    Ok(d)
}

/// Every block of an index, in data-object order.
#[pyfunction]
#[pyo3(signature = (index, *, ledger_id=None))]
pub fn offload_blocks<'py>(
    py: Python<'py>,
    index: PyArray,
    ledger_id: Option<i64>,
) -> PyResult<Bound<'py, PyList>> {
    let a = index.array().clone();
    let idx = OffloadIndex::parse(object_bytes(&a, "index")?).map_err(offload_error)?;
    blocks_list(py, &idx.blocks(ledger_id))
}

/// `{"uuid", "ledger_id", "role"}` for an offload object name, else None.
#[pyfunction]
pub fn parse_offload_name<'py>(
    py: Python<'py>,
    name: &str,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(n) = ObjectName::parse(name) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("uuid", &n.uuid)?;
    d.set_item("ledger_id", n.ledger_id)?;
    d.set_item(
        "role",
        match n.role {
            ObjectRole::Data => "data",
            ObjectRole::Index => "index",
        },
    )?;
    Ok(Some(d))
}

/// `(ledger_id, entry_id, data)` rows of an entry table; `ledger_id` fills a
/// missing column.
fn entry_rows<'b>(
    batches: &'b [RecordBatch],
    ledger_id: Option<i64>,
) -> PyResult<Vec<(i64, i64, &'b [u8])>> {
    let mut rows = Vec::new();
    for batch in batches {
        let col = |name: &str| batch.column_by_name(name);
        let entry = col("entry_id")
            .ok_or_else(|| PyValueError::new_err("entries need an `entry_id` column"))?;
        let entry = entry
            .as_primitive_opt::<arrow_array::types::Int64Type>()
            .ok_or_else(|| PyTypeError::new_err("`entry_id` must be int64"))?;
        let ledger = match col("ledger_id") {
            Some(l) => Some(
                l.as_primitive_opt::<arrow_array::types::Int64Type>()
                    .ok_or_else(|| PyTypeError::new_err("`ledger_id` must be int64"))?,
            ),
            None => None,
        };
        let data =
            col("data").ok_or_else(|| PyValueError::new_err("entries need a `data` column"))?;
        for i in 0..batch.num_rows() {
            let l = match (ledger, ledger_id) {
                (Some(l), _) if !l.is_null(i) => l.value(i),
                (_, Some(id)) => id,
                _ => {
                    return Err(PyValueError::new_err(
                        "entries have no ledger_id (column or argument)",
                    ))
                }
            };
            if entry.is_null(i) || data.is_null(i) {
                return Err(PyValueError::new_err(format!(
                    "row {i}: entry_id and data must not be null"
                )));
            }
            let bytes: &[u8] = match data.data_type() {
                DataType::Binary => data.as_binary::<i32>().value(i),
                DataType::LargeBinary => data.as_binary::<i64>().value(i),
                DataType::BinaryView => data.as_binary_view().value(i),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "`data` must be binary or large_binary, not {other}"
                    )))
                }
            };
            rows.push((l, entry.value(i), bytes));
        }
    }
    Ok(rows)
}

fn collect(entries: AnyRecordBatch) -> PyResult<Vec<RecordBatch>> {
    let reader = entries.into_reader()?;
    reader
        .into_iter()
        .map(|b| b.map_err(|e| PyValueError::new_err(e.to_string())))
        .collect()
}

fn create(path: &str) -> PyResult<std::io::BufWriter<std::fs::File>> {
    std::fs::File::create(path)
        .map(|f| std::io::BufWriter::with_capacity(1 << 20, f))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{path}: {e}")))
}

fn finish(
    mut out: std::io::BufWriter<std::fs::File>,
    index_path: &str,
    index: &[u8],
) -> PyResult<()> {
    use std::io::Write;
    out.flush()
        .and_then(|_| std::fs::write(index_path, index))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// Writes a ledger-based data object and its v1 index; returns the blocks.
#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, ledger_id, block_size, ctime, managed_ledger_name, ensemble=None, write_quorum=None, ack_quorum=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_offload_ledger<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    ledger_id: Option<i64>,
    block_size: usize,
    ctime: i64,
    managed_ledger_name: &str,
    ensemble: Option<Vec<String>>,
    write_quorum: Option<i32>,
    ack_quorum: Option<i32>,
) -> PyResult<Bound<'py, PyList>> {
    let batches = collect(entries)?;
    let rows = entry_rows(&batches, ledger_id)?;
    let mut spec = LedgerMetadataSpec::for_managed_ledger(managed_ledger_name, ctime);
    if let Some(e) = ensemble {
        let quorum = (e.len() as i32).min(2);
        (spec.write_quorum, spec.ack_quorum, spec.ensemble) = (quorum, quorum, e);
    }
    spec.write_quorum = write_quorum.unwrap_or(spec.write_quorum);
    spec.ack_quorum = ack_quorum.unwrap_or(spec.ack_quorum);
    let ledgers = group_entries(rows).map_err(offload_error)?;
    let ledger = match ledgers.as_slice() {
        [l] if ledger_id.is_none_or(|id| id == l.ledger_id) => l,
        [] => return Err(PyValueError::new_err("no entries to write")),
        [l] => {
            return Err(PyValueError::new_err(format!(
                "the entries' ledger_id column says {}, not ledger_id={}",
                l.ledger_id,
                ledger_id.unwrap_or_default()
            )))
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "a ledger-based object holds one ledger; the entries hold ledgers {:?}",
                ledgers.iter().map(|l| l.ledger_id).collect::<Vec<_>>()
            )))
        }
    };
    if ledger.first_entry_id != 0 {
        return Err(PyValueError::new_err(format!(
            "a ledger-based object starts at entry 0 (Pulsar offloads whole ledgers); these start at {}",
            ledger.first_entry_id
        )));
    }
    let mut out = create(data_path)?;
    let written = py
        .detach(|| {
            write_ledger(
                &mut out,
                ledger.ledger_id,
                &ledger.entries,
                block_size,
                &spec,
            )
        })
        .map_err(offload_error)?;
    finish(out, index_path, &written.index)?;
    blocks_list(py, &written.blocks)
}

/// Writes a streaming (PIP-76) data object and its v2 index; returns the blocks.
#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, block_size, timestamp, ledger_id=None))]
pub fn write_offload_streaming<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    block_size: usize,
    timestamp: i64,
    ledger_id: Option<i64>,
) -> PyResult<Bound<'py, PyList>> {
    let batches = collect(entries)?;
    let rows = entry_rows(&batches, ledger_id)?;
    let ledgers = group_entries(rows).map_err(offload_error)?;
    if ledgers.is_empty() {
        return Err(PyValueError::new_err("no entries to write"));
    }
    let mut out = create(data_path)?;
    let written = py
        .detach(|| write_streaming(&mut out, &ledgers, block_size, timestamp))
        .map_err(offload_error)?;
    finish(out, index_path, &written.index)?;
    blocks_list(py, &written.blocks)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "OffloadFormatError",
        m.py().get_type::<OffloadFormatError>(),
    )?;
    m.add_function(wrap_pyfunction!(read_offload_object, m)?)?;
    m.add_function(wrap_pyfunction!(read_offload_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(parse_offload_index, m)?)?;
    m.add_function(wrap_pyfunction!(offload_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(parse_offload_name, m)?)?;
    m.add_function(wrap_pyfunction!(write_offload_ledger, m)?)?;
    m.add_function(wrap_pyfunction!(write_offload_streaming, m)?)?;
    Ok(())
}
