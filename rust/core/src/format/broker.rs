//! Broker entry metadata (PIP-70) as Pulsar's interceptors write it
//! (spec compaction.md §14, entry-format.md §1.2).
//!
//! `AppendIndexMetadataInterceptor` keeps one counter per topic, starting at
//! −1, and adds each entry's message count before stamping, so `index` is the
//! offset of the entry's **last** message. `AppendBrokerTimestampMetadataInterceptor`
//! stamps the broker clock. The prefix lies outside the CRC32C section, which
//! is carried over unchanged.

use crate::error::{EntryError, Result};
use crate::format::encode::set_broker_entry_metadata;
use crate::format::frame::{split_broker_entry_metadata, EntryView};
use crate::format::metadata::MessageMetadataView;
use crate::proto;

/// The message count a Pulsar 4.2.4 broker hands the interceptors.
///
/// Producer entries use `CommandSend.num_messages`, which Java producers set
/// to the batch size (`num_messages_in_batch`; a KoP entry stores its offset
/// span there). Entries the broker appends itself go through
/// `ManagedLedgerImpl.asyncAddEntry(buffer, callback, ctx)`, whose count is 1:
/// transaction markers, and transactional messages (appended by
/// `TopicTransactionBuffer`), whatever their batch size.
pub fn interceptor_message_count(md: &MessageMetadataView<'_>) -> i32 {
    if md.marker_type.is_some() || md.txnid_most_bits.is_some() || md.txnid_least_bits.is_some() {
        return 1;
    }
    md.num_messages_in_batch.unwrap_or(1)
}

/// Which interceptors the simulated broker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interceptors {
    pub timestamp: bool,
    pub index: bool,
}

impl Default for Interceptors {
    fn default() -> Self {
        Interceptors {
            timestamp: true,
            index: true,
        }
    }
}

/// Stamps entries in topic order, as a broker appends them.
#[derive(Debug, Clone)]
pub struct Stamper {
    counter: i64,
    interceptors: Interceptors,
}

impl Stamper {
    /// `start_index` is the counter before the first entry (−1 for a new
    /// topic; a recovered broker resumes from the last stored index).
    pub fn new(start_index: i64, interceptors: Interceptors) -> Result<Self> {
        if start_index < -1 {
            return Err(EntryError::Options(format!(
                "start_index must be >= -1 (the interceptor's initial counter), got {start_index}"
            )));
        }
        if !interceptors.timestamp && !interceptors.index {
            return Err(EntryError::Options(
                "at least one interceptor (index or timestamp) is needed to stamp entries".into(),
            ));
        }
        Ok(Stamper {
            counter: start_index,
            interceptors,
        })
    }

    /// The counter: the index of the last message stamped so far.
    pub fn index(&self) -> i64 {
        self.counter
    }

    /// The entry as the broker stores it, any existing prefix replaced.
    /// Entries whose count is ≤ 0 get no prefix and leave the counter alone
    /// (`ManagedLedgerInterceptorImpl.beforeAddEntry`).
    pub fn stamp(&mut self, entry: &[u8], broker_timestamp: u64) -> Result<Vec<u8>> {
        let view = EntryView::parse(entry, false)?;
        let count = interceptor_message_count(&view.metadata);
        if count <= 0 {
            let (_, rest) = split_broker_entry_metadata(entry)?;
            return Ok(entry[rest..].to_vec());
        }
        let index = if self.interceptors.index {
            self.counter = self
                .counter
                .checked_add(i64::from(count))
                .ok_or_else(|| EntryError::Options("broker index overflows int64".into()))?;
            Some(self.counter as u64)
        } else {
            None
        };
        let bem = proto::BrokerEntryMetadata {
            broker_timestamp: self.interceptors.timestamp.then_some(broker_timestamp),
            index,
        };
        set_broker_entry_metadata(entry, &bem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::encode::{encode_entry, EncodeOptions, MessageInput};

    fn entry(n: usize, batch: bool) -> Vec<u8> {
        encode_entry(
            &vec![MessageInput::default(); n],
            &EncodeOptions {
                batch: Some(batch),
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn index_is_the_last_message_offset() {
        let mut s = Stamper::new(-1, Interceptors::default()).unwrap();
        let a = s.stamp(&entry(3, true), 100).unwrap();
        let b = s.stamp(&entry(1, false), 101).unwrap();
        let va = EntryView::parse(&a, true).unwrap();
        let vb = EntryView::parse(&b, true).unwrap();
        assert_eq!(va.broker_entry_metadata.unwrap().index, Some(2));
        assert_eq!(vb.broker_entry_metadata.unwrap().index, Some(3));
        assert_eq!(
            vb.broker_entry_metadata.unwrap().broker_timestamp,
            Some(101)
        );
        assert!(a.ends_with(&entry(3, true)));
        // Restamping replaces the prefix and keeps the checksummed part.
        let mut s = Stamper::new(
            9,
            Interceptors {
                timestamp: false,
                index: true,
            },
        )
        .unwrap();
        let again = s.stamp(&a, 0).unwrap();
        assert_eq!(hex::encode(&again[..8]), "0e0200000002100c");
        assert!(again.ends_with(&entry(3, true)));
    }

    #[test]
    fn zero_count_entries_get_no_prefix() {
        let md = proto::MessageMetadata {
            producer_name: "p".into(),
            num_messages_in_batch: Some(0),
            ..Default::default()
        };
        let e = crate::format::encode::frame_entry(
            &md,
            b"",
            true,
            Some(&proto::BrokerEntryMetadata {
                broker_timestamp: Some(1),
                index: Some(1),
            }),
        );
        let mut s = Stamper::new(-1, Interceptors::default()).unwrap();
        let out = s.stamp(&e, 5).unwrap();
        assert!(!out.starts_with(&[0x0e, 0x02]));
        assert_eq!(s.index(), -1);
    }

    #[test]
    fn rejects_bad_settings() {
        assert!(Stamper::new(-2, Interceptors::default()).is_err());
        assert!(Stamper::new(
            0,
            Interceptors {
                timestamp: false,
                index: false
            }
        )
        .is_err());
    }
}
