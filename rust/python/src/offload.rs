//! Bindings for `pulsar_entries_core::offload` (tiered-storage offload objects).
//!
//! Object bytes arrive as a one-element binary/large_binary Arrow array, so a
//! pyarrow `Buffer` (memory-mapped file, pyarrow.fs read) crosses without a
//! copy; `pulsar_entries.offload` wraps any bytes-like object that way.

use std::collections::BTreeMap;

use pulsar_entries_core::decode::binary::single_value;
use pulsar_entries_core::offload::table::{entry_rows, single_ledger, uuid_text};
use pulsar_entries_core::offload::{
    self as core, BlockRange, EntryRange, IndexVersion, LedgerMeta, OffloadIndex,
    OffloadOptions as Core,
};
use pulsar_entries_core::proto::offload::ledger_metadata_format::{DigestType, State};
use pulsar_entries_core::proto::offload::{LedgerInfo, LedgerMetadataFormat};
use pulsar_entries_core::EntryError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{batches, Table};
use crate::errors::{detach, Result};
use crate::options::options_class;

options_class! {
    /// How entries are written as offload objects (the core's `OffloadOptions`).
    OffloadOptions(Core);
    #[pyo3(signature = (*, block_size=None, managed_ledger_name=None, ensemble=None, write_quorum=None, ack_quorum=None))]
    fn new(
        block_size: Option<usize>,
        managed_ledger_name: Option<String>,
        ensemble: Option<Vec<String>>,
        write_quorum: Option<i32>,
        ack_quorum: Option<i32>,
    ) {
        let (name, quorums) = (managed_ledger_name, (write_quorum, ack_quorum));
        Core::try_new(block_size, name, ensemble, quorums.0, quorums.1)?
    }
    |o| {
        block_size: Option<usize> = o.block_size,
        managed_ledger_name: String = o.managed_ledger_name.clone(),
        ensemble: Option<Vec<String>> = o.ensemble.clone(),
        write_quorum: Option<i32> = o.write_quorum,
        ack_quorum: Option<i32> = o.ack_quorum,
    }
}

/// The options given, or the defaults.
fn options(o: Option<PyRef<OffloadOptions>>) -> Core {
    o.map_or_else(Core::default, |o| o.0.clone())
}

/// One block of a data object (`OffloadBlockDict`).
#[derive(IntoPyObject)]
pub struct Block {
    ledger_id: Option<i64>,
    first_entry_id: i64,
    last_entry_id: Option<i64>,
    part_id: i32,
    offset: u64,
    length: u64,
}

fn blocks<'a>(bs: impl IntoIterator<Item = &'a BlockRange>) -> Vec<Block> {
    let block = |b: &BlockRange| Block {
        ledger_id: b.ledger_id,
        first_entry_id: b.first_entry_id,
        last_entry_id: b.last_entry_id,
        part_id: b.part_id,
        offset: b.offset,
        length: b.length,
    };
    bs.into_iter().map(block).collect()
}

/// An index object's fields and, per ledger, its metadata and blocks.
#[derive(IntoPyObject)]
pub struct IndexDict {
    version: u8,
    index_block_length: i32,
    data_object_length: i64,
    data_header_length: i64,
    ledgers: Vec<IndexedLedgerDict>,
}

#[derive(IntoPyObject)]
pub struct IndexedLedgerDict {
    ledger_id: Option<i64>,
    last_entry_id: Option<i64>,
    length: Option<i64>,
    metadata: MetaDict,
    blocks: Vec<Block>,
}

/// A v1 index's BookKeeper metadata, or a v2 index's managed-ledger `LedgerInfo`.
#[derive(IntoPyObject)]
pub enum MetaDict {
    BookKeeper {
        kind: &'static str,
        quorum_size: i32,
        ensemble_size: i32,
        ack_quorum_size: Option<i32>,
        length: i64,
        last_entry_id: Option<i64>,
        state: String,
        digest_type: Option<String>,
        ctime: Option<i64>,
        password: Option<Vec<u8>>,
        ctoken: Option<i64>,
        ensembles: Vec<(i64, Vec<String>)>,
        custom_metadata: BTreeMap<String, Vec<u8>>,
    },
    LedgerInfo {
        kind: &'static str,
        ledger_id: i64,
        entries: Option<i64>,
        size: Option<i64>,
        timestamp: Option<i64>,
        offload_context: Option<OffloadContext>,
    },
}

/// A `LedgerInfo`'s offload context; `driver_name` and `driver_metadata`
/// only when the context has driver metadata.
pub struct OffloadContext(pulsar_entries_core::proto::offload::OffloadContext);

impl<'py> IntoPyObject<'py> for OffloadContext {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (c, d) = (self.0, PyDict::new(py));
        d.set_item(
            "uuid",
            c.uid_msb.zip(c.uid_lsb).map(|(m, l)| uuid_text(m, l)),
        )?;
        d.set_item("complete", c.complete)?;
        d.set_item("bookkeeper_deleted", c.bookkeeper_deleted)?;
        d.set_item("timestamp", c.timestamp)?;
        if let Some(dm) = c.driver_metadata {
            d.set_item("driver_name", dm.name)?;
            let props: BTreeMap<_, _> = dm
                .properties
                .into_iter()
                .map(|kv| (kv.key, kv.value))
                .collect();
            d.set_item("driver_metadata", props)?;
        }
        d.set_item("segments", c.offload_segment.len())?;
        Ok(d)
    }
}

fn enum_name(value: i32, name: Option<&'static str>) -> String {
    name.map_or_else(|| value.to_string(), str::to_string)
}

fn bookkeeper(m: &LedgerMetadataFormat) -> MetaDict {
    let state = State::try_from(m.state).ok().map(|s| s.as_str_name());
    let digest = |t| enum_name(t, DigestType::try_from(t).ok().map(|s| s.as_str_name()));
    let segment = |s: &pulsar_entries_core::proto::offload::ledger_metadata_format::Segment| {
        (s.first_entry_id, s.ensemble_member.clone())
    };
    let entry =
        |kv: &pulsar_entries_core::proto::offload::ledger_metadata_format::CMetadataMapEntry| {
            (
                kv.key.clone().unwrap_or_default(),
                kv.value.clone().unwrap_or_default(),
            )
        };
    MetaDict::BookKeeper {
        kind: "bookkeeper",
        quorum_size: m.quorum_size,
        ensemble_size: m.ensemble_size,
        ack_quorum_size: m.ack_quorum_size,
        length: m.length,
        last_entry_id: m.last_entry_id,
        state: enum_name(m.state, state),
        digest_type: m.digest_type.map(digest),
        ctime: m.ctime,
        password: m.password.clone(),
        ctoken: m.c_token,
        ensembles: m.segment.iter().map(segment).collect(),
        custom_metadata: m.custom_metadata.iter().map(entry).collect(),
    }
}

fn ledger_info(i: &LedgerInfo) -> MetaDict {
    MetaDict::LedgerInfo {
        kind: "ledger_info",
        ledger_id: i.ledger_id,
        entries: i.entries,
        size: i.size,
        timestamp: i.timestamp,
        offload_context: i.offload_context.clone().map(OffloadContext),
    }
}

/// `ledger_id` names the ledger of a v1 index, which does not store it.
fn index_dict(idx: &OffloadIndex, ledger_id: Option<i64>) -> IndexDict {
    let all = idx.blocks(ledger_id);
    let ledger = |l: &pulsar_entries_core::offload::IndexedLedger| {
        let id = l.ledger_id.or(ledger_id);
        IndexedLedgerDict {
            ledger_id: id,
            last_entry_id: l.metadata.last_entry_id(),
            length: l.metadata.length(),
            metadata: match &l.metadata {
                LedgerMeta::BookKeeper(m) => bookkeeper(m),
                LedgerMeta::LedgerInfo(i) => ledger_info(i),
            },
            blocks: blocks(all.iter().filter(|b| b.ledger_id == id)),
        }
    };
    IndexDict {
        version: match idx.version {
            IndexVersion::V1 => 1,
            IndexVersion::V2 => 2,
        },
        index_block_length: idx.index_block_length,
        data_object_length: idx.data_object_length,
        data_header_length: idx.data_header_length,
        ledgers: idx.ledgers.iter().map(ledger).collect(),
    }
}

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
pub fn parse_offload_index(index: PyArray, ledger_id: Option<i64>) -> Result<IndexDict> {
    let idx = OffloadIndex::parse(object(&index, "index")?)?;
    Ok(index_dict(&idx, ledger_id))
}

#[pyfunction]
#[pyo3(signature = (index, *, ledger_id=None))]
pub fn offload_blocks(index: PyArray, ledger_id: Option<i64>) -> Result<Vec<Block>> {
    let idx = OffloadIndex::parse(object(&index, "index")?)?;
    Ok(blocks(&idx.blocks(ledger_id)))
}

/// The ledger's metadata is the options' (a broker's, for their managed
/// ledger) at `ctime`.
#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, ledger_id, ctime, options=None))]
pub fn write_offload_ledger(
    py: Python<'_>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    ledger_id: Option<i64>,
    ctime: i64,
    options: Option<PyRef<OffloadOptions>>,
) -> Result<Vec<Block>> {
    let opts = self::options(options);
    let (spec, block_size) = (opts.ledger_spec(ctime), opts.ledger_block_size());
    let batches = batches(entries)?;
    let rows = entry_rows(&batches, ledger_id)?;
    let ledgers = core::group_entries(rows)?;
    let l = single_ledger(&ledgers, ledger_id)?;
    let write = |out: &mut _| core::write_ledger(out, l.ledger_id, &l.entries, block_size, &spec);
    let written = detach(py, "write_offload", "StorageError", || {
        core::write_files(data_path, index_path, write, |w| &w.index)
    })??;
    Ok(blocks(&written.blocks))
}

#[pyfunction]
#[pyo3(signature = (entries, data_path, index_path, *, timestamp, ledger_id=None, options=None))]
pub fn write_offload_streaming(
    py: Python<'_>,
    entries: AnyRecordBatch,
    data_path: &str,
    index_path: &str,
    timestamp: i64,
    ledger_id: Option<i64>,
    options: Option<PyRef<OffloadOptions>>,
) -> Result<Vec<Block>> {
    let block_size = self::options(options).streaming_block_size();
    let batches = batches(entries)?;
    let ledgers = core::group_entries(entry_rows(&batches, ledger_id)?)?;
    if ledgers.is_empty() {
        return Err(EntryError::Options("no entries to write".into()).into());
    }
    let write = |out: &mut _| core::write_streaming(out, &ledgers, block_size, timestamp);
    let written = detach(py, "write_offload", "StorageError", || {
        core::write_files(data_path, index_path, write, |w| &w.index)
    })??;
    Ok(blocks(&written.blocks))
}
