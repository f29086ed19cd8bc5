//! Kafka RecordBatch v2 and KoP entry writers.

use pulsar_entries_core::options::{kafka_codec, non_negative_ms};
use pulsar_entries_core::processor::kafka::encode::{
    encode_control_batch, encode_kop_entry, encode_record_batch, KafkaBatchOptions,
    KafkaRecordInput,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use crate::convert::{millis, millis_or, now_ms};
use crate::errors::{Class, Result};

fn bytes_or_text(v: &Bound<'_, PyAny>) -> Option<Option<Vec<u8>>> {
    if v.is_none() {
        Some(None)
    } else if let Ok(s) = v.cast::<PyString>() {
        s.to_cow().ok().map(|s| Some(s.as_bytes().to_vec()))
    } else {
        v.cast::<PyBytes>()
            .ok()
            .map(|b| Some(b.as_bytes().to_vec()))
    }
}

fn record_input(obj: &Bound<'_, PyAny>, index: usize) -> Result<KafkaRecordInput> {
    let dict = obj
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("records[{index}] must be a dict")))?;
    let mut r = KafkaRecordInput::default();
    for (k, v) in dict.iter() {
        let name: String = k.extract()?;
        let bad =
            |what: &str| PyTypeError::new_err(format!("records[{index}][{name:?}] must be {what}"));
        match name.as_str() {
            "key" => r.key = bytes_or_text(&v).ok_or_else(|| bad("bytes, str or None"))?,
            "value" => r.value = bytes_or_text(&v).ok_or_else(|| bad("bytes, str or None"))?,
            "timestamp" => r.timestamp = if v.is_none() { None } else { Some(millis(&v)?) },
            "offset_delta" => r.offset_delta = v.extract().map_err(|_| bad("an int or None"))?,
            "headers" if v.is_none() => {}
            "headers" => {
                let items: Vec<Bound<'_, PyAny>> = match v.cast::<PyDict>() {
                    Ok(d) => d.items().iter().collect(),
                    Err(_) => v.try_iter()?.collect::<PyResult<_>>()?,
                };
                for item in items {
                    let pair = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2);
                    let pair = pair.ok_or_else(|| bad("a list of (str, bytes or None) pairs"))?;
                    let key: String = pair.get_item(0)?.extract().map_err(|_| bad("(str, bytes) pairs"))?;
                    let value = bytes_or_text(&pair.get_item(1)?).ok_or_else(|| bad("(str, bytes or None) pairs"))?;
                    r.headers.push((key, value));
                }
            }
            _ => return Err(Class::InputSchema.err(format!(
                "records[{index}] has unknown key {name:?}; expected key, value, headers, timestamp, offset_delta"
            ))),
        }
    }
    Ok(r)
}

/// Encodes one Kafka RecordBatch v2 (magic 2).
#[pyfunction]
#[pyo3(signature = (records, *, base_offset=0, compression="none", base_timestamp=None, log_append_time=false, transactional=false, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1))]
#[pyo3(
    text_signature = "(records, *, base_offset=0, compression='none', base_timestamp=None, log_append_time=False, transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1)"
)]
#[allow(clippy::too_many_arguments)]
fn encode_kafka_batch<'py>(
    py: Python<'py>,
    records: Vec<Bound<'py, PyAny>>,
    base_offset: i64,
    compression: &str,
    base_timestamp: Option<Bound<'py, PyAny>>,
    log_append_time: bool,
    transactional: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    partition_leader_epoch: i32,
) -> Result<Bound<'py, PyBytes>> {
    let inputs = records
        .iter()
        .enumerate()
        .map(|(i, r)| record_input(r, i))
        .collect::<Result<Vec<_>>>()?;
    let opts = KafkaBatchOptions {
        base_offset,
        partition_leader_epoch,
        compression: kafka_codec(compression)?,
        log_append_time,
        transactional,
        control: false,
        producer_id,
        producer_epoch,
        base_sequence,
        base_timestamp: millis_or(base_timestamp, now_ms() as i64)?,
    };
    let bytes = py.detach(|| encode_record_batch(&inputs, &opts))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Encodes an end-transaction control batch (a COMMIT or ABORT marker).
#[pyfunction]
#[pyo3(signature = (commit, *, producer_id, producer_epoch=0, base_offset=0, timestamp=None, coordinator_epoch=0))]
fn encode_kafka_control_batch<'py>(
    py: Python<'py>,
    commit: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    timestamp: Option<Bound<'py, PyAny>>,
    coordinator_epoch: i32,
) -> Result<Bound<'py, PyBytes>> {
    let ts = millis_or(timestamp, now_ms() as i64)?;
    let (pid, epoch, coordinator) = (producer_id, producer_epoch, coordinator_epoch);
    let bytes = encode_control_batch(commit, pid, epoch, base_offset, ts, coordinator)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Wraps Kafka record batches into a stored entry as KoP's `kafka` entry
/// format does (no checksum, property `entry.format=kafka`).
#[pyfunction(name = "encode_kop_entry")]
#[pyo3(signature = (batches, *, publish_time=None))]
fn kop_entry<'py>(
    py: Python<'py>,
    batches: Vec<Vec<u8>>,
    publish_time: Option<Bound<'py, PyAny>>,
) -> Result<Bound<'py, PyBytes>> {
    let publish_time = non_negative_ms("publish_time", millis_or(publish_time, now_ms() as i64)?)?;
    let refs: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
    Ok(PyBytes::new(py, &encode_kop_entry(&refs, publish_time)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encode_kafka_batch, m)?)?;
    m.add_function(wrap_pyfunction!(encode_kafka_control_batch, m)?)?;
    m.add_function(wrap_pyfunction!(kop_entry, m)?)?;
    Ok(())
}
