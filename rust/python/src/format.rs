//! Entries and their pieces: parsing and encoding entries (Pulsar's and
//! Kafka-on-Pulsar's), message ids, the helpers a payload processor's
//! context offers, broker stamping, the seeks and message-id columns.

use arrow_array::RecordBatch;
use pulsar_entries_core::decode::message_id_columns::with_message_ids as add_ids;
use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::format::compression::Codec;
use pulsar_entries_core::format::encode::{self, EncodeOptions};
use pulsar_entries_core::format::frame::EntryView;
use pulsar_entries_core::format::message_id::{AnyMessageId, IdParts};
use pulsar_entries_core::format::metadata::MessageMetadataView;
use pulsar_entries_core::processor::api::{Message, MessageProperties};
use pulsar_entries_core::processor::input::record_at;
use pulsar_entries_core::processor::kafka::codec::KafkaCodec;
use pulsar_entries_core::processor::kafka::encode::{self as kafka, KafkaBatchOptions};
use pulsar_entries_core::processor::{self, builtin_property};
use pulsar_entries_core::proto::BrokerEntryMetadata;
use pulsar_entries_core::seek::{self, EntryTable, Position};
use pulsar_entries_core::stamp::{clock_ms, non_negative_ms, stamp_batches, Timestamps};
use pulsar_entries_core::Result as CoreResult;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::input::AnyRecordBatch;

use crate::convert::{batches_and_schema, Table};
use crate::errors::{detach, Result};
use crate::inputs::{entry_properties, kafka_record, message_input, BytesLike};
use crate::options::{count, Named};

type Dict<'py> = Bound<'py, PyDict>;

/// `[(key, value), ...]`, or `None` when empty.
fn pairs<'a>(
    py: Python<'_>,
    it: impl Iterator<Item = (&'a str, &'a str)>,
) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, it)
}

/// MessageMetadata as a dict of its present fields: compression by codec
/// name, bytes as bytes, string maps as lists of pairs.
fn metadata_dict<'py>(py: Python<'py>, md: &MessageMetadataView<'_>) -> PyResult<Dict<'py>> {
    let d = PyDict::new(py);
    d.set_item("producer_name", md.producer_name)?;
    d.set_item("sequence_id", md.sequence_id)?;
    d.set_item("publish_time", md.publish_time)?;
    if !md.properties.is_empty() {
        d.set_item("properties", pairs(py, md.properties.iter())?)?;
    }
    macro_rules! present {
        ($($field:ident),*) => { $(if let Some(v) = md.$field { d.set_item(stringify!($field), v)?; })* };
    }
    present!(replicated_from, partition_key);
    let replicate_to: Vec<&str> = md.replicate_to().collect();
    if !replicate_to.is_empty() {
        d.set_item("replicate_to", replicate_to)?;
    }
    if let Some(c) = md.compression {
        let name = Codec::from_proto(c).map_or_else(|| c.to_string(), |c| c.name().into());
        d.set_item("compression", name)?;
    }
    present!(uncompressed_size, num_messages_in_batch, event_time);
    let keys = md.encryption_keys().map(|k| {
        let key = PyDict::new(py);
        key.set_item("key", k.key)?;
        key.set_item("value", k.value)?;
        key.set_item("metadata", pairs(py, k.metadata.iter())?)?;
        Ok(key)
    });
    let keys = keys.collect::<PyResult<Vec<_>>>()?;
    if !keys.is_empty() {
        d.set_item("encryption_keys", keys)?;
    }
    present!(
        encryption_algo,
        encryption_param,
        schema_version,
        partition_key_b64_encoded
    );
    present!(
        ordering_key,
        deliver_at_time,
        marker_type,
        txnid_least_bits,
        txnid_most_bits
    );
    present!(
        highest_sequence_id,
        null_value,
        uuid,
        num_chunks_from_msg,
        total_chunk_msg_size
    );
    present!(chunk_id, null_partition_key);
    let compacted: Vec<i32> = md.compacted_batch_indexes().collect();
    if !compacted.is_empty() {
        d.set_item("compacted_batch_indexes", compacted)?;
    }
    present!(schema_id);
    Ok(d)
}

/// A processor's message as a dict (what the `EntryContext` helpers give).
fn message_dict<'py>(py: Python<'py>, m: &Message<'_>) -> PyResult<Dict<'py>> {
    let props = PyDict::new(py);
    match &m.properties {
        MessageProperties::Pulsar(p) => p.iter().try_for_each(|(k, v)| props.set_item(k, v))?,
        MessageProperties::Pairs(pairs) => pairs
            .iter()
            .try_for_each(|(k, v)| props.set_item(k.as_ref(), v.as_deref()))?,
        MessageProperties::Headers(headers) => headers.iter().try_for_each(|(k, v)| {
            let v = v.map(|v| String::from_utf8_lossy(v).into_owned());
            props.set_item(String::from_utf8_lossy(k), v)
        })?,
    }
    let d = PyDict::new(py);
    d.set_item("batch_index", m.batch_index)?;
    d.set_item("value", m.value)?;
    d.set_item("key", m.key.as_deref())?;
    d.set_item("key_b64_encoded", m.key_b64_encoded)?;
    d.set_item("ordering_key", m.ordering_key)?;
    d.set_item("properties", props)?;
    d.set_item("event_time", m.event_time)?;
    d.set_item("sequence_id", m.sequence_id)?;
    d.set_item("compacted_out", m.compacted_out)?;
    Ok(d)
}

// ---------------------------------------------------------------- entries

/// Every piece of one entry, for inspection; metadata keeps field presence.
#[pyfunction]
pub fn parse_entry<'py>(py: Python<'py>, data: BytesLike) -> Result<Dict<'py>> {
    let entry = EntryView::parse(&data, false)?;
    let d = PyDict::new(py);
    let bem = entry.broker_entry_metadata.map(|b| {
        let d = PyDict::new(py);
        d.set_item("broker_timestamp", b.broker_timestamp)?;
        d.set_item("index", b.index)?;
        PyResult::Ok(d)
    });
    d.set_item("broker_entry_metadata", bem.transpose()?)?;
    let checksum = entry.checksum.map(|stored| {
        let (d, computed) = (PyDict::new(py), entry.computed_checksum());
        d.set_item("stored", stored)?;
        d.set_item("computed", computed)?;
        d.set_item("valid", stored == computed)?;
        PyResult::Ok(d)
    });
    d.set_item("checksum", checksum.transpose()?)?;
    let md = &entry.metadata;
    d.set_item("metadata", metadata_dict(py, md)?)?;
    d.set_item(
        "metadata_size",
        entry.payload_offset - entry.metadata_offset,
    )?;
    d.set_item("is_batch", md.is_batch())?;
    d.set_item("num_messages", md.num_messages())?;
    d.set_item("encrypted", md.is_encrypted())?;
    d.set_item("payload_offset", entry.payload_offset)?;
    d.set_item("payload", entry.payload)?;
    Ok(d)
}

/// The encode options from the keywords (`None`: the core's default).
#[allow(clippy::too_many_arguments)]
fn encode_options(
    batch: Option<bool>,
    compression: Option<Named<Codec>>,
    producer_name: Option<String>,
    sequence_id: Option<i64>,
    publish_time: Option<i64>,
    broker_timestamp: Option<i64>,
    broker_index: Option<i64>,
    checksum: Option<bool>,
    properties: Option<&Bound<'_, PyAny>>,
) -> Result<EncodeOptions> {
    let d = EncodeOptions::default();
    Ok(EncodeOptions {
        batch,
        compression: compression.map_or(d.compression, |c| c.0),
        producer_name: producer_name.unwrap_or(d.producer_name),
        sequence_id: count("sequence_id", sequence_id)?.unwrap_or(d.sequence_id),
        publish_time: count("publish_time", publish_time)?.unwrap_or_else(clock_ms),
        broker_timestamp: count("broker_timestamp", broker_timestamp)?,
        broker_index: count("broker_index", broker_index)?,
        checksum: checksum.unwrap_or(d.checksum),
        properties: entry_properties(properties)?,
    })
}

/// Encodes messages into one stored entry, as Pulsar's Java producer would.
#[pyfunction]
#[pyo3(signature = (messages, *, batch=None, compression=None, producer_name=None, sequence_id=None, publish_time=None, broker_timestamp=None, broker_index=None, checksum=None, properties=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_entry(
    messages: Vec<Bound<'_, PyAny>>,
    batch: Option<bool>,
    compression: Option<Named<Codec>>,
    producer_name: Option<String>,
    sequence_id: Option<i64>,
    publish_time: Option<i64>,
    broker_timestamp: Option<i64>,
    broker_index: Option<i64>,
    checksum: Option<bool>,
    properties: Option<Bound<'_, PyAny>>,
) -> Result<Vec<u8>> {
    let inputs = messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_input(m, i))
        .collect::<Result<Vec<_>>>()?;
    let opts = encode_options(
        batch,
        compression,
        producer_name,
        sequence_id,
        publish_time,
        broker_timestamp,
        broker_index,
        checksum,
        properties.as_ref(),
    )?;
    Ok(encode::encode_entry(&inputs, &opts)?)
}

/// Encodes one message as the chunk entries Pulsar's Java producer stores with chunking.
#[pyfunction]
#[pyo3(signature = (message, *, chunk_size, compression=None, producer_name=None, sequence_id=None, publish_time=None, broker_timestamp=None, broker_index=None, checksum=None, properties=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_chunked(
    message: Bound<'_, PyAny>,
    chunk_size: usize,
    compression: Option<Named<Codec>>,
    producer_name: Option<String>,
    sequence_id: Option<i64>,
    publish_time: Option<i64>,
    broker_timestamp: Option<i64>,
    broker_index: Option<i64>,
    checksum: Option<bool>,
    properties: Option<Bound<'_, PyAny>>,
) -> Result<Vec<Vec<u8>>> {
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
        properties.as_ref(),
    )?;
    Ok(encode::encode_chunked(&input, &opts, chunk_size)?)
}

/// Adds or replaces an entry's broker-entry-metadata prefix, as the broker's
/// interceptors write it; the checksummed part is kept byte for byte.
#[pyfunction]
#[pyo3(signature = (entry, *, broker_timestamp=None, broker_index=None))]
pub fn set_broker_entry_metadata(
    entry: BytesLike,
    broker_timestamp: Option<i64>,
    broker_index: Option<i64>,
) -> Result<Vec<u8>> {
    let bem = BrokerEntryMetadata {
        broker_timestamp: count("broker_timestamp", broker_timestamp)?,
        index: count("broker_index", broker_index)?,
    };
    Ok(encode::set_broker_entry_metadata(&entry, &bem)?)
}

/// A message id's bytes (Java's MessageId.toByteArray) from its parts.
#[pyfunction]
pub fn serialize_message_id(parts: IdParts) -> Vec<u8> {
    AnyMessageId::from_parts(parts).serialize()
}

/// A message id's parts from Java's MessageId bytes.
#[pyfunction]
pub fn deserialize_message_id(data: BytesLike) -> Result<IdParts> {
    Ok(AnyMessageId::deserialize(&data)?.parts())
}

/// The table with `message_id` (serialized) and `message_id_str` (Java's text) appended.
#[pyfunction]
pub fn with_message_ids(py: Python<'_>, table: AnyRecordBatch) -> Result<Table> {
    let (schema, batches) = batches_and_schema(table)?;
    let (schema, out) = detach(py, "with_message_ids", "PulsarEntriesError", || {
        add_ids(&schema, &batches)
    })??;
    Ok(Table(out, schema))
}

// ---------------------------------------------------------------- payload processors

/// A built-in processor's (name, entry property), or None.
#[pyfunction]
pub fn builtin_processor(name: &str) -> Result<Option<(String, Option<String>)>> {
    Ok(builtin_property(name)?)
}

fn metadata(data: &[u8]) -> CoreResult<MessageMetadataView<'_>> {
    MessageMetadataView::parse(data, 0)
}

/// MessageMetadata as a dict of its present fields.
#[pyfunction]
pub fn parse_metadata<'py>(py: Python<'py>, metadata: BytesLike) -> Result<Dict<'py>> {
    Ok(metadata_dict(py, &self::metadata(&metadata)?)?)
}

/// The payload as one message with the entry's key, properties and times.
#[pyfunction]
pub fn single_message<'py>(
    py: Python<'py>,
    metadata: BytesLike,
    payload: BytesLike,
) -> Result<Dict<'py>> {
    let md = self::metadata(&metadata)?;
    Ok(message_dict(py, &processor::single_message(&md, &payload))?)
}

/// Pulsar's own split of a payload (batch records, or one message).
#[pyfunction]
pub fn pulsar_messages<'py>(
    py: Python<'py>,
    metadata: BytesLike,
    payload: BytesLike,
) -> Result<Vec<Dict<'py>>> {
    let md = self::metadata(&metadata)?;
    let messages = processor::pulsar_messages(&md, &payload)?;
    Ok(messages
        .iter()
        .map(|m| message_dict(py, m))
        .collect::<PyResult<_>>()?)
}

/// A message from `[u32 size][SingleMessageMetadata][value]` bytes.
#[pyfunction]
pub fn message_at<'py>(
    py: Python<'py>,
    metadata: BytesLike,
    index: i32,
    record: BytesLike,
) -> Result<Dict<'py>> {
    let md = self::metadata(&metadata)?;
    let record = record_at(index, &record)?;
    Ok(message_dict(py, &processor::batch_message(&md, &record))?)
}

// ---------------------------------------------------------------- Kafka

/// Encodes one Kafka RecordBatch v2 (magic 2).
#[pyfunction]
#[pyo3(signature = (records, *, base_offset=None, compression=None, base_timestamp=None, log_append_time=None, transactional=None, producer_id=None, producer_epoch=None, base_sequence=None, partition_leader_epoch=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_kafka_batch(
    records: Vec<Bound<'_, PyAny>>,
    base_offset: Option<i64>,
    compression: Option<Named<KafkaCodec>>,
    base_timestamp: Option<Bound<'_, PyAny>>,
    log_append_time: Option<bool>,
    transactional: Option<bool>,
    producer_id: Option<i64>,
    producer_epoch: Option<i16>,
    base_sequence: Option<i32>,
    partition_leader_epoch: Option<i32>,
) -> Result<Vec<u8>> {
    let inputs = records
        .iter()
        .enumerate()
        .map(|(i, r)| kafka_record(r, i))
        .collect::<Result<Vec<_>>>()?;
    let d = KafkaBatchOptions::DEFAULT;
    let base_timestamp = match base_timestamp {
        Some(t) => crate::inputs::millis_of(&t, "base_timestamp")?,
        None => clock_ms() as i64,
    };
    let opts = KafkaBatchOptions {
        base_offset: base_offset.unwrap_or(d.base_offset),
        compression: compression.map_or(d.compression, |c| c.0),
        base_timestamp,
        log_append_time: log_append_time.unwrap_or(d.log_append_time),
        transactional: transactional.unwrap_or(d.transactional),
        control: false,
        producer_id: producer_id.unwrap_or(d.producer_id),
        producer_epoch: producer_epoch.unwrap_or(d.producer_epoch),
        base_sequence: base_sequence.unwrap_or(d.base_sequence),
        partition_leader_epoch: partition_leader_epoch.unwrap_or(d.partition_leader_epoch),
    };
    Ok(kafka::encode_record_batch(&inputs, &opts)?)
}

/// Encodes an end-transaction control batch (a COMMIT or ABORT marker).
#[pyfunction]
#[pyo3(signature = (commit, *, producer_id, producer_epoch=0, base_offset=0, timestamp=None, coordinator_epoch=0))]
pub fn encode_kafka_control_batch(
    commit: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    timestamp: Option<i64>,
    coordinator_epoch: i32,
) -> Result<Vec<u8>> {
    let timestamp = timestamp.unwrap_or(clock_ms() as i64);
    let (epoch, coordinator) = (producer_epoch, coordinator_epoch);
    Ok(kafka::encode_control_batch(
        commit,
        producer_id,
        epoch,
        base_offset,
        timestamp,
        coordinator,
    )?)
}

/// Wraps Kafka record batches into a stored entry as KoP's `kafka` entry format does.
#[pyfunction]
#[pyo3(signature = (batches, *, publish_time=None))]
pub fn encode_kop_entry(batches: Vec<BytesLike>, publish_time: Option<i64>) -> Result<Vec<u8>> {
    let refs: Vec<&[u8]> = batches.iter().map(|b| b.as_ref()).collect();
    let publish_time = match publish_time {
        Some(t) => non_negative_ms("publish_time", t)?,
        None => clock_ms(),
    };
    Ok(kafka::encode_kop_entry(&refs, publish_time)?)
}

// ---------------------------------------------------------------- broker stamping and seeks

/// `timestamps`: one time for every entry, one per entry, or `None` (the clock).
#[derive(FromPyObject)]
pub enum Times {
    Fixed(i64),
    PerEntry(Vec<i64>),
}

/// The entries with broker entry metadata stamped as the broker's interceptors would.
#[pyfunction]
#[pyo3(signature = (entries, *, start_index=-1, timestamps=None, index=true, timestamp=true))]
pub fn stamp(
    py: Python<'_>,
    entries: AnyRecordBatch,
    start_index: i64,
    timestamps: Option<Times>,
    index: bool,
    timestamp: bool,
) -> Result<Table> {
    let times = match timestamps {
        None => Timestamps::Clock,
        Some(Times::Fixed(ms)) => Timestamps::fixed(ms)?,
        Some(Times::PerEntry(ms)) => Timestamps::per_entry(&ms)?,
    };
    let mut stamper = Stamper::new(start_index, Interceptors { timestamp, index })?;
    let (schema, batches) = batches_and_schema(entries)?;
    let (schema, out) = detach(py, "stamp", "PulsarEntriesError", || {
        stamp_batches(&schema, &batches, &mut stamper, &times)
    })??;
    Ok(Table(out, schema))
}

/// `(row, ledger, entry, batch index, entries read)`.
type Found = (usize, i64, i64, Option<i32>, usize);

fn found(p: Position) -> Found {
    (
        p.row,
        p.ledger_id,
        p.entry_id,
        p.batch_index,
        p.entries_read,
    )
}

fn seek_with(
    entries: AnyRecordBatch,
    f: impl FnOnce(&EntryTable) -> CoreResult<Position>,
) -> Result<Found> {
    let batches: Vec<RecordBatch> = batches_and_schema(entries)?.1;
    Ok(found(f(&EntryTable::new(&batches)?)?))
}

/// Pulsar's seek by timestamp (ms): (row, ledger, entry, batch index, entries read).
#[pyfunction]
pub fn find_position_by_time(entries: AnyRecordBatch, time: i64) -> Result<Found> {
    seek_with(entries, |t| seek::find_position_by_time(t, time))
}

/// Kafka-on-Pulsar's seek by offset: (row, ledger, entry, batch index, entries read).
#[pyfunction]
pub fn find_position_by_offset(entries: AnyRecordBatch, offset: i64) -> Result<Found> {
    seek_with(entries, |t| seek::find_position_by_offset(t, offset))
}
