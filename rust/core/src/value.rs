//! Inspection results as a plain value tree (dicts, lists, tuples, scalars,
//! bytes), so that every binding converts them with one generic function:
//! an entry's MessageMetadata, an offload index, block lists. A dict keeps
//! only the fields that are present, in a fixed order. [`input`] parses the
//! other direction: a binding's inputs as a value tree.

pub mod input;

use std::borrow::Cow;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::format::compression::Codec;
use crate::format::frame::EntryView;
use crate::format::metadata::MessageMetadataView;
use crate::offload::table::uuid_text;
use crate::offload::{BlockRange, IndexVersion, LedgerMeta, ObjectName, ObjectRole, OffloadIndex};
use crate::processor::{Message, MessageProperties};
use crate::proto::offload::ledger_metadata_format::{DigestType, State};
use crate::proto::offload::{LedgerInfo, LedgerMetadataFormat};

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Str(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
    List(Vec<Value<'a>>),
    Tuple(Vec<Value<'a>>),
    Dict(Dict<'a>),
    /// Inputs only: a point in time (a `datetime`), in ms since the epoch.
    Time(i64),
    /// Inputs only: any other object, by its type's name.
    Other(Cow<'a, str>),
    /// An Arrow table (a table, record batch or stream crosses as one): its
    /// schema and batches.
    Table(SchemaRef, Vec<RecordBatch>),
}

/// Ordered `(key, value)` fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dict<'a>(pub Vec<(Cow<'a, str>, Value<'a>)>);

impl<'a> Dict<'a> {
    /// Sets `key` (kept in insertion order).
    pub fn set(&mut self, key: impl Into<Cow<'a, str>>, value: impl Into<Value<'a>>) -> &mut Self {
        self.0.push((key.into(), value.into()));
        self
    }

    /// Sets `key` only when `value` is present.
    pub fn opt<V: Into<Value<'a>>>(&mut self, key: &'static str, value: Option<V>) -> &mut Self {
        if let Some(v) = value {
            self.set(key, v);
        }
        self
    }

    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Dict<'_> {
    /// The same fields, owning their keys, strings and bytes.
    pub fn into_owned(self) -> Dict<'static> {
        let field =
            |(k, v): (Cow<'_, str>, Value<'_>)| (Cow::Owned(k.into_owned()), v.into_owned());
        Dict(self.0.into_iter().map(field).collect())
    }
}

impl Value<'_> {
    /// The same tree, owning its strings and bytes (a binding returns it
    /// after the input it borrowed from is gone).
    pub fn into_owned(self) -> Value<'static> {
        let all = |vs: Vec<Value<'_>>| vs.into_iter().map(Value::into_owned).collect();
        match self {
            Value::None => Value::None,
            Value::Bool(b) => Value::Bool(b),
            Value::Int(i) => Value::Int(i),
            Value::UInt(u) => Value::UInt(u),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Bytes(b) => Value::Bytes(Cow::Owned(b.into_owned())),
            Value::List(vs) => Value::List(all(vs)),
            Value::Tuple(vs) => Value::Tuple(all(vs)),
            Value::Dict(d) => Value::Dict(d.into_owned()),
            Value::Time(ms) => Value::Time(ms),
            Value::Other(s) => Value::Other(Cow::Owned(s.into_owned())),
            Value::Table(schema, batches) => Value::Table(schema, batches),
        }
    }
}

macro_rules! from_int {
    ($($t:ty => $variant:ident as $as:ty),*) => {$(
        impl From<$t> for Value<'_> {
            fn from(v: $t) -> Self {
                Value::$variant(v as $as)
            }
        }
    )*};
}
from_int!(i32 => Int as i64, i64 => Int as i64, usize => UInt as u64, u32 => UInt as u64, u64 => UInt as u64);

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Str(Cow::Borrowed(v))
    }
}

impl From<String> for Value<'_> {
    fn from(v: String) -> Self {
        Value::Str(Cow::Owned(v))
    }
}

impl From<Vec<u8>> for Value<'_> {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(Cow::Owned(v))
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(v: &'a [u8]) -> Self {
        Value::Bytes(Cow::Borrowed(v))
    }
}

impl<'a> From<Dict<'a>> for Value<'a> {
    fn from(v: Dict<'a>) -> Self {
        Value::Dict(v)
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::None, Into::into)
    }
}

/// A codec's name, or the stored number when unknown.
fn codec_name(value: i32) -> String {
    Codec::from_proto(value).map_or_else(|| value.to_string(), |c| c.name().into())
}

fn pairs<'a>(it: impl Iterator<Item = (&'a str, &'a str)>) -> Value<'a> {
    Value::List(
        it.map(|(k, v)| Value::Tuple(vec![k.into(), v.into()]))
            .collect(),
    )
}

fn non_empty<'a>(items: Vec<Value<'a>>) -> Option<Value<'a>> {
    (!items.is_empty()).then_some(Value::List(items))
}

/// MessageMetadata as a dict of its present fields (`parse_entry`'s
/// `metadata`): compression by codec name, bytes as bytes, string maps as
/// lists of pairs.
pub fn metadata_value<'a>(md: &MessageMetadataView<'a>) -> Dict<'a> {
    let mut m = Dict::default();
    m.set("producer_name", md.producer_name);
    m.set("sequence_id", md.sequence_id);
    m.set("publish_time", md.publish_time);
    m.opt(
        "properties",
        (!md.properties.is_empty()).then(|| pairs(md.properties.iter())),
    );
    m.opt("replicated_from", md.replicated_from);
    m.opt("partition_key", md.partition_key);
    m.opt(
        "replicate_to",
        non_empty(md.replicate_to().map(Value::from).collect()),
    );
    m.opt("compression", md.compression.map(codec_name));
    m.opt("uncompressed_size", md.uncompressed_size);
    m.opt("num_messages_in_batch", md.num_messages_in_batch);
    m.opt("event_time", md.event_time);
    let keys = md.encryption_keys().map(|k| {
        let mut d = Dict::default();
        d.set("key", k.key)
            .set("value", k.value)
            .set("metadata", pairs(k.metadata.iter()));
        Value::Dict(d)
    });
    m.opt("encryption_keys", non_empty(keys.collect()));
    m.opt("encryption_algo", md.encryption_algo);
    m.opt("encryption_param", md.encryption_param);
    m.opt("schema_version", md.schema_version);
    m.opt("partition_key_b64_encoded", md.partition_key_b64_encoded);
    m.opt("ordering_key", md.ordering_key);
    m.opt("deliver_at_time", md.deliver_at_time);
    m.opt("marker_type", md.marker_type);
    m.opt("txnid_least_bits", md.txnid_least_bits);
    m.opt("txnid_most_bits", md.txnid_most_bits);
    m.opt("highest_sequence_id", md.highest_sequence_id);
    m.opt("null_value", md.null_value);
    m.opt("uuid", md.uuid);
    m.opt("num_chunks_from_msg", md.num_chunks_from_msg);
    m.opt("total_chunk_msg_size", md.total_chunk_msg_size);
    m.opt("chunk_id", md.chunk_id);
    m.opt("null_partition_key", md.null_partition_key);
    let compacted = md.compacted_batch_indexes().map(Value::from).collect();
    m.opt("compacted_batch_indexes", non_empty(compacted));
    m.opt("schema_id", md.schema_id);
    m
}

/// Every piece of one entry, for inspection (`parse_entry`): broker entry
/// metadata, checksum (stored, computed, valid), metadata, sizes, payload.
pub fn entry_value<'a>(entry: &EntryView<'a>) -> Dict<'a> {
    let md = &entry.metadata;
    let bem = entry.broker_entry_metadata.map(|b| {
        let mut d = Dict::default();
        d.set("broker_timestamp", b.broker_timestamp)
            .set("index", b.index);
        d
    });
    let checksum = entry.checksum.map(|stored| {
        let computed = entry.computed_checksum();
        let mut d = Dict::default();
        d.set("stored", stored)
            .set("computed", computed)
            .set("valid", stored == computed);
        d
    });
    let mut out = Dict::default();
    out.set("broker_entry_metadata", bem)
        .set("checksum", checksum);
    out.set("metadata", metadata_value(md));
    out.set(
        "metadata_size",
        entry.payload_offset - entry.metadata_offset,
    );
    out.set("is_batch", md.is_batch())
        .set("num_messages", md.num_messages());
    out.set("encrypted", md.is_encrypted())
        .set("payload_offset", entry.payload_offset);
    out.set("payload", entry.payload);
    out
}

/// A processor's message as a dict (what the `EntryContext` helpers give):
/// `batch_index, value, key, key_b64_encoded, ordering_key, properties,
/// event_time, sequence_id, compacted_out`.
pub fn message_value<'a>(m: &'a Message<'a>) -> Dict<'a> {
    let mut props = Dict::default();
    match &m.properties {
        MessageProperties::Pulsar(p) => p.iter().for_each(|(k, v)| {
            props.set(k, v);
        }),
        MessageProperties::Pairs(pairs) => pairs.iter().for_each(|(k, v)| {
            props.set(k.as_ref(), v.as_deref());
        }),
        MessageProperties::Headers(headers) => headers.iter().for_each(|(k, v)| {
            props.set(
                String::from_utf8_lossy(k),
                v.map(|v| String::from_utf8_lossy(v).into_owned()),
            );
        }),
    }
    let mut d = Dict::default();
    d.set("batch_index", m.batch_index)
        .set("value", m.value)
        .set("key", m.key.as_deref());
    d.set("key_b64_encoded", m.key_b64_encoded)
        .set("ordering_key", m.ordering_key);
    d.set("properties", props).set("event_time", m.event_time);
    d.set("sequence_id", m.sequence_id)
        .set("compacted_out", m.compacted_out);
    d
}

/// One dict per block: `ledger_id, first_entry_id, last_entry_id, part_id,
/// offset, length`.
pub fn blocks_value(blocks: &[BlockRange]) -> Value<'static> {
    let block = |b: &BlockRange| {
        let mut d = Dict::default();
        d.set("ledger_id", b.ledger_id)
            .set("first_entry_id", b.first_entry_id);
        d.set("last_entry_id", b.last_entry_id)
            .set("part_id", b.part_id);
        d.set("offset", b.offset).set("length", b.length);
        Value::Dict(d)
    };
    Value::List(blocks.iter().map(block).collect())
}

/// An offload object's name: `uuid, ledger_id, role` (`data` or `index`).
pub fn object_name_value(n: &ObjectName) -> Dict<'_> {
    let role = match n.role {
        ObjectRole::Data => "data",
        ObjectRole::Index => "index",
    };
    let mut d = Dict::default();
    d.set("uuid", n.uuid.as_str())
        .set("ledger_id", n.ledger_id)
        .set("role", role);
    d
}

fn enum_name(value: i32, name: Option<&'static str>) -> String {
    name.map_or_else(|| value.to_string(), str::to_string)
}

fn bookkeeper_value(m: &LedgerMetadataFormat) -> Dict<'_> {
    let mut d = Dict::default();
    d.set("kind", "bookkeeper")
        .set("quorum_size", m.quorum_size);
    d.set("ensemble_size", m.ensemble_size)
        .set("ack_quorum_size", m.ack_quorum_size);
    d.set("length", m.length)
        .set("last_entry_id", m.last_entry_id);
    let state = State::try_from(m.state).ok().map(|s| s.as_str_name());
    d.set("state", enum_name(m.state, state));
    let digest = |t| enum_name(t, DigestType::try_from(t).ok().map(|s| s.as_str_name()));
    d.set("digest_type", m.digest_type.map(digest));
    d.set("ctime", m.ctime)
        .set("password", m.password.as_deref());
    d.set("ctoken", m.c_token);
    let ensembles = m.segment.iter().map(|s| {
        let members = s
            .ensemble_member
            .iter()
            .map(|m| Value::from(m.as_str()))
            .collect();
        Value::Tuple(vec![s.first_entry_id.into(), Value::List(members)])
    });
    d.set("ensembles", Value::List(ensembles.collect()));
    let mut custom = Dict::default();
    for kv in &m.custom_metadata {
        custom.set(
            kv.key.as_deref().unwrap_or(""),
            kv.value.as_deref().unwrap_or_default(),
        );
    }
    d.set("custom_metadata", custom);
    d
}

fn ledger_info_value(i: &LedgerInfo) -> Dict<'_> {
    let mut d = Dict::default();
    d.set("kind", "ledger_info")
        .set("ledger_id", i.ledger_id)
        .set("entries", i.entries);
    d.set("size", i.size).set("timestamp", i.timestamp);
    let Some(c) = &i.offload_context else {
        d.set("offload_context", Value::None);
        return d;
    };
    let mut o = Dict::default();
    o.set(
        "uuid",
        c.uid_msb.zip(c.uid_lsb).map(|(m, l)| uuid_text(m, l)),
    );
    o.set("complete", c.complete)
        .set("bookkeeper_deleted", c.bookkeeper_deleted);
    o.set("timestamp", c.timestamp);
    if let Some(dm) = &c.driver_metadata {
        o.set("driver_name", dm.name.as_str());
        let mut props = Dict::default();
        for kv in &dm.properties {
            props.set(kv.key.as_str(), kv.value.as_str());
        }
        o.set("driver_metadata", props);
    }
    o.set("segments", c.offload_segment.len());
    d.set("offload_context", o);
    d
}

/// An index object's fields and, per ledger, its metadata and blocks
/// (`ledger_id` names the ledger of a v1 index, which does not store it).
pub fn offload_index_value<'a>(idx: &'a OffloadIndex, ledger_id: Option<i64>) -> Dict<'a> {
    let mut d = Dict::default();
    let version = match idx.version {
        IndexVersion::V1 => 1,
        IndexVersion::V2 => 2,
    };
    d.set("version", version)
        .set("index_block_length", idx.index_block_length);
    d.set("data_object_length", idx.data_object_length);
    d.set("data_header_length", idx.data_header_length);
    let blocks = idx.blocks(ledger_id);
    let ledger = |l: &'a crate::offload::IndexedLedger| -> Value<'a> {
        let id = l.ledger_id.or(ledger_id);
        let mut ld = Dict::default();
        ld.set("ledger_id", id)
            .set("last_entry_id", l.metadata.last_entry_id());
        ld.set("length", l.metadata.length());
        ld.set(
            "metadata",
            match &l.metadata {
                LedgerMeta::BookKeeper(m) => bookkeeper_value(m),
                LedgerMeta::LedgerInfo(i) => ledger_info_value(i),
            },
        );
        let mine: Vec<BlockRange> = blocks
            .iter()
            .filter(|b| b.ledger_id == id)
            .copied()
            .collect();
        ld.set("blocks", blocks_value(&mine));
        Value::Dict(ld)
    };
    d.set(
        "ledgers",
        Value::List(idx.ledgers.iter().map(ledger).collect()),
    );
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_owned_keeps_the_tree() {
        let text = String::from("k");
        let data = vec![1u8, 2];
        let mut d = Dict::default();
        d.set(text.as_str(), data.as_slice());
        d.set(
            "l",
            Value::List(vec![Value::Tuple(vec![Value::Int(-1), Value::UInt(2)])]),
        );
        d.set("o", Value::Other("T".into()));
        d.set("t", Value::Time(5));
        d.set("n", Value::None);
        d.set("b", true);
        let borrowed = Value::Dict(d);
        let owned: Value<'static> = borrowed.clone().into_owned();
        assert_eq!(owned, borrowed);
        drop((text, data));
        let Value::Dict(d) = &owned else {
            panic!("not a dict")
        };
        assert!(matches!(d.get("k"), Some(Value::Bytes(Cow::Owned(b))) if b == &[1, 2]));
        assert!(matches!(&d.0[0].0, Cow::Owned(k) if k == "k"));
        assert_eq!(d.0.len(), 6);
    }
    use crate::format::encode::{encode_entry, EncodeOptions, Key, MessageInput};
    use crate::format::frame::EntryView;

    #[test]
    fn metadata_keeps_present_fields_only() {
        let msg = MessageInput {
            value: Some(b"v".to_vec()),
            key: Some(Key::Text("k".into())),
            ..Default::default()
        };
        let opts = EncodeOptions {
            publish_time: 7,
            properties: vec![("a".into(), "b".into())],
            ..Default::default()
        };
        let bytes = encode_entry(&[msg], &opts).unwrap();
        let entry = EntryView::parse(&bytes, true).unwrap();
        let d = metadata_value(&entry.metadata);
        assert_eq!(d.get("publish_time"), Some(&Value::UInt(7)));
        assert_eq!(d.get("partition_key"), Some(&Value::from("k")));
        let pair = Value::Tuple(vec!["a".into(), "b".into()]);
        assert_eq!(d.get("properties"), Some(&Value::List(vec![pair])));
        assert_eq!(d.get("compression"), None, "NONE is not written");
        assert_eq!(d.get("replicate_to"), None);
        assert_eq!(d.get("encryption_keys"), None);
        assert_eq!(d.get("compacted_batch_indexes"), None);
        let lz4 = EncodeOptions {
            compression: Codec::Lz4,
            ..opts
        };
        let msg = MessageInput {
            value: Some(b"v".to_vec()),
            ..Default::default()
        };
        let bytes = encode_entry(&[msg], &lz4).unwrap();
        let entry = EntryView::parse(&bytes, true).unwrap();
        let d = metadata_value(&entry.metadata);
        assert_eq!(d.get("compression"), Some(&Value::from("lz4")));
        assert_eq!(d.get("uncompressed_size"), Some(&Value::UInt(1)));
    }

    #[test]
    fn blocks_and_options() {
        let b = BlockRange {
            ledger_id: None,
            first_entry_id: 0,
            last_entry_id: Some(9),
            part_id: 1,
            offset: 128,
            length: 64,
        };
        let Value::List(list) = blocks_value(&[b]) else {
            panic!("a list")
        };
        let Value::Dict(d) = &list[0] else {
            panic!("a dict")
        };
        assert_eq!(d.get("ledger_id"), Some(&Value::None));
        assert_eq!(d.get("last_entry_id"), Some(&Value::Int(9)));
        assert_eq!(d.get("offset"), Some(&Value::UInt(128)));
        let mut d = Dict::default();
        d.opt("absent", None::<i64>).opt("present", Some(1i64));
        assert_eq!(d.0.len(), 1);
        let name =
            ObjectName::parse("3a1b2c3d-0000-4000-8000-00000000000a-ledger-7-index").unwrap();
        let d = object_name_value(&name);
        assert_eq!(d.get("ledger_id"), Some(&Value::Int(7)));
        assert_eq!(d.get("role"), Some(&Value::from("index")));
    }
}
