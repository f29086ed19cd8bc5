//! The core's functions over plain values and tables ([`calls::FUNCTIONS`]):
//! each one a builtin of `_native` declared here by its name, the signature
//! Python shows and its summary, and run by one function: the arguments
//! become core values (an Arrow table without a copy), the GIL is released
//! while the core runs, and the answer comes back as Python objects.

use pulsar_entries_core::calls;
use pulsar_entries_core::value::Value;
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::convert::{from_py, to_py};
use crate::errors::{detach, Result};

/// Calls the core's function `name`.
fn run(
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> Result<Py<PyAny>> {
    let py = args.py();
    let f = calls::find(name)
        .ok_or_else(|| PyImportError::new_err(format!("no core function {name}")))?;
    let given: Vec<_> = args.iter().collect();
    let args = given.iter().map(from_py).collect::<PyResult<Vec<_>>>()?;
    let keywords = kwargs.map_or(Ok(Value::None), |d| from_py(d.as_any()))?;
    let out = detach(py, name, "PulsarEntriesError", || {
        calls::call(f, &args, &keywords)
    })??;
    Ok(to_py(py, &out)?.unbind())
}

/// Declares each function (`/// summary` then `name "(signature)";`) and
/// [`register`], which adds them all and checks that they are exactly the
/// core's.
macro_rules! functions {
    ($($(#[$doc:meta])* $name:ident $signature:literal;)*) => {
        $(
            $(#[$doc])*
            #[pyfunction]
            #[pyo3(signature = (*args, **kwargs), text_signature = $signature)]
            fn $name(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> Result<Py<PyAny>> {
                run(stringify!($name), args, kwargs)
            }
        )*

        /// Adds every function to the module; an import error when the list
        /// here and the core's differ.
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            let names = [$(stringify!($name)),*];
            let core: Vec<_> = calls::FUNCTIONS.iter().map(|f| f.name).collect();
            if names.len() != core.len() || names.iter().any(|n| !core.contains(n)) {
                let text = format!("_native declares {names:?}, the core has {core:?}");
                return Err(PyImportError::new_err(text));
            }
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

functions! {
    /// Every piece of one entry, for inspection; metadata keeps field presence.
    parse_entry "(data)";
    /// Encodes messages into one stored entry, as Pulsar's Java producer would.
    encode_entry "(messages, *, batch=None, compression='none', producer_name='pulsar-entries', sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=True, properties=None)";
    /// Encodes one message as the chunk entries Pulsar's Java producer stores with chunking.
    encode_chunked "(message, *, chunk_size, compression='none', producer_name='pulsar-entries', sequence_id=0, publish_time=None, broker_timestamp=None, broker_index=None, checksum=True, properties=None)";
    /// Adds or replaces an entry's broker-entry-metadata prefix, as the broker's interceptors write
    /// it; the checksummed part is kept byte for byte.
    set_broker_entry_metadata "(entry, *, broker_timestamp=None, broker_index=None)";
    /// A message id's bytes (Java's MessageId.toByteArray) from its parts.
    serialize_message_id "(parts)";
    /// A message id's parts from Java's MessageId bytes.
    deserialize_message_id "(data)";
    /// A built-in processor's (name, entry property), or None.
    builtin_processor "(name)";
    /// MessageMetadata as a dict of its present fields.
    parse_metadata "(metadata)";
    /// The payload as one message with the entry's key, properties and times.
    single_message "(metadata, payload)";
    /// Pulsar's own split of a payload (batch records, or one message).
    pulsar_messages "(metadata, payload)";
    /// A message from `[u32 size][SingleMessageMetadata][value]` bytes.
    message_at "(metadata, index, record)";
    /// Encodes one Kafka RecordBatch v2 (magic 2).
    encode_kafka_batch "(records, *, base_offset=0, compression='none', base_timestamp=None, log_append_time=False, transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1)";
    /// Encodes an end-transaction control batch (a COMMIT or ABORT marker).
    encode_kafka_control_batch "(commit, *, producer_id, producer_epoch=0, base_offset=0, timestamp=None, coordinator_epoch=0)";
    /// Wraps Kafka record batches into a stored entry as KoP's `kafka` entry format does.
    encode_kop_entry "(batches, *, publish_time=None)";
    /// The entries with broker entry metadata stamped as the broker's interceptors would.
    stamp "(entries, *, start_index=-1, timestamps=None, index=True, timestamp=True)";
    /// Pulsar's seek by timestamp (ms): (row, ledger, entry, batch index, entries read).
    find_position_by_time "(entries, time)";
    /// Kafka-on-Pulsar's seek by offset: (row, ledger, entry, batch index, entries read).
    find_position_by_offset "(entries, offset)";
    /// The table with `message_id` (serialized) and `message_id_str` (Java's text) appended.
    with_message_ids "(table)";
}
