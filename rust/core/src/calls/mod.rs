//! The core's functions over plain values and Arrow tables, by name: what a
//! binding exports without a wrapper of its own (`_native` declares one line
//! per entry of [`FUNCTIONS`], and refuses to import when the lists differ).
//!
//! A call hands over its positional arguments and its keywords as [`Value`]s;
//! [`Kwargs::bind`] names the positional ones after the entry's parameters,
//! so each function reads every argument by name, with the defaults and the
//! type and range checks of [`Kwargs`]. The answer is a [`Value`] too, and a
//! table is [`Value::Table`] both ways (a binding imports it without a copy).
//!
//! What keeps a binding of its own: classes (state between calls), Python
//! callbacks (`decode`'s processors, strategies), and arguments a value tree
//! does not carry: Arrow arrays over an object's memory (offload objects,
//! `entry_metadata`), dicts keyed by int (chunk seeds and watermarks), and a
//! bookie's record batches out. (`typed_decode` could be an entry; it is not
//! yet.)

mod plain;
mod tables;

use plain::*;
use tables::*;

use crate::bookkeeper::BookKeeperError;
use crate::compaction::lookup::LookupError;
use crate::error::{EntryError, ErrorKind};
use crate::kwargs::{ArgsError, Kwargs};
use crate::metadata_store::MetadataError;
use crate::schema::SchemaError;
use crate::stamp::StampError;
use crate::value::input::InputError;
use crate::value::Value;

/// Why a call failed: the error of the layer that refused it.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Args(#[from] ArgsError),
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error(transparent)]
    BookKeeper(#[from] BookKeeperError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error(transparent)]
    Stamp(#[from] StampError),
}

impl From<InputError> for CallError {
    fn from(e: InputError) -> Self {
        CallError::Args(e.into())
    }
}

impl CallError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::Args(ArgsError::Input(e)) => e.kind(),
            CallError::Args(ArgsError::Entry(e)) | CallError::Entry(e) => e.kind(),
            CallError::Args(ArgsError::BookKeeper(e)) | CallError::BookKeeper(e) => e.kind(),
            CallError::Metadata(e) => e.kind(),
            CallError::Schema(e) => e.kind(),
            CallError::Lookup(e) => e.kind(),
            CallError::Stamp(e) => e.kind(),
        }
    }
}

pub(crate) type Result<T, E = CallError> = std::result::Result<T, E>;

/// One function: its name, its positional parameters (in order; the others
/// are keyword-only) and the body. (The signature and summary Python shows
/// are the binding's.)
pub struct Function {
    pub name: &'static str,
    pub params: &'static [&'static str],
    pub body: for<'v> fn(&mut Kwargs<'v>) -> Result<Value<'v>>,
}

/// The function called `name`.
pub fn find(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Calls `f` with `args` (positional) and `keywords` (a dict, or `None`).
pub fn call<'v>(f: &Function, args: &'v [Value<'v>], keywords: &'v Value<'v>) -> Result<Value<'v>> {
    let mut kw = Kwargs::bind(f.name, f.params, args, keywords)?;
    let out = (f.body)(&mut kw)?;
    Ok(kw.done(out)?)
}

pub(crate) fn tuple<'a>(items: impl IntoIterator<Item = Value<'a>>) -> Value<'a> {
    Value::Tuple(items.into_iter().collect())
}

pub(crate) fn list<'a>(items: impl IntoIterator<Item = Value<'a>>) -> Value<'a> {
    Value::List(items.into_iter().collect())
}

pub(crate) fn owned<'a>(v: impl Into<Value<'a>>) -> Value<'static> {
    v.into().into_owned()
}

/// One row of [`FUNCTIONS`].
macro_rules! function {
    ($name:ident($($param:literal),*)) => {
        Function {
            name: stringify!($name),
            params: &[$($param),*],
            body: $name,
        }
    };
}

/// Every function, by name.
pub static FUNCTIONS: &[Function] = &[
    function!(parse_entry("data")),
    function!(encode_entry("messages")),
    function!(encode_chunked("message")),
    function!(set_broker_entry_metadata("entry")),
    function!(serialize_message_id("parts")),
    function!(deserialize_message_id("data")),
    function!(builtin_processor("name")),
    function!(parse_metadata("metadata")),
    function!(single_message("metadata", "payload")),
    function!(pulsar_messages("metadata", "payload")),
    function!(message_at("metadata", "index", "record")),
    function!(encode_kafka_batch("records")),
    function!(encode_kafka_control_batch("commit")),
    function!(encode_kop_entry("batches")),
    function!(stamp("entries")),
    function!(find_position_by_time("entries", "time")),
    function!(find_position_by_offset("entries", "offset")),
    function!(with_message_ids("table")),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Dict;

    fn function(name: &str) -> &'static Function {
        FUNCTIONS
            .iter()
            .find(|f| f.name == name)
            .expect("a function of the table")
    }

    fn run(
        name: &str,
        args: &[Value<'_>],
        keywords: &[(&str, Value<'_>)],
    ) -> Result<Value<'static>> {
        let d = Dict(
            keywords
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        );
        let keywords = if keywords.is_empty() {
            Value::None
        } else {
            Value::Dict(d)
        };
        call(function(name), args, &keywords).map(Value::into_owned)
    }

    #[test]
    fn names_are_unique_and_found() {
        let mut names: Vec<_> = FUNCTIONS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FUNCTIONS.len(), "a name twice");
        assert!(FUNCTIONS
            .iter()
            .all(|f| find(f.name).is_some_and(|g| std::ptr::eq(f, g))));
        assert!(find("no_such_function").is_none());
    }

    #[test]
    fn message_ids_round_trip_and_errors_keep_their_layer() {
        let parts = Value::Tuple(vec![
            Value::Int(7),
            Value::Int(3),
            Value::Int(-1),
            Value::Int(2),
            Value::Int(10),
            Value::None,
        ]);
        let bytes = run("serialize_message_id", std::slice::from_ref(&parts), &[]).unwrap();
        let back = run("deserialize_message_id", &[bytes], &[]).unwrap();
        assert_eq!(back, parts);

        let bad = run(
            "deserialize_message_id",
            &[Value::Bytes(b"\xff".as_slice().into())],
            &[],
        );
        assert!(matches!(bad, Err(CallError::Entry(_))), "{bad:?}");
    }

    #[test]
    fn encode_then_parse_an_entry() {
        let mut message = Dict::default();
        message.set("value", b"hello".as_slice());
        let messages = Value::List(vec![Value::Dict(message)]);
        let time = ("publish_time", Value::Int(1_000));
        let entry = run("encode_entry", &[messages], &[time]).unwrap();
        let Value::Dict(parsed) = run("parse_entry", &[entry], &[]).unwrap() else {
            panic!("not a dict")
        };
        let Some(Value::Dict(md)) = parsed.get("metadata") else {
            panic!("no metadata: {parsed:?}")
        };
        assert_eq!(md.get("publish_time"), Some(&Value::UInt(1_000)));
        assert_eq!(
            parsed.get("payload"),
            Some(&Value::Bytes(b"hello".as_slice().into()))
        );
    }
}
