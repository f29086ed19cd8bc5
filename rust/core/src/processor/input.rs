//! What a payload processor written outside Rust (in Python) hands back,
//! owned, and how it becomes the decoder's [`Message`]s; and the batch
//! record a processor can ask to read (PIP-96 `getMessageAt`).

use std::borrow::Cow;

use crate::error::{EntryError, FormatError, Result, Space};
use crate::format::batch::BatchRecord;
use crate::format::metadata::SingleMessageMetadataView;
use crate::processor::{EntryContext, Message, MessageHeaders, MessageProperties, TimestampType};

/// One message as a foreign processor returns it; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnedMessage {
    /// Default: −1 for the single message of a non-batched entry, else the
    /// message's position in the returned list.
    pub batch_index: Option<i32>,
    /// Default: the entry's `sequence_id`.
    pub sequence_id: Option<i64>,
    pub event_time: Option<i64>,
    pub timestamp_type: Option<TimestampType>,
    pub key: Option<String>,
    pub key_b64_encoded: bool,
    pub ordering_key: Option<Vec<u8>>,
    pub properties: Vec<(String, Option<String>)>,
    pub headers: Option<Vec<(String, Option<Vec<u8>>)>>,
    pub value: Option<Vec<u8>>,
    pub compacted_out: bool,
    pub offset: Option<i64>,
}

/// The decoder's messages for what a processor returned for `ctx`'s entry,
/// the defaults filled in from the entry.
pub fn messages<'a>(owned: &'a [OwnedMessage], ctx: &EntryContext<'_>) -> Vec<Message<'a>> {
    let md = &ctx.entry.metadata;
    let single = owned.len() == 1 && !md.is_batch();
    owned
        .iter()
        .enumerate()
        .map(|(i, o)| Message {
            batch_index: Some(o.batch_index.unwrap_or(if single { -1 } else { i as i32 })),
            sequence_id: o.sequence_id.or(Some(md.sequence_id as i64)),
            event_time: o.event_time,
            timestamp_type: o.timestamp_type,
            key: o.key.as_deref().map(Cow::Borrowed),
            key_b64_encoded: o.key_b64_encoded,
            ordering_key: o.ordering_key.as_deref(),
            properties: MessageProperties::Pairs(
                o.properties
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), v.as_deref().map(Cow::Borrowed)))
                    .collect(),
            ),
            headers: o.headers.as_ref().map(|hs| {
                MessageHeaders::Pairs(
                    hs.iter()
                        .map(|(k, v)| (Cow::Borrowed(k.as_str()), v.as_deref()))
                        .collect(),
                )
            }),
            value: o.value.as_deref(),
            compacted_out: o.compacted_out,
            offset: o.offset,
            ..Default::default()
        })
        .collect()
}

fn truncated(what: &'static str, offset: usize, needed: usize, available: usize) -> EntryError {
    EntryError::Format(FormatError::Truncated {
        what,
        space: Space::BatchBuffer,
        offset,
        needed,
        available,
    })
}

/// The batch record in `record` (`[u32 size][SingleMessageMetadata][payload]`)
/// at batch index `index`; trailing bytes are ignored.
pub fn record_at(index: i32, record: &[u8]) -> Result<BatchRecord<'_>> {
    let size = record
        .get(..4)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap()) as usize)
        .ok_or_else(|| truncated("record size word", 0, 4, record.len()))?;
    let smm_bytes = record
        .get(4..4usize.saturating_add(size))
        .ok_or_else(|| truncated("SingleMessageMetadata", 4, size, record.len() - 4))?;
    let metadata = SingleMessageMetadataView::parse(smm_bytes, 4)?;
    let rest = &record[4 + size..];
    let n = usize::try_from(metadata.payload_size)
        .ok()
        .filter(|&n| n <= rest.len())
        .ok_or_else(|| {
            let needed = usize::try_from(metadata.payload_size).unwrap_or(usize::MAX);
            truncated("record payload", 4 + size, needed, rest.len())
        })?;
    Ok(BatchRecord {
        index,
        metadata,
        payload: &rest[..n],
        record: &record[..4 + size + n],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn record_at_reads_size_metadata_and_payload() {
        // SingleMessageMetadata { payload_size (field 3) = 2 }
        let smm = [0x18, 0x02];
        let mut rec = vec![0, 0, 0, smm.len() as u8];
        rec.extend_from_slice(&smm);
        rec.extend_from_slice(b"hi");
        rec.extend_from_slice(b"tail");
        let r = record_at(4, &rec).unwrap();
        assert_eq!((r.index, r.payload), (4, &b"hi"[..]));
        assert_eq!(r.record.len(), 4 + 2 + 2);

        let short = record_at(0, &[0, 0]).unwrap_err();
        assert_eq!(short.kind(), ErrorKind::Data);
        assert!(
            short.to_string().contains("truncated record size word"),
            "{short}"
        );
        let e = record_at(0, &[0, 0, 0, 9, 1]).unwrap_err();
        assert!(
            e.to_string().contains("truncated SingleMessageMetadata"),
            "{e}"
        );
        let e = record_at(0, &rec[..7]).unwrap_err();
        assert!(e.to_string().contains("truncated record payload"), "{e}");
    }
}
