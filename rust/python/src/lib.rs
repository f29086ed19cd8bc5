//! `pulsar_entries._native`: the thin PyO3 layer over `pulsar-entries-core`.
//!
//! Arrow data crosses the boundary through the Arrow C stream interface
//! (pyo3-arrow), so input entries and output messages are never copied
//! between Python and Rust. The GIL is released while entries are decoded.

mod offload;

use std::time::{SystemTime, UNIX_EPOCH};

use pulsar_entries_core::compression::DEFAULT_MAX_UNCOMPRESSED_SIZE;
use pulsar_entries_core::decode::MAX_UNCOMPRESSED_SIZE_CAP;
use pulsar_entries_core::{
    encode_entry as core_encode, message_schema, Codec, DecodeOptions, Decoder, EncodeOptions,
    EntryError, EntryView, Key, MessageInput,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyArray, PyTable};

pyo3::create_exception!(
    _native,
    EntryFormatError,
    PyValueError,
    "An entry's bytes are not a valid Pulsar stored entry."
);

fn format_error(e: EntryError) -> PyErr {
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
#[pyo3(signature = (entries, *, verify_checksum=true, keep_markers=false, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE))]
fn decode<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    verify_checksum: bool,
    keep_markers: bool,
    max_uncompressed_size: usize,
) -> PyArrowResult<Bound<'py, PyAny>> {
    let opts = decode_options(verify_checksum, keep_markers, max_uncompressed_size)?;
    let reader = entries.into_reader()?;
    let batches = py.detach(move || -> Result<_, String> {
        let mut decoder = Decoder::new(opts);
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

fn now_ms() -> u64 {
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
    let opts = EncodeOptions {
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
    };
    let bytes = py
        .detach(|| core_encode(&inputs, &opts))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &bytes))
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
    m.add(
        "DEFAULT_MAX_UNCOMPRESSED_SIZE",
        DEFAULT_MAX_UNCOMPRESSED_SIZE,
    )?;
    m.add("EntryFormatError", m.py().get_type::<EntryFormatError>())?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(parse_entry, m)?)?;
    m.add_function(wrap_pyfunction!(encode_entry, m)?)?;
    m.add_function(wrap_pyfunction!(entry_metadata, m)?)?;
    offload::register(m)?;
    Ok(())
}
