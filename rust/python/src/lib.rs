//! `pulsar_entries._native`: the thin PyO3 layer over `pulsar-entries-core`.
//!
//! Arrow data crosses the boundary through the Arrow C stream interface
//! (pyo3-arrow), so input entries and output messages are never copied
//! between Python and Rust. The GIL is released while entries are decoded.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
// Decoding hands every output buffer to pyarrow, which frees it when the table
// dies; the next call then allocates the same sizes again. glibc returns those
// pages to the OS in between (trimming, mmap for large blocks), so each call
// faulted its output in afresh: a fifth of decode time on small messages.
// mimalloc keeps freed pages for reuse.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cluster;
mod compaction;
mod offload;

use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use pulsar_entries_core::chunks::{self, Reassembler, ReassemblyOptions};
use pulsar_entries_core::compression::DEFAULT_MAX_UNCOMPRESSED_SIZE;
use pulsar_entries_core::decode::MAX_UNCOMPRESSED_SIZE_CAP;
use pulsar_entries_core::message_id::message_id_arrays;
use pulsar_entries_core::metadata::MessageMetadataView;
use pulsar_entries_core::{
    encode_chunked as core_encode_chunked, encode_entry as core_encode, message_schema,
    AnyMessageId, ChunkMessageId, Codec, DecodeOptions, Decoder, EncodeOptions, EntryError,
    EntryView, Key, MessageId, MessageInput,
};

mod broker;
mod kafka;
mod processors;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyArray, PyTable};

pyo3::create_exception!(
    _native,
    EntryFormatError,
    PyValueError,
    "An entry's bytes are not a valid Pulsar stored entry."
);

pub(crate) fn format_error(e: EntryError) -> PyErr {
    EntryFormatError::new_err(e.to_string())
}

fn decode_options(
    verify_checksum: bool,
    keep_markers: bool,
    max_uncompressed_size: usize,
) -> PyResult<DecodeOptions> {
    if max_uncompressed_size > MAX_UNCOMPRESSED_SIZE_CAP {
        return Err(PyValueError::new_err(format!(
            "max_uncompressed_size {max_uncompressed_size} exceeds the supported maximum {MAX_UNCOMPRESSED_SIZE_CAP}"
        )));
    }
    Ok(DecodeOptions {
        verify_checksum,
        keep_markers,
        max_uncompressed_size,
    })
}

/// Decodes entries (an Arrow table, record batch or stream) into a
/// `pyarrow.Table` of messages.
#[pyfunction]
#[pyo3(signature = (entries, *, verify_checksum=true, keep_markers=false, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE, processors=None))]
fn decode<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    verify_checksum: bool,
    keep_markers: bool,
    max_uncompressed_size: usize,
    processors: Option<Vec<Bound<'py, PyAny>>>,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = decode_options(verify_checksum, keep_markers, max_uncompressed_size)?;
    let processors = processors::processors_from(processors)?;
    let reader = entries.into_reader()?;
    // Python processors take the GIL back only for the entries they decode.
    let batches = py.detach(move || -> Result<_, String> {
        let mut decoder = Decoder::with_processors(opts, processors);
        for batch in reader {
            let batch = batch.map_err(|e| e.to_string())?;
            decoder
                .decode_record_batch(&batch)
                .map_err(|e| e.to_string())?;
        }
        Ok(decoder.finish())
    });
    let batches = batches.map_err(PyValueError::new_err)?;
    Ok(PyTable::try_new(batches, message_schema())?.into_pyarrow(py)?)
}

/// Milliseconds from an int, or from anything with `.timestamp()` (datetime).
pub(crate) fn millis(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(v);
    }
    if obj.hasattr("timestamp")? {
        let secs: f64 = obj.call_method0("timestamp")?.extract()?;
        return Ok((secs * 1000.0).round() as i64);
    }
    Err(PyTypeError::new_err(
        "expected an int (milliseconds) or a datetime",
    ))
}

fn set_opt<'py, T: IntoPyObject<'py>>(
    d: &Bound<'py, PyDict>,
    key: &str,
    v: Option<T>,
) -> PyResult<()> {
    match v {
        Some(v) => d.set_item(key, v),
        None => Ok(()),
    }
}

fn pairs<'py, 'a>(
    py: Python<'py>,
    it: impl Iterator<Item = (&'a str, &'a str)>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, it.map(|(k, v)| (k, v)))
}

/// MessageMetadata as a dict of its present fields (bytes as `bytes`).
pub(crate) fn metadata_dict<'py>(
    py: Python<'py>,
    md: &MessageMetadataView<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let m = PyDict::new(py);
    m.set_item("producer_name", md.producer_name)?;
    m.set_item("sequence_id", md.sequence_id)?;
    m.set_item("publish_time", md.publish_time)?;
    if !md.properties.is_empty() {
        m.set_item("properties", pairs(py, md.properties.iter())?)?;
    }
    set_opt(&m, "replicated_from", md.replicated_from)?;
    set_opt(&m, "partition_key", md.partition_key)?;
    if md.replicate_to_count() > 0 {
        m.set_item("replicate_to", PyList::new(py, md.replicate_to())?)?;
    }
    set_opt(
        &m,
        "compression",
        md.compression
            .map(|c| Codec::from_proto(c).map_or_else(|| c.to_string(), |c| c.name().to_string())),
    )?;
    set_opt(&m, "uncompressed_size", md.uncompressed_size)?;
    set_opt(&m, "num_messages_in_batch", md.num_messages_in_batch)?;
    set_opt(&m, "event_time", md.event_time)?;
    if md.encryption_keys_count() > 0 {
        let keys = PyList::empty(py);
        for k in md.encryption_keys() {
            let d = PyDict::new(py);
            d.set_item("key", k.key)?;
            d.set_item("value", PyBytes::new(py, k.value))?;
            d.set_item("metadata", pairs(py, k.metadata.iter())?)?;
            keys.append(d)?;
        }
        m.set_item("encryption_keys", keys)?;
    }
    set_opt(&m, "encryption_algo", md.encryption_algo)?;
    set_opt(
        &m,
        "encryption_param",
        md.encryption_param.map(|b| PyBytes::new(py, b)),
    )?;
    set_opt(
        &m,
        "schema_version",
        md.schema_version.map(|b| PyBytes::new(py, b)),
    )?;
    set_opt(
        &m,
        "partition_key_b64_encoded",
        md.partition_key_b64_encoded,
    )?;
    set_opt(
        &m,
        "ordering_key",
        md.ordering_key.map(|b| PyBytes::new(py, b)),
    )?;
    set_opt(&m, "deliver_at_time", md.deliver_at_time)?;
    set_opt(&m, "marker_type", md.marker_type)?;
    set_opt(&m, "txnid_least_bits", md.txnid_least_bits)?;
    set_opt(&m, "txnid_most_bits", md.txnid_most_bits)?;
    set_opt(&m, "highest_sequence_id", md.highest_sequence_id)?;
    set_opt(&m, "null_value", md.null_value)?;
    set_opt(&m, "uuid", md.uuid)?;
    set_opt(&m, "num_chunks_from_msg", md.num_chunks_from_msg)?;
    set_opt(&m, "total_chunk_msg_size", md.total_chunk_msg_size)?;
    set_opt(&m, "chunk_id", md.chunk_id)?;
    set_opt(&m, "null_partition_key", md.null_partition_key)?;
    if md.compacted_batch_indexes_count() > 0 {
        m.set_item(
            "compacted_batch_indexes",
            PyList::new(py, md.compacted_batch_indexes())?,
        )?;
    }
    set_opt(&m, "schema_id", md.schema_id.map(|b| PyBytes::new(py, b)))?;
    Ok(m)
}

/// Every piece of one entry, for inspection; metadata keeps field presence.
#[pyfunction]
fn parse_entry<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let entry = EntryView::parse(data, false).map_err(format_error)?;
    let md = &entry.metadata;
    let out = PyDict::new(py);
    match entry.broker_entry_metadata {
        Some(b) => {
            let d = PyDict::new(py);
            d.set_item("broker_timestamp", b.broker_timestamp)?;
            d.set_item("index", b.index)?;
            out.set_item("broker_entry_metadata", d)?;
        }
        None => out.set_item("broker_entry_metadata", py.None())?,
    }
    match entry.checksum {
        Some(stored) => {
            let computed = entry.computed_checksum();
            let d = PyDict::new(py);
            d.set_item("stored", stored)?;
            d.set_item("computed", computed)?;
            d.set_item("valid", stored == computed)?;
            out.set_item("checksum", d)?;
        }
        None => out.set_item("checksum", py.None())?,
    }
    let m = metadata_dict(py, md)?;
    out.set_item("metadata", m)?;
    out.set_item(
        "metadata_size",
        entry.payload_offset - entry.metadata_offset,
    )?;
    out.set_item("is_batch", md.is_batch())?;
    out.set_item("num_messages", md.num_messages())?;
    out.set_item("encrypted", md.is_encrypted())?;
    out.set_item("payload_offset", entry.payload_offset)?;
    out.set_item("payload", PyBytes::new(py, entry.payload))?;
    Ok(out)
}

fn message_input(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<MessageInput> {
    let dict = obj
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("messages[{index}] must be a dict")))?;
    let mut m = MessageInput {
        value: Some(Vec::new()),
        ..Default::default()
    };
    for (k, v) in dict.iter() {
        let name: String = k.extract()?;
        let bad = |what: &str| {
            PyTypeError::new_err(format!("messages[{index}][{name:?}] must be {what}"))
        };
        match name.as_str() {
            "value" => m.value = v.extract::<Option<Vec<u8>>>().map_err(|_| bad("bytes or None"))?,
            "key" => {
                m.key = if v.is_none() {
                    None
                } else if let Ok(s) = v.cast::<PyString>() {
                    Some(Key::Text(s.extract::<String>()?))
                } else if let Ok(b) = v.cast::<PyBytes>() {
                    Some(Key::Binary(b.as_bytes().to_vec()))
                } else {
                    return Err(bad("str, bytes or None"));
                }
            }
            "properties" => m.properties = string_pairs(&v).map_err(|_| bad("a dict of str to str"))?,
            "event_time" => m.event_time = v.extract().map_err(|_| bad("a non-negative int (ms) or None"))?,
            "sequence_id" => m.sequence_id = v.extract().map_err(|_| bad("a non-negative int or None"))?,
            "ordering_key" => m.ordering_key = v.extract::<Option<Vec<u8>>>().map_err(|_| bad("bytes or None"))?,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "messages[{index}] has unknown key {name:?}; expected value, key, properties, event_time, sequence_id, ordering_key"
                )))
            }
        }
    }
    Ok(m)
}

/// A `dict[str, str]` (or None) as ordered pairs.
fn string_pairs(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    if obj.is_none() {
        return Ok(Vec::new());
    }
    let dict = obj
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("properties must be a dict of str to str"))?;
    dict.iter()
        .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
        .collect()
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Encodes messages into one stored entry, as Pulsar's Java producer would.
#[pyfunction]
#[pyo3(signature = (messages, *, batch=None, compression="none", producer_name="pulsar-entries", sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=true, properties=None))]
#[allow(clippy::too_many_arguments)]
fn encode_entry<'py>(
    py: Python<'py>,
    messages: Vec<Bound<'py, PyAny>>,
    batch: Option<bool>,
    compression: &str,
    producer_name: &str,
    sequence_id: u64,
    publish_time: Option<u64>,
    broker_timestamp: Option<u64>,
    broker_index: Option<u64>,
    checksum: bool,
    properties: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let inputs = messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_input(m, i))
        .collect::<PyResult<Vec<_>>>()?;
    let opts = encode_options(
        batch,
        compression,
        producer_name,
        sequence_id,
        publish_time,
        broker_timestamp,
        broker_index,
        checksum,
        properties,
    )?;
    let bytes = py
        .detach(|| core_encode(&inputs, &opts))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &bytes))
}

#[allow(clippy::too_many_arguments)]
fn encode_options(
    batch: Option<bool>,
    compression: &str,
    producer_name: &str,
    sequence_id: u64,
    publish_time: Option<u64>,
    broker_timestamp: Option<u64>,
    broker_index: Option<u64>,
    checksum: bool,
    properties: Option<Bound<'_, PyAny>>,
) -> PyResult<EncodeOptions> {
    Ok(EncodeOptions {
        batch,
        compression: compression
            .parse()
            .map_err(|e: EntryError| PyValueError::new_err(e.to_string()))?,
        producer_name: producer_name.to_owned(),
        sequence_id,
        publish_time: publish_time.unwrap_or_else(now_ms),
        broker_timestamp,
        broker_index,
        checksum,
        properties: match properties {
            Some(p) => string_pairs(&p)?,
            None => Vec::new(),
        },
    })
}

/// Adds or replaces an entry's broker-entry-metadata prefix, as the broker's
/// interceptors write it; the checksummed part is kept byte for byte.
#[pyfunction]
#[pyo3(signature = (entry, *, broker_timestamp=None, broker_index=None))]
fn set_broker_entry_metadata<'py>(
    py: Python<'py>,
    entry: &[u8],
    broker_timestamp: Option<u64>,
    broker_index: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let bem = pulsar_entries_core::proto::BrokerEntryMetadata {
        broker_timestamp,
        index: broker_index,
    };
    let out = pulsar_entries_core::encode::set_broker_entry_metadata(entry, &bem)
        .map_err(format_error)?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes one message as the chunk entries Pulsar's Java producer stores
/// with chunking enabled.
#[pyfunction]
#[pyo3(signature = (message, *, chunk_size, compression="none", producer_name="pulsar-entries", sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=true, properties=None))]
#[allow(clippy::too_many_arguments)]
fn encode_chunked<'py>(
    py: Python<'py>,
    message: Bound<'py, PyAny>,
    chunk_size: usize,
    compression: &str,
    producer_name: &str,
    sequence_id: u64,
    publish_time: Option<u64>,
    broker_timestamp: Option<u64>,
    broker_index: Option<u64>,
    checksum: bool,
    properties: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let input = message_input(&message, 0)?;
    let opts = encode_options(
        Some(false),
        compression,
        producer_name,
        sequence_id,
        publish_time,
        broker_timestamp,
        broker_index,
        checksum,
        properties,
    )?;
    let entries = py
        .detach(|| core_encode_chunked(&input, &opts, chunk_size))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyList::new(py, entries.iter().map(|e| PyBytes::new(py, e)))
}

// ------------------------------------------------------------------ reassembly

fn reassembly_options(
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> PyResult<ReassemblyOptions> {
    if max_message_size > MAX_UNCOMPRESSED_SIZE_CAP {
        return Err(PyValueError::new_err(format!(
            "max_message_size {max_message_size} exceeds the supported maximum {MAX_UNCOMPRESSED_SIZE_CAP}"
        )));
    }
    if max_pending == Some(0) {
        return Err(PyValueError::new_err(
            "max_pending must be at least 1 (None means unlimited)",
        ));
    }
    if expire_after_ms.is_some_and(|e| e < 0) {
        return Err(PyValueError::new_err(
            "expire_after_ms must not be negative (None means never)",
        ));
    }
    Ok(ReassemblyOptions {
        max_pending,
        expire_after_ms,
        max_message_size,
    })
}

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Rebuilds chunked messages from decoded rows (topic order).
#[pyfunction]
#[pyo3(signature = (messages, *, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
fn reassemble_chunks<'py>(
    py: Python<'py>,
    messages: AnyRecordBatch,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let reader = messages.into_reader()?;
    let input_schema = reader.schema();
    let result = py.detach(move || -> Result<_, String> {
        let mut r = Reassembler::new(input_schema, opts).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| e.to_string())?;
            out.extend(r.push(&batch).map_err(|e| e.to_string())?);
        }
        out.extend(r.finish().map_err(|e| e.to_string())?);
        out.retain(|b| b.num_rows() > 0);
        Ok((out, r.schema()))
    });
    let (batches, schema) = result.map_err(PyValueError::new_err)?;
    Ok(PyTable::try_new(batches, schema)?.into_pyarrow(py)?)
}

/// Feeds every batch of `input` to a stateful pass with the GIL released,
/// collecting the pass's results in order (the shape of every streaming
/// `push` in these bindings).
pub(crate) fn push_batches<R: Send, E: Send>(
    py: Python<'_>,
    input: AnyRecordBatch,
    mut push: impl FnMut(&RecordBatch) -> Result<R, E> + Send,
) -> PyResult<Result<Vec<R>, E>> {
    let batches = collect_batches(input)?;
    Ok(py.detach(move || batches.iter().map(&mut push).collect()))
}

pub(crate) fn collect_batches(input: AnyRecordBatch) -> PyResult<Vec<RecordBatch>> {
    let reader = input.into_reader()?;
    reader.collect::<Result<Vec<_>, _>>().map_err(value_error)
}

/// The partition pass of a distributed reassembly (see `pulsar_entries.chunks`).
#[pyfunction]
#[pyo3(signature = (messages, *, seeds=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
fn reassemble_partition<'py>(
    py: Python<'py>,
    messages: AnyRecordBatch,
    seeds: Option<HashMap<i32, i64>>,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> PyArrowResult<Bound<'py, PyTuple>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let batches = collect_batches(messages)?;
    let Some(first) = batches.first() else {
        return Err(
            PyValueError::new_err("reassemble_partition needs at least one record batch").into(),
        );
    };
    let input = first.schema();
    let seeds = seeds.unwrap_or_default();
    let result = py
        .detach(|| chunks::reassemble_partition(&batches, opts, &seeds))
        .map_err(value_error)?;
    let done = PyTable::try_new(result.done, chunks::output_schema(&input))?.into_pyarrow(py)?;
    let leftovers = PyTable::try_new(vec![result.leftovers], chunks::leftover_schema(&input))?
        .into_pyarrow(py)?;
    Ok(PyTuple::new(py, [done, leftovers])?)
}

/// The partition pass, streaming: `push(batch)` and `finish()` each give
/// `(done, leftovers)` tables.
#[pyclass(module = "pulsar_entries._native")]
struct PartitionReassembler {
    inner: chunks::PartitionReassembler,
}

impl PartitionReassembler {
    fn tables<'py>(
        &self,
        py: Python<'py>,
        part: chunks::PartitionResult,
    ) -> PyArrowResult<Bound<'py, PyTuple>> {
        let done = PyTable::try_new(part.done, self.inner.schema())?.into_pyarrow(py)?;
        let leftovers = PyTable::try_new(vec![part.leftovers], self.inner.leftover_schema())?
            .into_pyarrow(py)?;
        Ok(PyTuple::new(py, [done, leftovers])?)
    }
}

#[pymethods]
impl PartitionReassembler {
    #[new]
    #[pyo3(signature = (schema, *, seeds=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
    fn new(
        schema: pyo3_arrow::PySchema,
        seeds: Option<HashMap<i32, i64>>,
        max_pending: Option<usize>,
        expire_after_ms: Option<i64>,
        max_message_size: usize,
    ) -> PyResult<Self> {
        let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
        let inner = chunks::PartitionReassembler::new(
            schema.into_inner(),
            opts,
            &seeds.unwrap_or_default(),
        )
        .map_err(value_error)?;
        Ok(PartitionReassembler { inner })
    }

    fn push<'py>(
        &mut self,
        py: Python<'py>,
        batch: AnyRecordBatch,
    ) -> PyArrowResult<Bound<'py, PyTuple>> {
        let inner = &mut self.inner;
        let parts = push_batches(py, batch, |b| inner.push(b))?.map_err(value_error)?;
        let mut done = Vec::new();
        let mut left = Vec::new();
        for p in parts {
            done.extend(p.done);
            left.push(p.leftovers);
        }
        let leftovers = arrow_select::concat::concat_batches(&self.inner.leftover_schema(), &left)
            .map_err(value_error)?;
        self.tables(py, chunks::PartitionResult { done, leftovers })
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyArrowResult<Bound<'py, PyTuple>> {
        let inner = &mut self.inner;
        let part = py.detach(move || inner.finish()).map_err(value_error)?;
        self.tables(py, part)
    }
}

/// Decides the messages handed on by `reassemble_partition`.
#[pyfunction]
#[pyo3(signature = (leftovers, *, final_watermarks=None, max_pending=Some(100), expire_after_ms=Some(60_000), max_message_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
fn finish_leftovers<'py>(
    py: Python<'py>,
    leftovers: AnyRecordBatch,
    final_watermarks: Option<HashMap<i32, i64>>,
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = reassembly_options(max_pending, expire_after_ms, max_message_size)?;
    let reader = leftovers.into_reader()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(value_error)?;
    let keep: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| f.name() != chunks::WATERMARK_COLUMN && f.name() != chunks::ROLE_COLUMN)
        .map(|f| f.as_ref().clone())
        .collect();
    let output = chunks::output_schema(&Schema::new(keep));
    let finals = final_watermarks.unwrap_or_default();
    let out = if batches.iter().all(|b| b.num_rows() == 0) {
        vec![]
    } else {
        py.detach(|| chunks::finish_leftovers(&batches, opts, &finals))
            .map_err(value_error)?
    };
    Ok(PyTable::try_new(out, output)?.into_pyarrow(py)?)
}

/// The table with `message_id` (serialized, binary) and `message_id_str`
/// (Java's text form) appended.
#[pyfunction]
fn with_message_ids<'py>(
    py: Python<'py>,
    table: AnyRecordBatch,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let reader = table.into_reader()?;
    let schema = reader.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for name in ["message_id", "message_id_str"] {
        if schema.column_with_name(name).is_some() {
            return Err(
                PyValueError::new_err(format!("the table already has a `{name}` column")).into(),
            );
        }
    }
    fields.push(Field::new("message_id", DataType::Binary, true));
    fields.push(Field::new("message_id_str", DataType::Utf8, true));
    let out_schema = Arc::new(Schema::new(fields));
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(value_error)?;
    let out = py
        .detach(|| -> Result<Vec<RecordBatch>, String> {
            batches
                .iter()
                .map(|b| {
                    let (bytes, text) = message_id_arrays(b).map_err(|e| e.to_string())?;
                    let mut cols = b.columns().to_vec();
                    cols.push(Arc::new(bytes));
                    cols.push(Arc::new(text));
                    RecordBatch::try_new(out_schema.clone(), cols).map_err(|e| e.to_string())
                })
                .collect()
        })
        .map_err(PyValueError::new_err)?;
    Ok(PyTable::try_new(out, out_schema)?.into_pyarrow(py)?)
}

// ------------------------------------------------------------------ message ids

/// A message position, as Pulsar's Java client compares, prints and
/// serializes it (`MessageIdImpl` / `BatchMessageIdImpl`).
#[pyclass(name = "MessageId", module = "pulsar_entries", subclass, frozen)]
struct PyMessageId {
    inner: MessageId,
}

fn any_id(obj: &Bound<'_, PyAny>) -> Option<AnyMessageId> {
    if let Ok(c) = obj.cast::<PyChunkMessageId>() {
        return Some(c.get().chunk.into());
    }
    obj.cast::<PyMessageId>().ok().map(|m| m.get().inner.into())
}

fn new_message_id(py: Python<'_>, id: MessageId) -> PyResult<Py<PyMessageId>> {
    Py::new(py, PyMessageId { inner: id })
}

fn new_any_id(py: Python<'_>, id: AnyMessageId) -> PyResult<Py<PyAny>> {
    Ok(match id {
        AnyMessageId::Message(m) => new_message_id(py, m)?.into_any(),
        AnyMessageId::Chunk(c) => Py::new(
            py,
            PyClassInitializer::from(PyMessageId { inner: c.last })
                .add_subclass(PyChunkMessageId { chunk: c }),
        )?
        .into_any(),
    })
}

#[pymethods]
impl PyMessageId {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, partition=-1, batch_index=-1, batch_size=None))]
    fn new(
        ledger_id: i64,
        entry_id: i64,
        partition: i32,
        batch_index: i32,
        batch_size: Option<i32>,
    ) -> Self {
        PyMessageId {
            inner: MessageId::batch(ledger_id, entry_id, partition, batch_index, batch_size),
        }
    }

    #[getter]
    fn ledger_id(&self) -> i64 {
        self.inner.ledger_id
    }

    #[getter]
    fn entry_id(&self) -> i64 {
        self.inner.entry_id
    }

    #[getter]
    fn partition(&self) -> i32 {
        self.inner.partition
    }

    #[getter]
    fn batch_index(&self) -> i32 {
        self.inner.batch_index
    }

    #[getter]
    fn batch_size(&self) -> Option<i32> {
        self.inner.batch_size
    }

    /// Java's `MessageId.toByteArray()`.
    fn serialize<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.serialize())
    }

    /// Java's `MessageId.fromByteArray()`: a `MessageId` or a `ChunkMessageId`.
    #[staticmethod]
    fn deserialize(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
        let id = AnyMessageId::deserialize(data).map_err(format_error)?;
        new_any_id(py, id)
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        let m = &self.inner;
        format!(
            "MessageId(ledger_id={}, entry_id={}, partition={}, batch_index={}, batch_size={})",
            m.ledger_id,
            m.entry_id,
            m.partition,
            m.batch_index,
            m.batch_size.map_or("None".into(), |s| s.to_string())
        )
    }

    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let (Some(a), Some(b)) = (any_id(slf.as_any()), any_id(other)) else {
            return Ok(py.NotImplemented());
        };
        Ok(op
            .matches(a.cmp(&b))
            .into_pyobject(py)?
            .to_owned()
            .into_any()
            .unbind())
    }

    fn __hash__(slf: &Bound<'_, Self>) -> u64 {
        let mut h = DefaultHasher::new();
        any_id(slf.as_any()).expect("a message id").hash(&mut h);
        h.finish()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let m = slf.get().inner;
        let args = (
            m.ledger_id,
            m.entry_id,
            m.partition,
            m.batch_index,
            m.batch_size,
        );
        PyTuple::new(
            slf.py(),
            [
                slf.get_type().into_any(),
                args.into_pyobject(slf.py())?.into_any(),
            ],
        )
    }
}

/// A chunked message's id: the first and the last chunk (PIP-107). It is the
/// last chunk's position for equality, ordering and hashing, as in Java
/// (whose `hashCode` alone also mixes in the first chunk); a consumer seeks
/// to the first chunk.
#[pyclass(name = "ChunkMessageId", module = "pulsar_entries", extends = PyMessageId, frozen)]
struct PyChunkMessageId {
    chunk: ChunkMessageId,
}

#[pymethods]
impl PyChunkMessageId {
    #[new]
    fn new(
        first: &Bound<'_, PyMessageId>,
        last: &Bound<'_, PyMessageId>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (first, last) = (first.get().inner, last.get().inner);
        if first.is_batch() || last.is_batch() {
            return Err(PyValueError::new_err(
                "chunks are never batched: both halves need batch_index -1",
            ));
        }
        let chunk = ChunkMessageId::new(first, last);
        Ok(PyClassInitializer::from(PyMessageId { inner: chunk.last })
            .add_subclass(PyChunkMessageId { chunk }))
    }

    #[getter]
    fn first(&self, py: Python<'_>) -> PyResult<Py<PyMessageId>> {
        new_message_id(py, self.chunk.first)
    }

    #[getter]
    fn last(&self, py: Python<'_>) -> PyResult<Py<PyMessageId>> {
        new_message_id(py, self.chunk.last)
    }

    fn serialize<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.chunk.serialize())
    }

    fn __str__(&self) -> String {
        self.chunk.to_string()
    }

    fn __repr__(&self) -> String {
        let (f, l) = (self.chunk.first, self.chunk.last);
        format!(
            "ChunkMessageId(first=MessageId({}, {}, {}), last=MessageId({}, {}, {}))",
            f.ledger_id, f.entry_id, f.partition, l.ledger_id, l.entry_id, l.partition
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let c = slf.get().chunk;
        let args = (new_message_id(py, c.first)?, new_message_id(py, c.last)?);
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                args.into_pyobject(py)?.into_any(),
            ],
        )
    }
}

/// The position a consumer seeks to for `message_id`: the first chunk of a
/// chunked message, the id itself otherwise.
#[pyfunction]
fn seek_position(py: Python<'_>, message_id: &Bound<'_, PyAny>) -> PyResult<Py<PyMessageId>> {
    let id = any_id(message_id).ok_or_else(|| {
        PyTypeError::new_err("seek_position expects a MessageId or ChunkMessageId")
    })?;
    new_message_id(py, id.seek_position())
}

/// One row of metadata per entry, from a binary (or large_binary) Arrow array.
#[pyfunction]
fn entry_metadata<'py>(py: Python<'py>, data: PyArray) -> PyArrowResult<Bound<'py, PyAny>> {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    use pulsar_entries_core::entry_metadata::{entry_metadata as build, entry_metadata_schema};

    let array = data.array().clone();
    let batch = py.detach(|| match array.data_type() {
        DataType::Binary => Ok(build(array.as_binary::<i32>().iter())),
        DataType::LargeBinary => Ok(build(array.as_binary::<i64>().iter())),
        DataType::BinaryView => Ok(build(array.as_binary_view().iter())),
        other => Err(format!(
            "entry data must be binary or large_binary, not {other}"
        )),
    });
    let batch = batch.map_err(PyValueError::new_err)?;
    Ok(PyTable::try_new(vec![batch], entry_metadata_schema())?.into_pyarrow(py)?)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    cluster::register(m)?;
    m.add(
        "DEFAULT_MAX_UNCOMPRESSED_SIZE",
        DEFAULT_MAX_UNCOMPRESSED_SIZE,
    )?;
    m.add("EntryFormatError", m.py().get_type::<EntryFormatError>())?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(parse_entry, m)?)?;
    m.add_function(wrap_pyfunction!(encode_entry, m)?)?;
    m.add_function(wrap_pyfunction!(entry_metadata, m)?)?;
    m.add_class::<processors::BuiltinProcessor>()?;
    m.add_class::<processors::PyEntryContext>()?;
    broker::register(m)?;
    kafka::register(m)?;
    m.add_function(wrap_pyfunction!(encode_chunked, m)?)?;
    m.add_function(wrap_pyfunction!(set_broker_entry_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(reassemble_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(reassemble_partition, m)?)?;
    m.add_function(wrap_pyfunction!(finish_leftovers, m)?)?;
    m.add_class::<PartitionReassembler>()?;
    m.add_function(wrap_pyfunction!(with_message_ids, m)?)?;
    m.add_function(wrap_pyfunction!(seek_position, m)?)?;
    m.add_class::<PyMessageId>()?;
    m.add_class::<PyChunkMessageId>()?;
    compaction::register(m)?;
    offload::register(m)?;
    Ok(())
}
