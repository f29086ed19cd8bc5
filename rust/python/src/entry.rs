//! Entries: decode, parse, encode, stamp one prefix, per-entry metadata, and
//! message ids appended to a decoded table.

use pulsar_entries_core::decode::entry_metadata::{entry_metadata as build, entry_metadata_schema};
use pulsar_entries_core::decode::message_id_columns::with_message_ids as add_ids;
use pulsar_entries_core::kwargs::Kwargs;
use pulsar_entries_core::value::entry_value;
use pulsar_entries_core::value::input;
use pulsar_entries_core::MessageInput;
use pulsar_entries_core::{decode::binary::binary_values, format::encode, proto};
use pulsar_entries_core::{Decoder, EntryView};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;

use crate::convert::{batches_and_schema, dict_to_py, from_py, now_ms, table, with_kwargs};
use crate::errors::{Error, Result};
use crate::processors::{processors_from, ProcessorSpec};

/// Decodes entries (an Arrow table, record batch or stream) into a
/// `pyarrow.Table` of messages; `options` are [`Kwargs::decode`]'s and
/// `columns`.
#[pyfunction]
#[pyo3(signature = (entries, *, processors=None, **options))]
pub fn decode<'py>(
    py: Python<'py>,
    entries: AnyRecordBatch,
    processors: Option<Vec<ProcessorSpec>>,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyAny>> {
    let read = |kw: &mut Kwargs| Ok((kw.decode()?, kw.strings("columns")?));
    let (opts, columns) = with_kwargs("decode", options, read)?;
    let processors = processors_from(processors)?;
    let reader = entries.into_reader()?;
    // Python processors take the GIL back only for the entries they decode.
    let (batches, schema) = py.detach(move || -> Result<_> {
        let mut decoder = Decoder::with_processors(opts, processors);
        if let Some(columns) = &columns {
            decoder.project(&columns.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        for batch in reader {
            decoder.decode_record_batch(&batch?)?;
        }
        Ok((decoder.finish(), decoder.schema()))
    })?;
    table(py, batches, schema)
}

/// Every piece of one entry, for inspection; metadata keeps field presence.
#[pyfunction]
pub fn parse_entry<'py>(py: Python<'py>, data: &[u8]) -> Result<Bound<'py, PyDict>> {
    Ok(dict_to_py(
        py,
        &entry_value(&EntryView::parse(data, false)?),
    )?)
}

/// One message dict, parsed by the core.
fn message_input(obj: &Bound<'_, PyAny>, index: usize) -> Result<MessageInput> {
    Ok(input::message_input(&from_py(obj)?, index)?)
}

/// Encodes messages into one stored entry, as Pulsar's Java producer would;
/// `options` are `batch` and [`Kwargs::encode`]'s.
#[pyfunction]
#[pyo3(signature = (messages, **options))]
#[pyo3(
    text_signature = "(messages, *, batch=None, compression='none', producer_name='pulsar-entries', sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=True, properties=None)"
)]
pub fn encode_entry<'py>(
    py: Python<'py>,
    messages: Vec<Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyBytes>> {
    let inputs = messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_input(m, i))
        .collect::<Result<Vec<_>>>()?;
    let read = |kw: &mut Kwargs| {
        kw.opt_flag("batch")
            .map(|batch| kw.encode(batch, now_ms()))?
    };
    let opts = with_kwargs("encode_entry", options, read)?;
    let bytes = py.detach(|| encode::encode_entry(&inputs, &opts))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Encodes one message as the chunk entries Pulsar's Java producer stores
/// with chunking enabled; `options` are `chunk_size` and [`Kwargs::encode`]'s.
#[pyfunction]
#[pyo3(signature = (message, **options))]
#[pyo3(
    text_signature = "(message, *, chunk_size, compression='none', producer_name='pulsar-entries', sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=True, properties=None)"
)]
pub fn encode_chunked<'py>(
    py: Python<'py>,
    message: Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyList>> {
    let input = message_input(&message, 0)?;
    let read = |kw: &mut Kwargs| {
        Ok((
            kw.required("chunk_size")?,
            kw.encode(Some(false), now_ms())?,
        ))
    };
    let (chunk_size, opts) = with_kwargs("encode_chunked", options, read)?;
    let entries = py.detach(|| encode::encode_chunked(&input, &opts, chunk_size))?;
    Ok(PyList::new(
        py,
        entries.iter().map(|e| PyBytes::new(py, e)),
    )?)
}

/// Adds or replaces an entry's broker-entry-metadata prefix, as the broker's
/// interceptors write it; the checksummed part is kept byte for byte.
#[pyfunction]
#[pyo3(signature = (entry, *, broker_timestamp=None, broker_index=None))]
pub fn set_broker_entry_metadata<'py>(
    py: Python<'py>,
    entry: &[u8],
    broker_timestamp: Option<u64>,
    broker_index: Option<u64>,
) -> Result<Bound<'py, PyBytes>> {
    let index = broker_index;
    let bem = proto::BrokerEntryMetadata {
        broker_timestamp,
        index,
    };
    Ok(PyBytes::new(
        py,
        &encode::set_broker_entry_metadata(entry, &bem)?,
    ))
}

/// One row of metadata per entry, from a binary (or large_binary) Arrow array.
#[pyfunction]
pub fn entry_metadata(py: Python<'_>, data: PyArray) -> Result<Bound<'_, PyAny>> {
    let array = data.array().clone();
    let batch = py.detach(|| -> Result<_, Error> {
        Ok(build(
            binary_values(array.as_ref(), "entry data")?.into_iter(),
        ))
    })?;
    table(py, vec![batch], entry_metadata_schema())
}

/// The table with `message_id` (serialized, binary) and `message_id_str`
/// (Java's text form) appended.
#[pyfunction]
pub fn with_message_ids(py: Python<'_>, table: AnyRecordBatch) -> Result<Bound<'_, PyAny>> {
    let (schema, batches) = batches_and_schema(table)?;
    let (schema, out) = py.detach(|| add_ids(&schema, &batches))?;
    crate::convert::table(py, out, schema)
}
