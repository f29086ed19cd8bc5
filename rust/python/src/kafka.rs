//! Kafka RecordBatch v2 and KoP entry writers; the times arrive as
//! milliseconds (`pulsar_entries.kafka` converts them).

use pulsar_entries_core::options::non_negative_ms;
use pulsar_entries_core::processor::kafka::encode::{
    encode_control_batch, encode_kop_entry, encode_record_batch, KafkaRecordInput,
};
use pulsar_entries_core::value::input::kafka_record;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{from_py, now_ms, with_kwargs};
use crate::errors::Result;

/// One record dict, parsed by the core.
fn record_input(obj: &Bound<'_, PyAny>, index: usize) -> Result<KafkaRecordInput> {
    Ok(kafka_record(&from_py(obj)?, index)?)
}

/// Encodes one Kafka RecordBatch v2 (magic 2); `options` are
/// [`Kwargs::kafka_batch`]'s.
#[pyfunction]
#[pyo3(signature = (records, **options))]
pub fn encode_kafka_batch<'py>(
    py: Python<'py>,
    records: Vec<Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyBytes>> {
    let inputs = records
        .iter()
        .enumerate()
        .map(|(i, r)| record_input(r, i))
        .collect::<Result<Vec<_>>>()?;
    let now = now_ms() as i64;
    let opts = with_kwargs("encode_kafka_batch", options, |kw| kw.kafka_batch(now))?;
    let bytes = py.detach(|| encode_record_batch(&inputs, &opts))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Encodes an end-transaction control batch (a COMMIT or ABORT marker).
#[pyfunction]
#[pyo3(signature = (commit, *, producer_id, producer_epoch=0, base_offset=0, timestamp=None, coordinator_epoch=0))]
pub fn encode_kafka_control_batch<'py>(
    py: Python<'py>,
    commit: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    timestamp: Option<i64>,
    coordinator_epoch: i32,
) -> Result<Bound<'py, PyBytes>> {
    let ts = timestamp.unwrap_or(now_ms() as i64);
    let (pid, epoch, coordinator) = (producer_id, producer_epoch, coordinator_epoch);
    let bytes = encode_control_batch(commit, pid, epoch, base_offset, ts, coordinator)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Wraps Kafka record batches into a stored entry as KoP's `kafka` entry
/// format does (no checksum, property `entry.format=kafka`).
#[pyfunction(name = "encode_kop_entry")]
#[pyo3(signature = (batches, *, publish_time=None))]
pub fn kop_entry<'py>(
    py: Python<'py>,
    batches: Vec<Vec<u8>>,
    publish_time: Option<i64>,
) -> Result<Bound<'py, PyBytes>> {
    let publish_time = non_negative_ms("publish_time", publish_time.unwrap_or(now_ms() as i64))?;
    let refs: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
    Ok(PyBytes::new(py, &encode_kop_entry(&refs, publish_time)?))
}
