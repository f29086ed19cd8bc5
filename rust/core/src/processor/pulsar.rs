//! The built-in processor for Pulsar's own payloads (PIP-96 `DEFAULT`), and
//! the message shapes it and `decode` build from Pulsar metadata.

use std::borrow::Cow;

use crate::error::Result;
use crate::format::batch::{split_batch, BatchRecord};
use crate::format::metadata::MessageMetadataView;

use super::api::{
    EntryContext, MarkerInfo, Message, MessageProperties, PayloadProcessor, Selector, Sink, TxnKey,
    TxnOutcome,
};

/// Pulsar's own format (PIP-96 `DEFAULT`): a batch split into its records,
/// or the whole payload as one message.
pub struct PulsarProcessor {
    selector: Selector,
}

impl PulsarProcessor {
    pub const NAME: &'static str = "pulsar";

    pub fn new() -> Self {
        PulsarProcessor {
            selector: Selector::Any,
        }
    }
}

impl Default for PulsarProcessor {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn pulsar_txn(md: &MessageMetadataView<'_>) -> Option<TxnKey> {
    match (md.txnid_most_bits, md.txnid_least_bits) {
        (None, None) => None,
        (most, least) => Some(TxnKey::Pulsar {
            most: most.unwrap_or(0),
            least: least.unwrap_or(0),
        }),
    }
}

/// The message of a non-batched entry (PIP-96 `asSingleMessage`).
pub fn single_message<'a>(md: &MessageMetadataView<'a>, value: &'a [u8]) -> Message<'a> {
    Message {
        batch_index: Some(-1),
        sequence_id: Some(md.sequence_id as i64),
        event_time: md.event_time.filter(|&t| t != 0).map(|t| t as i64),
        key: md
            .partition_key
            .filter(|_| md.null_partition_key != Some(true))
            .map(Cow::Borrowed),
        key_b64_encoded: md.partition_key_b64_encoded == Some(true),
        ordering_key: md.ordering_key,
        properties: MessageProperties::Pulsar(md.properties),
        value: (md.null_value != Some(true)).then_some(value),
        txn: pulsar_txn(md),
        ..Default::default()
    }
}

/// A batch member as Java's consumer builds it (`MessageImpl.create`): the
/// key, ordering key and properties come only from the record; sequence id,
/// event time and the null flags fall back to the batch header.
pub fn batch_message<'a>(md: &MessageMetadataView<'a>, r: &BatchRecord<'a>) -> Message<'a> {
    let smm = &r.metadata;
    let null_key = smm.null_partition_key.or(md.null_partition_key) == Some(true);
    let null_value = smm.null_value.or(md.null_value) == Some(true);
    Message {
        batch_index: Some(r.index),
        sequence_id: Some(smm.sequence_id.unwrap_or(md.sequence_id) as i64),
        event_time: smm
            .event_time
            .or(md.event_time)
            .filter(|&t| t != 0)
            .map(|t| t as i64),
        key: smm.partition_key.filter(|_| !null_key).map(Cow::Borrowed),
        key_b64_encoded: smm.partition_key_b64_encoded == Some(true),
        ordering_key: smm.ordering_key,
        properties: MessageProperties::Pulsar(smm.properties),
        value: (!null_value).then_some(r.payload),
        compacted_out: smm.is_compacted_out(),
        txn: pulsar_txn(md),
        ..Default::default()
    }
}

/// Splits a Pulsar payload as the `DEFAULT` processor does.
pub fn pulsar_messages<'a>(
    md: &MessageMetadataView<'a>,
    payload: &'a [u8],
) -> Result<Vec<Message<'a>>> {
    if !md.is_batch() {
        return Ok(vec![single_message(md, payload)]);
    }
    let mut records = Vec::new();
    split_batch(payload, md, &mut records)?;
    Ok(records.iter().map(|r| batch_message(md, r)).collect())
}

impl PayloadProcessor for PulsarProcessor {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn selector(&self) -> &Selector {
        &self.selector
    }

    fn is_builtin_pulsar(&self) -> bool {
        true
    }

    fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()> {
        let messages = pulsar_messages(&ctx.entry.metadata, payload)?;
        sink.emit(&messages);
        Ok(())
    }
}

pub(crate) fn marker_message<'a>(md: &MessageMetadataView<'a>, payload: &'a [u8]) -> Message<'a> {
    let ends = match (md.marker_type, pulsar_txn(md)) {
        (Some(21), Some(txn)) => Some((txn, TxnOutcome::Committed)),
        (Some(22), Some(txn)) => Some((txn, TxnOutcome::Aborted)),
        _ => None,
    };
    Message {
        marker: Some(MarkerInfo {
            marker_type: md.marker_type,
            ends,
        }),
        txn: None,
        ..single_message(md, payload)
    }
}
