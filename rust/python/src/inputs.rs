//! Dicts from Python as the core's inputs: a message to encode, a message a
//! payload processor returned, a Kafka record. Each key is read by its type;
//! a value of the wrong type is a `TypeError` naming the key, a key the input
//! does not have an `InputSchemaError` listing the keys it takes.

use base64::Engine;
use pulsar_entries_core::format::encode::{Key, MessageInput};
use pulsar_entries_core::processor::input::OwnedMessage;
use pulsar_entries_core::processor::kafka::encode::KafkaRecordInput;
use pulsar_entries_core::processor::TimestampType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyDict, PyString};

use crate::errors::{Error, Result};

type Any<'py> = Bound<'py, PyAny>;

/// Each item of dict `v` (input `what`) handed to `field(name, value, bad)`,
/// which answers `false` for a key it does not know; `bad(expected)` is the
/// wrong-type error of that key.
fn read_dict<'py>(
    v: &Any<'py>,
    what: &str,
    not_dict: impl FnOnce() -> String,
    expected: &str,
    mut field: impl FnMut(&str, &Any<'py>, &dyn Fn(&str) -> Error) -> Result<bool>,
) -> Result<()> {
    let d = v
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(not_dict()))?;
    for (k, value) in d.iter() {
        let name: String = k.extract()?;
        let bad = |t: &str| PyTypeError::new_err(format!("{what}[{name:?}] must be {t}")).into();
        if !field(&name, &value, &bad)? {
            let text = format!("{what} has unknown key {name:?}; expected {expected}");
            return Err(Error::Raise("InputSchemaError", text));
        }
    }
    Ok(())
}

/// `None` as `Some(None)`, else `f`'s answer (`None`: the wrong type).
fn opt<'py, T>(v: &Any<'py>, f: impl FnOnce(&Any<'py>) -> Option<T>) -> Option<Option<T>> {
    if v.is_none() {
        Some(None)
    } else {
        f(v).map(Some)
    }
}

/// Bytes: `bytes`, `bytearray` or a buffer with `tobytes()` (a memoryview).
pub fn bytes(v: &Any<'_>) -> Option<Vec<u8>> {
    if let Ok(b) = v.extract::<PyBackedBytes>() {
        return Some(b.to_vec());
    }
    let copied = v.call_method0("tobytes").ok()?;
    copied.extract::<PyBackedBytes>().ok().map(|b| b.to_vec())
}

/// A bytes argument: `bytes`, `bytearray` or a buffer with `tobytes()` (a
/// `memoryview`, copied).
pub struct BytesLike(PyBackedBytes);

impl<'py> FromPyObject<'_, 'py> for BytesLike {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.extract::<PyBackedBytes>() {
            return Ok(Self(b));
        }
        match obj.call_method0("tobytes") {
            Ok(copied) => Ok(Self(copied.extract()?)),
            Err(_) => {
                let name = obj.get_type().name()?;
                Err(PyTypeError::new_err(format!(
                    "expected bytes, bytearray or memoryview, not {name}"
                )))
            }
        }
    }
}

impl std::ops::Deref for BytesLike {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Bytes, or text as its UTF-8 bytes.
fn bytes_or_text(v: &Any<'_>) -> Option<Vec<u8>> {
    text(v).map(String::into_bytes).or_else(|| bytes(v))
}

fn text(v: &Any<'_>) -> Option<String> {
    Some(v.cast::<PyString>().ok()?.to_cow().ok()?.into_owned())
}

fn int<T: for<'a, 'py> FromPyObject<'a, 'py>>(v: &Any<'_>) -> Option<T> {
    v.extract().ok()
}

/// Milliseconds: an int, or a point in time (`timestamp()`).
fn millis(v: &Any<'_>) -> Option<i64> {
    int(v).or_else(|| {
        let secs: f64 = v.call_method0("timestamp").ok()?.extract().ok()?;
        Some((secs * 1000.0).round() as i64)
    })
}

/// Milliseconds from an int or a datetime, for argument `name`.
pub fn millis_of(v: &Any<'_>, name: &str) -> Result<i64> {
    let text = format!("argument '{name}' must be an int (ms) or a datetime");
    millis(v).ok_or_else(|| PyTypeError::new_err(text).into())
}

/// A dict of str to str (`None`: empty).
fn string_pairs(v: &Any<'_>) -> Option<Vec<(String, String)>> {
    if v.is_none() {
        return Some(Vec::new());
    }
    let d = v.cast::<PyDict>().ok()?;
    d.iter()
        .map(|(k, v)| Some((text(&k)?, text(&v)?)))
        .collect()
}

/// Headers: a list of `(str, bytes or None)` pairs, or a dict (`None`: none).
fn headers(v: &Any<'_>) -> Option<Vec<(String, Option<Vec<u8>>)>> {
    if v.is_none() {
        return Some(Vec::new());
    }
    let pair = |p: Any<'_>| -> Option<_> {
        let (k, v): (Any<'_>, Any<'_>) = p.extract().ok()?;
        Some((text(&k)?, opt(&v, bytes_or_text)?))
    };
    match v.cast::<PyDict>() {
        Ok(d) => d.items().iter().map(pair).collect(),
        Err(_) => v.try_iter().ok()?.map(|p| pair(p.ok()?)).collect(),
    }
}

/// An entry's `properties` to encode: a dict of str to str, or `None`.
pub fn entry_properties(v: Option<&Any<'_>>) -> Result<Vec<(String, String)>> {
    let bad = || PyTypeError::new_err("properties must be a dict of str to str").into();
    v.map_or(Some(Vec::new()), string_pairs).ok_or_else(bad)
}

/// One message for `encode_entry` (`messages[index]`).
pub fn message_input(v: &Any<'_>, index: usize) -> Result<MessageInput> {
    let what = format!("messages[{index}]");
    let mut m = MessageInput {
        value: Some(Vec::new()),
        ..Default::default()
    };
    let expected = "value, key, properties, event_time, sequence_id, ordering_key";
    read_dict(
        v,
        &what,
        || format!("{what} must be a dict"),
        expected,
        |name, v, bad| {
            match name {
                "value" => m.value = opt(v, bytes).ok_or_else(|| bad("bytes or None"))?,
                "key" => {
                    let key = |v: &Any<'_>| match text(v) {
                        Some(s) => Some(Key::Text(s)),
                        None => bytes(v).map(Key::Binary),
                    };
                    m.key = opt(v, key).ok_or_else(|| bad("str, bytes or None"))?
                }
                "properties" => {
                    m.properties = string_pairs(v).ok_or_else(|| bad("a dict of str to str"))?
                }
                "event_time" => {
                    m.event_time =
                        opt(v, int).ok_or_else(|| bad("a non-negative int (ms) or None"))?
                }
                "sequence_id" => {
                    m.sequence_id = opt(v, int).ok_or_else(|| bad("a non-negative int or None"))?
                }
                "ordering_key" => {
                    m.ordering_key = opt(v, bytes).ok_or_else(|| bad("bytes or None"))?
                }
                _ => return Ok(false),
            }
            Ok(true)
        },
    )?;
    Ok(m)
}

/// One message a payload processor returned (`message index`). A bytes key
/// is stored base64-encoded with `key_b64_encoded` set, unless the dict says
/// otherwise.
pub fn owned_message(v: &Any<'_>, index: usize) -> Result<OwnedMessage> {
    let what = format!("message {index}");
    let mut m = OwnedMessage::default();
    let mut key_b64: Option<bool> = None;
    let expected = "value, key, key_b64_encoded, ordering_key, properties, headers, event_time, timestamp_type, sequence_id, batch_index, offset, compacted_out";
    let type_name = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let not_dict = || format!("{what} is a {type_name}, not a dict");
    let flag = |v: &Any<'_>| {
        if v.is_none() {
            Some(false)
        } else {
            v.extract().ok()
        }
    };
    read_dict(v, &what, not_dict, expected, |name, v, bad| {
        match name {
            "value" => m.value = opt(v, bytes_or_text).ok_or_else(|| bad("bytes, str or None"))?,
            "key" => {
                let key = |v: &Any<'_>| match text(v) {
                    Some(s) => Some(s),
                    None => {
                        key_b64 = Some(key_b64.unwrap_or(true));
                        Some(base64::engine::general_purpose::STANDARD.encode(bytes(v)?))
                    }
                };
                m.key = opt(v, key).ok_or_else(|| bad("str, bytes or None"))?
            }
            "key_b64_encoded" => key_b64 = Some(flag(v).ok_or_else(|| bad("a bool"))?),
            "ordering_key" => {
                m.ordering_key = opt(v, bytes_or_text).ok_or_else(|| bad("bytes or None"))?
            }
            "properties" => {
                let pairs = string_pairs(v).ok_or_else(|| bad("a dict of str to str"))?;
                m.properties = pairs.into_iter().map(|(k, v)| (k, Some(v))).collect();
            }
            "headers" => {
                let pairs = || bad("a list of (str, bytes or None) pairs");
                m.headers = if v.is_none() {
                    None
                } else {
                    Some(headers(v).ok_or_else(pairs)?)
                }
            }
            "event_time" => {
                m.event_time =
                    opt(v, millis).ok_or_else(|| bad("an int (ms), a datetime or None"))?
            }
            "timestamp_type" => {
                let parse = |v: &Any<'_>| TimestampType::parse(&text(v)?);
                let expected = "'create_time', 'log_append_time' or None";
                m.timestamp_type = opt(v, parse).ok_or_else(|| bad(expected))?
            }
            "sequence_id" => m.sequence_id = opt(v, int).ok_or_else(|| bad("an int or None"))?,
            "batch_index" => m.batch_index = opt(v, int).ok_or_else(|| bad("an int or None"))?,
            "offset" => m.offset = opt(v, int).ok_or_else(|| bad("an int or None"))?,
            "compacted_out" => m.compacted_out = flag(v).ok_or_else(|| bad("a bool"))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    m.key_b64_encoded = key_b64.unwrap_or(false);
    Ok(m)
}

/// One Kafka record (`records[index]`).
pub fn kafka_record(v: &Any<'_>, index: usize) -> Result<KafkaRecordInput> {
    let what = format!("records[{index}]");
    let mut r = KafkaRecordInput::default();
    let expected = "key, value, headers, timestamp, offset_delta";
    read_dict(
        v,
        &what,
        || format!("{what} must be a dict"),
        expected,
        |name, v, bad| {
            match name {
                "key" => r.key = opt(v, bytes_or_text).ok_or_else(|| bad("bytes, str or None"))?,
                "value" => {
                    r.value = opt(v, bytes_or_text).ok_or_else(|| bad("bytes, str or None"))?
                }
                "timestamp" => {
                    let text = "expected an int (milliseconds) or a datetime";
                    r.timestamp = opt(v, millis).ok_or_else(|| PyTypeError::new_err(text))?
                }
                "offset_delta" => {
                    r.offset_delta = opt(v, int).ok_or_else(|| bad("an int or None"))?
                }
                "headers" => {
                    let pairs = || bad("a list of (str, bytes or None) pairs");
                    r.headers = headers(v).ok_or_else(pairs)?
                }
                _ => return Ok(false),
            }
            Ok(true)
        },
    )?;
    Ok(r)
}
