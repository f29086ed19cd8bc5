//! The functions over plain values: entries, message ids, payload
//! processors' helpers, Kafka batches.

use super::{list, owned, tuple, Result};
use crate::format::encode;
use crate::format::frame::EntryView;
use crate::format::message_id::{AnyMessageId, IdParts};
use crate::format::metadata::MessageMetadataView;
use crate::kwargs::Kwargs;
use crate::options::non_negative_ms;
use crate::processor::input::record_at;
use crate::processor::kafka::encode as kafka;
use crate::processor::{self, builtin_property};
use crate::proto::BrokerEntryMetadata;
use crate::stamp::clock_ms as now_ms;
use crate::value::input::{kafka_record, message_input, InputError};
use crate::value::{entry_value, message_value, metadata_value, Value};

/// A message id's parts, `(ledger, entry, partition, batch_index,
/// batch_size, first_chunk)`, as [`AnyMessageId::parts`] gives them.
fn id_parts(kw: &mut Kwargs<'_>) -> Result<IdParts> {
    let bad = || {
        let text = "serialize_message_id() argument 'parts' must be a message id's 6-tuple";
        InputError::Type(text.into())
    };
    let v = kw.required_value("parts")?;
    let [l, e, p, b, size, first] = v.items().ok_or_else(bad)? else {
        return Err(bad().into());
    };
    let opt_int = |v: &Value<'_>| crate::value::input::opt(v, Value::int);
    let chunk = |v: &Value<'_>| match v.items()? {
        [l, e, p] => Some((l.int()?, e.int()?, p.int()?)),
        _ => None,
    };
    let first = crate::value::input::opt(first, chunk).ok_or_else(bad)?;
    let ints = (l.int(), e.int(), p.int(), b.int(), opt_int(size));
    match ints {
        (Some(l), Some(e), Some(p), Some(b), Some(size)) => Ok((l, e, p, b, size, first)),
        _ => Err(bad().into()),
    }
}

/// A required list argument's items.
fn items<'v>(kw: &mut Kwargs<'v>, name: &str, of: &str) -> Result<&'v [Value<'v>]> {
    let v = kw.required_value(name)?;
    let f = kw.function();
    let bad = || InputError::Type(format!("{f}() argument '{name}' must be a list of {of}"));
    Ok(v.items().ok_or_else(bad)?)
}

// ---------------------------------------------------------------- entries

pub(super) fn parse_entry<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let entry = EntryView::parse(kw.required_bytes("data")?, false)?;
    Ok(entry_value(&entry).into())
}

pub(super) fn encode_entry<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let messages = items(kw, "messages", "message dicts")?.iter().enumerate();
    let inputs = messages
        .map(|(i, m)| message_input(m, i))
        .collect::<Result<Vec<_>, _>>()?;
    let batch = kw.opt_flag("batch")?;
    let opts = kw.encode(batch, now_ms())?;
    Ok(encode::encode_entry(&inputs, &opts)?.into())
}

pub(super) fn encode_chunked<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let input = message_input(kw.required_value("message")?, 0)?;
    let chunk_size = kw.required("chunk_size")?;
    let opts = kw.encode(Some(false), now_ms())?;
    let entries = encode::encode_chunked(&input, &opts, chunk_size)?;
    Ok(list(entries.into_iter().map(Value::from)))
}

pub(super) fn set_broker_entry_metadata<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let entry = kw.required_bytes("entry")?;
    let broker_timestamp = kw.opt_int("broker_timestamp", None)?;
    let index = kw.opt_int("broker_index", None)?;
    let bem = BrokerEntryMetadata {
        broker_timestamp,
        index,
    };
    Ok(encode::set_broker_entry_metadata(entry, &bem)?.into())
}

pub(super) fn serialize_message_id<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    Ok(AnyMessageId::from_parts(id_parts(kw)?).serialize().into())
}

pub(super) fn deserialize_message_id<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let id = AnyMessageId::deserialize(kw.required_bytes("data")?)?;
    let (l, e, p, b, size, first) = id.parts();
    let first = first.map(|(l, e, p)| tuple([l.into(), e.into(), p.into()]));
    Ok(tuple([
        l.into(),
        e.into(),
        p.into(),
        b.into(),
        size.into(),
        first.into(),
    ]))
}

// ---------------------------------------------------------------- payload processors

pub(super) fn builtin_processor<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let found = builtin_property(kw.required_text("name")?)?;
    Ok(found
        .map(|(name, property)| tuple([name.into(), property.into()]))
        .into())
}

/// The MessageMetadata of the `metadata` argument.
fn metadata<'v>(kw: &mut Kwargs<'v>) -> Result<MessageMetadataView<'v>> {
    Ok(MessageMetadataView::parse(
        kw.required_bytes("metadata")?,
        0,
    )?)
}

pub(super) fn parse_metadata<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    Ok(owned(metadata_value(&metadata(kw)?)))
}

pub(super) fn single_message<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let md = metadata(kw)?;
    let message = processor::single_message(&md, kw.required_bytes("payload")?);
    Ok(owned(message_value(&message)))
}

pub(super) fn pulsar_messages<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let md = metadata(kw)?;
    let messages = processor::pulsar_messages(&md, kw.required_bytes("payload")?)?;
    Ok(list(messages.iter().map(|m| owned(message_value(m)))))
}

pub(super) fn message_at<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let md = metadata(kw)?;
    let record = record_at(kw.required("index")?, kw.required_bytes("record")?)?;
    Ok(owned(message_value(&processor::batch_message(
        &md, &record,
    ))))
}

// ---------------------------------------------------------------- Kafka

pub(super) fn encode_kafka_batch<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let records = items(kw, "records", "record dicts")?.iter().enumerate();
    let inputs = records
        .map(|(i, r)| kafka_record(r, i))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = kw.kafka_batch(now_ms() as i64)?;
    Ok(kafka::encode_record_batch(&inputs, &opts)?.into())
}

pub(super) fn encode_kafka_control_batch<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let (commit, producer_id) = (kw.required_flag("commit")?, kw.required("producer_id")?);
    let (epoch, base_offset) = (kw.int("producer_epoch", 0)?, kw.int("base_offset", 0)?);
    let timestamp = kw.opt_int("timestamp", None)?.unwrap_or(now_ms() as i64);
    let coordinator = kw.int("coordinator_epoch", 0)?;
    let batch = kafka::encode_control_batch(
        commit,
        producer_id,
        epoch,
        base_offset,
        timestamp,
        coordinator,
    )?;
    Ok(batch.into())
}

pub(super) fn encode_kop_entry<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let bytes = |v: &Value<'_>| match v {
        Value::Bytes(b) => Ok(b.to_vec()),
        v => Err(InputError::Type(format!(
            "encode_kop_entry() argument 'batches' must be a list of bytes, not of {}",
            v.type_name()
        ))),
    };
    let batches = items(kw, "batches", "bytes")?
        .iter()
        .map(bytes)
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
    let publish_time = kw.opt_int("publish_time", None)?.unwrap_or(now_ms() as i64);
    let publish_time = non_negative_ms("publish_time", publish_time)?;
    Ok(kafka::encode_kop_entry(&refs, publish_time)?.into())
}
