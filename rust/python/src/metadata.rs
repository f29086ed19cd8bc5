//! Bindings for the metadata store: a topic's layout resolved in one call
//! over a Python store ([`resolve_topic`]), and the node formats Python still
//! reads itself (topic paths, ledger and schema nodes, offload names).

use std::collections::{BTreeMap, HashMap};

use pulsar_entries_core::bookkeeper::{BookieClient, ClientOptions, LedgerMetadata, LedgerState};
use pulsar_entries_core::layout::{self as core, read_last_entry};
use pulsar_entries_core::metadata_store::{
    strip_rocksdb_header as strip, MetadataError, MetadataStore, OffloadState, TopicName,
};
use pulsar_entries_core::offload::{ObjectName, ObjectRole};
use pulsar_entries_core::schema::{decode_schema_entry, decode_schema_locator};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;

use crate::cluster::signal_check;
use crate::errors::{detach, Result};
use crate::pass::Failure;

/// A Python object with `get(path)` and `children(path)` as the core's
/// store: each call takes the GIL; an exception it raises is kept, to be
/// raised as it is once the walk stops.
struct PyStore {
    store: Py<PyAny>,
    failure: Failure,
}

impl PyStore {
    fn call<T>(
        &self,
        method: &str,
        path: &str,
        f: impl FnOnce(Bound<'_, PyAny>) -> PyResult<T>,
    ) -> Result<T, MetadataError> {
        Python::attach(|py| f(self.store.bind(py).call_method1(method, (path,))?))
            .map_err(|e| MetadataError::Io(self.failure.keep(e)))
    }
}

impl MetadataStore for PyStore {
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, MetadataError> {
        self.call("get", path, |v| match v.is_none() {
            true => Ok(None),
            false => Ok(Some(v.extract::<PyBackedBytes>()?.to_vec())),
        })
    }

    fn children(&self, path: &str) -> Result<Vec<String>, MetadataError> {
        self.call("children", path, |v| v.extract())
    }
}

/// Runs `f` over `store` with the GIL released; a Python exception the store
/// (or a signal handler) raised is re-raised as it is.
fn over_store<T: Send>(
    py: Python<'_>,
    what: &str,
    store: Py<PyAny>,
    f: impl FnOnce(&dyn MetadataStore, &Failure) -> Result<T, MetadataError> + Send,
) -> Result<T> {
    let store = PyStore {
        store,
        failure: Failure::default(),
    };
    let out = detach(py, what, "StorageError", || f(&store, &store.failure))?;
    out.map_err(|e| store.failure.raise(e))
}

/// A ledger node, without its password (`ledger_metadata`'s dict).
#[derive(IntoPyObject, Clone)]
pub struct LedgerInfo {
    ledger_id: i64,
    state: &'static str,
    last_entry_id: i64,
    length: i64,
    ensemble_size: usize,
    write_quorum: usize,
    ack_quorum: usize,
    digest_type: &'static str,
    ensembles: Vec<(i64, Vec<String>)>,
    custom_metadata: BTreeMap<String, Vec<u8>>,
}

impl From<&LedgerMetadata> for LedgerInfo {
    fn from(m: &LedgerMetadata) -> Self {
        let state = match m.state {
            LedgerState::Open => "OPEN",
            LedgerState::InRecovery => "IN_RECOVERY",
            LedgerState::Closed => "CLOSED",
        };
        let segment =
            |s: &pulsar_entries_core::bookkeeper::Segment| (s.first_entry_id, s.bookies.clone());
        Self {
            ledger_id: m.ledger_id,
            state,
            last_entry_id: m.last_entry_id,
            length: m.length,
            ensemble_size: m.ensemble_size,
            write_quorum: m.write_quorum,
            ack_quorum: m.ack_quorum,
            digest_type: m.digest.name(),
            ensembles: m.segments.iter().map(segment).collect(),
            custom_metadata: m.custom.iter().cloned().collect(),
        }
    }
}

/// An offloaded ledger's state in the managed-ledger info.
#[derive(IntoPyObject, Clone)]
pub struct Offload {
    uid_msb: i64,
    uid_lsb: i64,
    bookkeeper_deleted: bool,
    driver: String,
    driver_properties: BTreeMap<String, String>,
}

/// One ledger of a layout (`pulsar_entries._cluster.layout.Ledger`'s fields).
#[pyclass(frozen, get_all, module = "pulsar_entries._native")]
pub struct LedgerRecord {
    ledger_id: i64,
    entries: i64,
    size: i64,
    metadata: Option<Vec<u8>>,
    info: Option<LedgerInfo>,
    offload: Option<Offload>,
}

impl From<core::Ledger> for LedgerRecord {
    fn from(l: core::Ledger) -> Self {
        let offload = match l.offload {
            OffloadState::BookKeeper => None,
            OffloadState::Offloaded {
                uid_msb,
                uid_lsb,
                bookkeeper_deleted,
                driver,
                driver_properties,
            } => {
                let driver_properties = driver_properties.into_iter().collect();
                Some(Offload {
                    uid_msb,
                    uid_lsb,
                    bookkeeper_deleted,
                    driver,
                    driver_properties,
                })
            }
        };
        let info = l.metadata.as_ref().map(LedgerInfo::from);
        Self {
            ledger_id: l.ledger_id,
            entries: l.entries,
            size: l.size,
            metadata: l.node,
            info,
            offload,
        }
    }
}

/// One partition of a layout.
#[pyclass(frozen, get_all, module = "pulsar_entries._native")]
pub struct PartitionRecord {
    topic: String,
    partition: i32,
    ledgers: Vec<Py<LedgerRecord>>,
    compacted: Option<Py<LedgerRecord>>,
    horizon: Option<(i64, i64)>,
}

/// A topic's layout, as [`resolve_topic`] gives it.
#[pyclass(frozen, get_all, module = "pulsar_entries._native")]
pub struct LayoutRecord {
    topic: String,
    partitions: Vec<Py<PartitionRecord>>,
    bookies: BTreeMap<String, String>,
}

fn records(py: Python<'_>, ledgers: Vec<core::Ledger>) -> PyResult<Vec<Py<LedgerRecord>>> {
    ledgers
        .into_iter()
        .map(|l| Py::new(py, LedgerRecord::from(l)))
        .collect()
}

/// The topic's layout from `store`, in one walk (see the core's `layout`).
#[pyfunction]
#[pyo3(signature = (topic, store, *, partitions=None))]
pub fn resolve_topic(
    py: Python<'_>,
    topic: &str,
    store: Py<PyAny>,
    partitions: Option<Vec<i32>>,
) -> Result<LayoutRecord> {
    let layout = over_store(py, "resolve_topic", store, |store, failure| {
        let mut read = |m: &LedgerMetadata, bookies: &BTreeMap<String, String>| {
            let bookies: HashMap<_, _> = bookies.clone().into_iter().collect();
            let mut client = BookieClient::with_addresses(ClientOptions::default(), bookies);
            client.set_interrupt(Some(Box::new(signal_check(failure.clone()))));
            read_last_entry(&mut client, m)
        };
        core::resolve_topic(topic, store, partitions.as_deref(), Some(&mut read))
    })?;
    let partition = |p: core::Partition| {
        let compacted = p
            .compacted
            .map(|c| Py::new(py, LedgerRecord::from(c)))
            .transpose()?;
        let (topic, partition, horizon) = (p.topic, p.partition, p.horizon);
        Py::new(
            py,
            PartitionRecord {
                topic,
                partition,
                ledgers: records(py, p.ledgers)?,
                compacted,
                horizon,
            },
        )
    };
    let partitions = layout
        .partitions
        .into_iter()
        .map(partition)
        .collect::<PyResult<_>>()?;
    Ok(LayoutRecord {
        topic: layout.topic,
        partitions,
        bookies: layout.bookies,
    })
}

/// Bookie id → address.
type Bookies = BTreeMap<String, String>;

/// Ledgers by id with their nodes, and their bookies' addresses, from `store`.
#[pyfunction]
#[pyo3(signature = (ledger_ids, store))]
pub fn resolve_ledgers(
    py: Python<'_>,
    ledger_ids: Vec<i64>,
    store: Py<PyAny>,
) -> Result<(Vec<Py<LedgerRecord>>, Bookies)> {
    let (ledgers, bookies) = over_store(py, "resolve_ledgers", store, |s, _| {
        core::resolve_ledgers(s, &ledger_ids)
    })?;
    Ok((records(py, ledgers)?, bookies))
}

/// A topic's names and metadata-store paths.
#[derive(IntoPyObject)]
pub struct TopicPaths {
    topic: String,
    base: String,
    partition: Option<i32>,
    managed_ledger: String,
    compaction_cursor: String,
    partitioned_metadata: String,
    schema: String,
}

#[pyfunction]
#[pyo3(signature = (topic))]
pub fn topic_paths(topic: &str) -> Result<TopicPaths> {
    let t = TopicName::parse(topic)?;
    Ok(TopicPaths {
        topic: t.full(),
        base: t.base().full(),
        partition: t.partition(),
        managed_ledger: t.managed_ledger_path(),
        compaction_cursor: t.cursor_path(core::COMPACTION_CURSOR),
        partitioned_metadata: t.partitioned_metadata_path(),
        schema: t.schema_path(),
    })
}

#[pyfunction]
#[pyo3(signature = (topic, index))]
pub fn partition_name(topic: &str, index: i32) -> Result<String> {
    Ok(TopicName::parse(topic)?.with_partition(index).full())
}

#[pyfunction]
#[pyo3(signature = (value))]
pub fn strip_rocksdb_header(value: &[u8]) -> Result<Vec<u8>> {
    Ok(strip(value)?.to_vec())
}

#[pyfunction]
#[pyo3(signature = (ledger_id, node))]
pub fn ledger_metadata(ledger_id: i64, node: &[u8]) -> Result<LedgerInfo> {
    Ok(LedgerInfo::from(&LedgerMetadata::parse(ledger_id, node)?))
}

#[pyfunction]
#[pyo3(signature = (ledger_id, text, password=b"".as_slice()))]
pub fn ledger_node_from_text(ledger_id: i64, text: &str, password: &[u8]) -> Result<Vec<u8>> {
    Ok(LedgerMetadata::from_safe_string(ledger_id, text, password)?.to_node())
}

#[pyfunction]
#[pyo3(signature = (node))]
pub fn schema_locations(node: &[u8]) -> Result<Vec<(i64, i64, i64)>> {
    let each =
        |l: pulsar_entries_core::schema::SchemaLocation| (l.version, l.ledger_id, l.entry_id);
    Ok(decode_schema_locator(node)?.into_iter().map(each).collect())
}

/// One stored schema version (a deleted one has type `NONE`, an empty
/// schema and no properties).
#[derive(IntoPyObject)]
pub struct SchemaEntry {
    version: i64,
    deleted: bool,
    timestamp: i64,
    schema_id: String,
    #[pyo3(item("type"))]
    schema_type: &'static str,
    schema: Vec<u8>,
    properties: BTreeMap<String, String>,
}

#[pyfunction]
#[pyo3(signature = (version, data))]
pub fn schema_entry(version: i64, data: &[u8]) -> Result<SchemaEntry> {
    let stored = decode_schema_entry(version, data)?;
    let deleted = stored.schema.is_none();
    let (schema_type, schema, properties) = match stored.schema {
        Some(s) => (
            s.schema_type.name(),
            s.definition,
            s.properties.into_iter().collect(),
        ),
        None => ("NONE", Vec::new(), BTreeMap::new()),
    };
    let (schema_id, timestamp) = (stored.schema_id, stored.timestamp);
    Ok(SchemaEntry {
        version,
        deleted,
        timestamp,
        schema_id,
        schema_type,
        schema,
        properties,
    })
}

/// What an offload object's name says.
#[derive(IntoPyObject)]
pub struct OffloadName {
    uuid: String,
    ledger_id: Option<i64>,
    role: &'static str,
}

#[pyfunction]
#[pyo3(signature = (name))]
pub fn parse_offload_name(name: &str) -> Option<OffloadName> {
    ObjectName::parse(name).map(|n| OffloadName {
        uuid: n.uuid,
        ledger_id: n.ledger_id,
        role: match n.role {
            ObjectRole::Data => "data",
            ObjectRole::Index => "index",
        },
    })
}
