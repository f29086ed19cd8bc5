//! Kafka RecordBatch v2 and KoP entry writers.

use pulsar_entries_core::options::{kafka_codec, non_negative_ms};
use pulsar_entries_core::processor::kafka::encode::{
    encode_control_batch, encode_kop_entry, encode_record_batch, KafkaBatchOptions,
    KafkaRecordInput,
};
use pulsar_entries_core::value::input::kafka_record;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{from_py, millis_or, now_ms};
use crate::errors::Result;

/// One record dict, parsed by the core.
fn record_input(obj: &Bound<'_, PyAny>, index: usize) -> Result<KafkaRecordInput> {
    Ok(kafka_record(&from_py(obj)?, index)?)
}

/// Encodes one Kafka RecordBatch v2 (magic 2).
#[pyfunction]
#[pyo3(signature = (records, *, base_offset=0, compression="none", base_timestamp=None, log_append_time=false, transactional=false, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1))]
#[pyo3(
    text_signature = "(records, *, base_offset=0, compression='none', base_timestamp=None, log_append_time=False, transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1)"
)]
#[allow(clippy::too_many_arguments)]
pub fn encode_kafka_batch<'py>(
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
pub fn encode_kafka_control_batch<'py>(
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
pub fn kop_entry<'py>(
    py: Python<'py>,
    batches: Vec<Vec<u8>>,
    publish_time: Option<Bound<'py, PyAny>>,
) -> Result<Bound<'py, PyBytes>> {
    let publish_time = non_negative_ms("publish_time", millis_or(publish_time, now_ms() as i64)?)?;
    let refs: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
    Ok(PyBytes::new(py, &encode_kop_entry(&refs, publish_time)?))
}
