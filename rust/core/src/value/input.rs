//! The other direction: inputs a binding hands over as a [`Value`] tree (one
//! generic conversion of a Python dict, say) parsed into the core's input
//! types, every error naming the bad field: messages to encode, messages a
//! payload processor returns, Kafka records.

use std::borrow::Cow;

use base64::Engine as _;

use super::{Dict, Value};
use crate::format::encode::{Key, MessageInput};
use crate::processor::input::OwnedMessage;
use crate::processor::kafka::encode::KafkaRecordInput;
use crate::processor::TimestampType;

/// Why an input value was refused. `Type` is a value of the wrong type (a
/// binding raises its `TypeError`); `UnknownKey` a dict key the input does
/// not have (an input-schema error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Type(String),
    #[error("{0}")]
    UnknownKey(String),
    /// An int outside the range its option takes (a negative count, say).
    #[error("{0}")]
    Range(String),
}

impl InputError {
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            InputError::Range(_) => crate::error::ErrorKind::Options,
            _ => crate::error::ErrorKind::InputSchema,
        }
    }
}

type Result<T> = std::result::Result<T, InputError>;

impl Value<'_> {
    /// The Python name of the value's type, for error messages.
    pub fn type_name(&self) -> &str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::UInt(_) => "int",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Time(_) => "datetime",
            Value::Other(name) => name,
            Value::Table(..) => "pyarrow.Table",
        }
    }

    /// A bool (Python's `True`/`False` only, not an int).
    pub(crate) fn bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// An integer (a bool counts, as in Python) that fits `T`.
    pub(crate) fn int<T: TryFrom<i64> + TryFrom<u64>>(&self) -> Option<T> {
        match *self {
            Value::Int(i) => T::try_from(i).ok(),
            Value::UInt(u) => T::try_from(u).ok(),
            Value::Bool(b) => T::try_from(b as i64).ok(),
            _ => None,
        }
    }

    /// Milliseconds: an int, or a point in time.
    pub(crate) fn millis(&self) -> Option<i64> {
        match self {
            Value::Time(ms) => Some(*ms),
            v => v.int(),
        }
    }

    /// Bytes, or text as its UTF-8 bytes.
    fn bytes_or_text(&self) -> Option<Vec<u8>> {
        match self {
            Value::Bytes(b) => Some(b.to_vec()),
            Value::Str(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }

    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }

    /// The items of a list or a tuple.
    pub(crate) fn items(&self) -> Option<&[Value<'_>]> {
        match self {
            Value::List(vs) | Value::Tuple(vs) => Some(vs),
            _ => None,
        }
    }

    /// A `(first, second)` tuple.
    fn pair(&self) -> Option<(&Value<'_>, &Value<'_>)> {
        match self {
            Value::Tuple(vs) if vs.len() == 2 => Some((&vs[0], &vs[1])),
            _ => None,
        }
    }
}

/// `None` as `Some(None)` (given as None), anything else through `f` (`None`:
/// not of the type `f` takes).
pub(crate) fn opt<'v, 'a, T>(
    v: &'v Value<'a>,
    f: impl FnOnce(&'v Value<'a>) -> Option<T>,
) -> Option<Option<T>> {
    match v {
        Value::None => Some(None),
        v => f(v).map(Some),
    }
}

/// A dict of str to str (`None`: empty).
fn string_pairs(v: &Value<'_>) -> Option<Vec<(String, String)>> {
    match v {
        Value::None => Some(Vec::new()),
        Value::Dict(d) => {
            d.0.iter()
                .map(|(k, v)| Some((k.to_string(), v.text()?)))
                .collect()
        }
        _ => None,
    }
}

/// An entry's `properties` to encode: a dict of str to str, or `None`.
pub fn entry_properties(v: &Value<'_>) -> Result<Vec<(String, String)>> {
    let bad = || InputError::Type("properties must be a dict of str to str".into());
    string_pairs(v).ok_or_else(bad)
}

/// The fields of input `what` (`messages[0]`, `message 0`), each handed to
/// `field(name, value, bad)`; `bad(expected)` is the wrong-type error.
fn fields<'v>(
    v: &'v Value<'_>,
    not_dict: impl FnOnce() -> String,
    what: &str,
    expected: &str,
    mut field: impl FnMut(&str, &'v Value<'_>, &dyn Fn(&str) -> InputError) -> Result<bool>,
) -> Result<()> {
    let Value::Dict(Dict(items)) = v else {
        return Err(InputError::Type(not_dict()));
    };
    for (name, value) in items {
        let bad = |t: &str| InputError::Type(format!("{what}[{name:?}] must be {t}"));
        if !field(name, value, &bad)? {
            return Err(InputError::UnknownKey(format!(
                "{what} has unknown key {name:?}; expected {expected}"
            )));
        }
    }
    Ok(())
}

/// One message for `encode_entry` (`messages[index]`): `value` (bytes, empty
/// when absent), `key` (str or bytes), `properties`, `event_time`,
/// `sequence_id`, `ordering_key`.
pub fn message_input(v: &Value<'_>, index: usize) -> Result<MessageInput> {
    let what = format!("messages[{index}]");
    let mut m = MessageInput {
        value: Some(Vec::new()),
        ..Default::default()
    };
    let expected = "value, key, properties, event_time, sequence_id, ordering_key";
    let not_dict = || format!("{what} must be a dict");
    fields(v, not_dict, &what, expected, |name, v, bad| {
        let bytes = |v: &Value<'_>| {
            opt(v, |v| {
                matches!(v, Value::Bytes(_)).then(|| v.bytes_or_text())?
            })
        };
        match name {
            "value" => m.value = bytes(v).ok_or_else(|| bad("bytes or None"))?,
            "key" => {
                m.key = match v {
                    Value::None => None,
                    Value::Str(s) => Some(Key::Text(s.to_string())),
                    Value::Bytes(b) => Some(Key::Binary(b.to_vec())),
                    _ => return Err(bad("str, bytes or None")),
                }
            }
            "properties" => {
                m.properties = string_pairs(v).ok_or_else(|| bad("a dict of str to str"))?
            }
            "event_time" => {
                m.event_time =
                    opt(v, Value::int).ok_or_else(|| bad("a non-negative int (ms) or None"))?
            }
            "sequence_id" => {
                m.sequence_id =
                    opt(v, Value::int).ok_or_else(|| bad("a non-negative int or None"))?
            }
            "ordering_key" => m.ordering_key = bytes(v).ok_or_else(|| bad("bytes or None"))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(m)
}

/// One message a payload processor returned (`message index`). A bytes key
/// is stored base64-encoded with `key_b64_encoded` set, unless the dict says
/// otherwise.
pub fn owned_message(v: &Value<'_>, index: usize) -> Result<OwnedMessage> {
    let what = format!("message {index}");
    let mut m = OwnedMessage::default();
    let mut key_b64: Option<bool> = None;
    let expected = "value, key, key_b64_encoded, ordering_key, properties, headers, event_time, timestamp_type, sequence_id, batch_index, offset, compacted_out";
    let not_dict = || format!("{what} is a {}, not a dict", v.type_name());
    let flag = |v: &Value<'_>| match v {
        Value::None => Some(false),
        Value::Bool(b) => Some(*b),
        _ => None,
    };
    let header = |v: &Value<'_>| {
        let (k, v) = v.pair()?;
        Some((k.text()?, opt(v, Value::bytes_or_text)?))
    };
    fields(v, not_dict, &what, expected, |name, v, bad| {
        match name {
            "value" => {
                m.value = opt(v, Value::bytes_or_text).ok_or_else(|| bad("bytes, str or None"))?
            }
            "key" => {
                m.key = match v {
                    Value::None => None,
                    Value::Str(s) => Some(s.to_string()),
                    Value::Bytes(b) => {
                        key_b64 = Some(key_b64.unwrap_or(true));
                        Some(base64::engine::general_purpose::STANDARD.encode(b))
                    }
                    _ => return Err(bad("str, bytes or None")),
                }
            }
            "key_b64_encoded" => key_b64 = Some(flag(v).ok_or_else(|| bad("a bool"))?),
            "ordering_key" => {
                m.ordering_key = opt(v, Value::bytes_or_text).ok_or_else(|| bad("bytes or None"))?
            }
            "properties" => {
                let pairs = string_pairs(v).ok_or_else(|| bad("a dict of str to str"))?;
                m.properties = pairs.into_iter().map(|(k, v)| (k, Some(v))).collect();
            }
            "headers" => {
                let headers = |v: &Value<'_>| v.items()?.iter().map(header).collect();
                m.headers =
                    opt(v, headers).ok_or_else(|| bad("a list of (str, bytes or None) pairs"))?
            }
            "event_time" => {
                m.event_time =
                    opt(v, Value::millis).ok_or_else(|| bad("an int (ms), a datetime or None"))?
            }
            "timestamp_type" => {
                let text = opt(v, Value::text).ok_or_else(|| bad("a str or None"))?;
                let parse = |s: String| TimestampType::parse(&s);
                m.timestamp_type = text
                    .map(|s| {
                        parse(s).ok_or_else(|| bad("'create_time', 'log_append_time' or None"))
                    })
                    .transpose()?
            }
            "sequence_id" => {
                m.sequence_id = opt(v, Value::int).ok_or_else(|| bad("an int or None"))?
            }
            "batch_index" => {
                m.batch_index = opt(v, Value::int).ok_or_else(|| bad("an int or None"))?
            }
            "offset" => m.offset = opt(v, Value::int).ok_or_else(|| bad("an int or None"))?,
            "compacted_out" => m.compacted_out = flag(v).ok_or_else(|| bad("a bool"))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    m.key_b64_encoded = key_b64.unwrap_or(false);
    Ok(m)
}

/// One Kafka record (`records[index]`): `key`, `value`, `headers` (a list
/// of pairs or a dict), `timestamp`, `offset_delta`.
pub fn kafka_record(v: &Value<'_>, index: usize) -> Result<KafkaRecordInput> {
    let what = format!("records[{index}]");
    let mut r = KafkaRecordInput::default();
    let expected = "key, value, headers, timestamp, offset_delta";
    let not_dict = || format!("{what} must be a dict");
    fields(v, not_dict, &what, expected, |name, v, bad| {
        let bytes = |v: &Value<'_>| opt(v, Value::bytes_or_text);
        match name {
            "key" => r.key = bytes(v).ok_or_else(|| bad("bytes, str or None"))?,
            "value" => r.value = bytes(v).ok_or_else(|| bad("bytes, str or None"))?,
            "timestamp" => {
                let ms = opt(v, Value::millis);
                r.timestamp = ms.ok_or_else(|| {
                    InputError::Type("expected an int (milliseconds) or a datetime".into())
                })?
            }
            "offset_delta" => {
                r.offset_delta = opt(v, Value::int).ok_or_else(|| bad("an int or None"))?
            }
            "headers" => {
                let pairs: Cow<'_, [Value<'_>]> = match v {
                    Value::None => Cow::Borrowed(&[]),
                    Value::Dict(d) => {
                        d.0.iter()
                            .map(|(k, v)| Value::Tuple(vec![Value::Str(k.clone()), v.clone()]))
                            .collect()
                    }
                    v => Cow::Borrowed(
                        v.items()
                            .ok_or_else(|| bad("a list of (str, bytes or None) pairs"))?,
                    ),
                };
                for pair in pairs.iter() {
                    let (k, v) = pair
                        .pair()
                        .ok_or_else(|| bad("a list of (str, bytes or None) pairs"))?;
                    let key = k.text().ok_or_else(|| bad("(str, bytes) pairs"))?;
                    r.headers.push((
                        key,
                        bytes(v).ok_or_else(|| bad("(str, bytes or None) pairs"))?,
                    ));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(items: Vec<(&'static str, Value<'static>)>) -> Value<'static> {
        Value::Dict(Dict(
            items.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ))
    }

    fn bytes(b: &'static [u8]) -> Value<'static> {
        Value::from(b)
    }

    #[test]
    fn entry_properties_are_a_dict_of_str_or_none() {
        let mut d = Dict::default();
        d.set("a", "1").set("b", "2");
        let pairs = vec![("a".to_string(), "1".to_string()), ("b".into(), "2".into())];
        assert_eq!(entry_properties(&Value::Dict(d)), Ok(pairs));
        assert_eq!(entry_properties(&Value::None), Ok(vec![]));
        let mut bad = Dict::default();
        bad.set("a", Value::Int(1));
        for v in [Value::Dict(bad), Value::List(vec![])] {
            let e = entry_properties(&v).unwrap_err();
            assert_eq!(
                e,
                InputError::Type("properties must be a dict of str to str".into())
            );
        }
    }

    #[test]
    fn message_input_fields_and_errors() {
        let props = dict(vec![("a", "b".into())]);
        let v = dict(vec![
            ("key", bytes(b"k")),
            ("properties", props),
            ("event_time", Value::Int(7)),
            ("sequence_id", Value::None),
        ]);
        let m = message_input(&v, 0).unwrap();
        assert_eq!(m.value, Some(Vec::new()), "an absent value is empty");
        assert!(matches!(m.key, Some(Key::Binary(ref k)) if k == b"k"));
        assert_eq!(m.properties, vec![("a".into(), "b".into())]);
        assert_eq!((m.event_time, m.sequence_id), (Some(7), None));
        let text = |v: &Value<'_>| message_input(v, 3).unwrap_err().to_string();
        assert_eq!(
            text(&dict(vec![("key", Value::Int(5))])),
            r#"messages[3]["key"] must be str, bytes or None"#
        );
        assert_eq!(
            text(&dict(vec![("event_time", Value::Int(-1))])),
            r#"messages[3]["event_time"] must be a non-negative int (ms) or None"#
        );
        assert_eq!(
            text(&dict(vec![("value", "text".into())])),
            r#"messages[3]["value"] must be bytes or None"#
        );
        let unknown = message_input(&dict(vec![("vale", bytes(b""))]), 0).unwrap_err();
        assert!(
            matches!(unknown, InputError::UnknownKey(ref t) if t.starts_with(r#"messages[0] has unknown key "vale"; expected value,"#))
        );
        assert_eq!(text(&Value::Int(1)), "messages[3] must be a dict");
    }

    #[test]
    fn owned_message_fields_and_errors() {
        let headers = Value::List(vec![Value::Tuple(vec!["h".into(), Value::None])]);
        let v = dict(vec![
            ("value", "text".into()),
            ("key", bytes(b"\x01")),
            ("headers", headers),
            ("event_time", Value::Time(1_000)),
            ("timestamp_type", "log_append_time".into()),
            ("compacted_out", Value::Bool(true)),
            ("batch_index", Value::Bool(true)),
        ]);
        let m = owned_message(&v, 0).unwrap();
        assert_eq!(m.value.as_deref(), Some(&b"text"[..]));
        assert_eq!((m.key.as_deref(), m.key_b64_encoded), (Some("AQ=="), true));
        assert_eq!(m.headers, Some(vec![("h".into(), None)]));
        assert_eq!(m.event_time, Some(1_000));
        assert_eq!(m.timestamp_type, Some(TimestampType::LogAppendTime));
        assert!(m.compacted_out);
        assert_eq!(m.batch_index, Some(1), "a bool is an int, as in Python");
        let explicit = dict(vec![
            ("key_b64_encoded", Value::Bool(false)),
            ("key", bytes(b"k")),
        ]);
        assert!(!owned_message(&explicit, 0).unwrap().key_b64_encoded);
        let text = |v: &Value<'_>| owned_message(v, 0).unwrap_err().to_string();
        assert_eq!(text(&bytes(b"raw")), "message 0 is a bytes, not a dict");
        assert_eq!(
            text(&dict(vec![("value", Value::Int(5))])),
            r#"message 0["value"] must be bytes, str or None"#
        );
        assert_eq!(
            text(&dict(vec![("event_time", "yesterday".into())])),
            r#"message 0["event_time"] must be an int (ms), a datetime or None"#
        );
        let bad_header = Value::List(vec![Value::Tuple(vec!["k".into(), Value::Int(1)])]);
        assert_eq!(
            text(&dict(vec![("headers", bad_header)])),
            r#"message 0["headers"] must be a list of (str, bytes or None) pairs"#
        );
        assert_eq!(
            text(&dict(vec![("timestamp_type", "now".into())])),
            r#"message 0["timestamp_type"] must be 'create_time', 'log_append_time' or None"#
        );
        assert!(matches!(
            owned_message(&dict(vec![("colour", "red".into())]), 0),
            Err(InputError::UnknownKey(t)) if t.starts_with(r#"message 0 has unknown key "colour""#)
        ));
    }

    #[test]
    fn kafka_record_fields_and_errors() {
        let headers = dict(vec![("h", bytes(b"v")), ("n", Value::None)]);
        let v = dict(vec![
            ("key", "k".into()),
            ("value", bytes(b"v")),
            ("headers", headers),
            ("timestamp", Value::Time(5)),
            ("offset_delta", Value::Int(2)),
        ]);
        let r = kafka_record(&v, 0).unwrap();
        assert_eq!(
            (r.key.as_deref(), r.value.as_deref()),
            (Some(&b"k"[..]), Some(&b"v"[..]))
        );
        assert_eq!(
            r.headers,
            vec![("h".into(), Some(b"v".to_vec())), ("n".into(), None)]
        );
        assert_eq!((r.timestamp, r.offset_delta), (Some(5), Some(2)));
        let listed = Value::List(vec![Value::Tuple(vec!["h".into(), "t".into()])]);
        let r = kafka_record(&dict(vec![("headers", listed)]), 0).unwrap();
        assert_eq!(r.headers, vec![("h".into(), Some(b"t".to_vec()))]);
        let text = |v: &Value<'_>| kafka_record(v, 1).unwrap_err().to_string();
        assert_eq!(
            text(&dict(vec![("headers", Value::List(vec![Value::Int(1)]))])),
            r#"records[1]["headers"] must be a list of (str, bytes or None) pairs"#
        );
        assert_eq!(
            text(&dict(vec![("timestamp", "soon".into())])),
            "expected an int (milliseconds) or a datetime"
        );
        assert!(matches!(
            kafka_record(&dict(vec![("partition", Value::Int(0))]), 0),
            Err(InputError::UnknownKey(_))
        ));
    }
}
