//! Entry framing (spec entry-format.md §1):
//! `[0e 02 | u32 | BrokerEntryMetadata]? [0e 01 | u32 crc32c]? [u32 md_size | MessageMetadata] payload`.

use crate::error::{EntryError, FormatError, Result, Space};
use crate::format::crc::crc32c;
use crate::format::metadata::{BrokerEntryMetadataView, MessageMetadataView};
use crate::format::wire::Lossy;

pub const MAGIC_CHECKSUM: [u8; 2] = [0x0e, 0x01];
pub const MAGIC_BROKER_ENTRY_METADATA: [u8; 2] = [0x0e, 0x02];

fn read_u32(data: &[u8], offset: usize, what: &'static str) -> Result<u32> {
    data.get(offset..offset + 4)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
        .ok_or(EntryError::from(FormatError::Truncated {
            what,
            space: Space::Entry,
            offset,
            needed: 4,
            available: data.len().saturating_sub(offset),
        }))
}

/// The broker-entry-metadata prefix, if present, and the offset just past it.
pub fn split_broker_entry_metadata(
    data: &[u8],
) -> Result<(Option<BrokerEntryMetadataView>, usize)> {
    if !data.starts_with(&MAGIC_BROKER_ENTRY_METADATA) {
        return Ok((None, 0));
    }
    let size = read_u32(data, 2, "broker entry metadata size")? as usize;
    let body = data
        .get(6..6usize.saturating_add(size))
        .ok_or(EntryError::from(FormatError::Truncated {
            what: "broker entry metadata",
            space: Space::Entry,
            offset: 6,
            needed: size,
            available: data.len() - 6.min(data.len()),
        }))?;
    Ok((Some(BrokerEntryMetadataView::parse(body, 6)?), 6 + size))
}

/// A parsed entry borrowing from its bytes.
#[derive(Debug, Clone, Copy)]
pub struct EntryView<'a> {
    pub data: &'a [u8],
    pub broker_entry_metadata: Option<BrokerEntryMetadataView>,
    /// Stored CRC32C, when the `0e 01` section is present.
    pub checksum: Option<u32>,
    /// Where `md_size` starts: the first byte the checksum covers.
    pub md_size_offset: usize,
    pub metadata_offset: usize,
    pub metadata: MessageMetadataView<'a>,
    pub payload_offset: usize,
    pub payload: &'a [u8],
}

impl<'a> EntryView<'a> {
    /// Parses the framing and metadata. With `verify_checksum`, a stored CRC32C
    /// that does not match is an error.
    pub fn parse(data: &'a [u8], verify_checksum: bool) -> Result<Self> {
        Self::parse_with(data, verify_checksum, None)
    }

    /// As [`Self::parse`]; with `lossy`, text fields that are not UTF-8
    /// (in the metadata and, through it, in a batch's records) are replaced
    /// (U+FFFD per malformed sequence) instead of failing the entry.
    pub fn parse_with(
        data: &'a [u8],
        verify_checksum: bool,
        lossy: Option<&'a Lossy>,
    ) -> Result<Self> {
        let (broker_entry_metadata, mut pos) = split_broker_entry_metadata(data)?;
        let mut checksum = None;
        if data[pos..].starts_with(&MAGIC_CHECKSUM) {
            checksum = Some(read_u32(data, pos + 2, "checksum")?);
            pos += 6;
        }
        let md_size_offset = pos;
        let md_size = read_u32(data, pos, "metadata size")? as usize;
        let metadata_offset = pos + 4;
        let available = data.len() - metadata_offset;
        if md_size > available {
            return Err(EntryError::from(FormatError::Truncated {
                what: "MessageMetadata",
                space: Space::Entry,
                offset: metadata_offset,
                needed: md_size,
                available,
            }));
        }
        if let (true, Some(stored)) = (verify_checksum, checksum) {
            let computed = crc32c(&data[md_size_offset..]);
            if computed != stored {
                return Err(EntryError::from(FormatError::ChecksumMismatch {
                    stored,
                    computed,
                    start: md_size_offset,
                    end: data.len(),
                }));
            }
        }
        let payload_offset = metadata_offset + md_size;
        let metadata = MessageMetadataView::parse_with(
            &data[metadata_offset..payload_offset],
            metadata_offset,
            lossy,
        )?;
        Ok(EntryView {
            data,
            broker_entry_metadata,
            checksum,
            md_size_offset,
            metadata_offset,
            metadata,
            payload_offset,
            payload: &data[payload_offset..],
        })
    }

    /// CRC32C over the bytes the checksum covers.
    pub fn computed_checksum(&self) -> u32 {
        crc32c(&self.data[self.md_size_offset..])
    }

    /// The entry time Pulsar seeks by: broker timestamp, else publish time.
    pub fn entry_timestamp(&self) -> u64 {
        self.broker_entry_metadata
            .and_then(|b| b.broker_timestamp)
            .unwrap_or(self.metadata.publish_time)
    }

    /// The bytes after any broker-entry-metadata prefix (what a producer sent).
    pub fn without_broker_entry_metadata(&self) -> &'a [u8] {
        let start = if self.checksum.is_some() {
            self.md_size_offset - 6
        } else {
            self.md_size_offset
        };
        &self.data[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E1: &str =
        "0e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f";
    const E2: &str = "0e020000000908fbd095ffbc3110000e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f";

    #[test]
    fn spec_e1_and_e2() {
        let e1 = hex::decode(E1).unwrap();
        let v = EntryView::parse(&e1, true).unwrap();
        assert_eq!(v.checksum, Some(0xcdeba9a5));
        assert_eq!(v.payload, b"hello");
        assert_eq!(v.metadata.sequence_id, 7);
        assert_eq!(v.metadata.uncompressed_size, Some(5));
        assert!(v.broker_entry_metadata.is_none());

        let e2 = hex::decode(E2).unwrap();
        let v = EntryView::parse(&e2, true).unwrap();
        assert_eq!(
            v.broker_entry_metadata,
            Some(BrokerEntryMetadataView {
                broker_timestamp: Some(1_700_000_000_123),
                index: Some(0)
            })
        );
        assert_eq!(v.entry_timestamp(), 1_700_000_000_123);
        assert_eq!(v.without_broker_entry_metadata(), &e1[..]);
        assert_eq!(v.payload, b"hello");
    }

    #[test]
    fn checksum_less_form() {
        let e = hex::decode(&E1[12..]).unwrap();
        let v = EntryView::parse(&e, true).unwrap();
        assert_eq!(v.checksum, None);
        assert_eq!(v.payload, b"hello");
    }

    #[test]
    fn flipped_payload_bit_fails_checksum_unless_not_verified() {
        let mut e = hex::decode(E1).unwrap();
        let last = e.len() - 1;
        e[last] ^= 1;
        let err = EntryView::parse(&e, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "checksum mismatch: stored crc32c 0xcdeba9a5, computed 0x".to_string()
                + &format!("{:08x}", crc32c(&e[6..]))
                + " over entry bytes 6..41"
        );
        assert!(EntryView::parse(&e, false).is_ok());
    }

    #[test]
    fn truncations_say_where() {
        let e = hex::decode(E1).unwrap();
        let err = EntryView::parse(&e[..12], true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated MessageMetadata at entry offset 10: needs 26 bytes, 2 available"
        );
        assert!(EntryView::parse(&e[..3], true)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        assert!(EntryView::parse(&[], true)
            .unwrap_err()
            .to_string()
            .contains("metadata size"));
        let e2 = hex::decode(E2).unwrap();
        assert!(EntryView::parse(&e2[..8], true)
            .unwrap_err()
            .to_string()
            .contains("broker entry metadata"));
    }
}
