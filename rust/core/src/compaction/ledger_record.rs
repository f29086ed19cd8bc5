//! The compacted-ledger record (`RawMessageImpl.serialize`, spec compaction.md
//! §5.1): `[u32 idLen][MessageIdData][u32 len][entry bytes]`, big-endian,
//! the id being the entry's **original** position.

use prost::Message as _;

use crate::error::{EntryError, FormatError, Result, Space};
use crate::proto;

/// The id written for an entry: ledger and entry, plus the partition when known.
pub fn message_id(ledger_id: i64, entry_id: i64, partition: Option<i32>) -> proto::MessageIdData {
    proto::MessageIdData {
        ledger_id: ledger_id as u64,
        entry_id: entry_id as u64,
        partition,
        ..Default::default()
    }
}

/// Serializes one compacted-ledger record.
pub fn to_record(id: &proto::MessageIdData, entry: &[u8]) -> Result<Vec<u8>> {
    let entry_len = u32::try_from(entry.len())
        .map_err(|_| EntryError::Encode("entry larger than 4 GiB".into()))?;
    let id_len = id.encoded_len();
    let mut out = Vec::with_capacity(8 + id_len + entry.len());
    out.extend_from_slice(&(id_len as u32).to_be_bytes());
    id.encode(&mut out).expect("Vec grows");
    out.extend_from_slice(&entry_len.to_be_bytes());
    out.extend_from_slice(entry);
    Ok(out)
}

fn read_u32(data: &[u8], at: usize, what: &'static str) -> Result<usize> {
    data.get(at..at + 4)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap()) as usize)
        .ok_or(EntryError::from(FormatError::Truncated {
            what,
            space: Space::Entry,
            offset: at,
            needed: 4,
            available: data.len().saturating_sub(at),
        }))
}

/// Parses one record: its id and the entry bytes. Sizes are checked against
/// the record before anything is sliced; trailing bytes are an error.
pub fn from_record(data: &[u8]) -> Result<(proto::MessageIdData, &[u8])> {
    let id_len = read_u32(data, 0, "MessageIdData size")?;
    let id_bytes = data
        .get(4..4 + id_len)
        .ok_or(EntryError::from(FormatError::Truncated {
            what: "MessageIdData",
            space: Space::Entry,
            offset: 4,
            needed: id_len,
            available: data.len().saturating_sub(4),
        }))?;
    let id = proto::MessageIdData::decode(id_bytes).map_err(|e| {
        EntryError::from(FormatError::Protobuf {
            message: "MessageIdData",
            space: Space::Entry,
            offset: 4,
            reason: e.to_string(),
        })
    })?;
    let len_at = 4 + id_len;
    let len = read_u32(data, len_at, "entry size")?;
    let start = len_at + 4;
    let entry = data
        .get(start..start + len)
        .ok_or(EntryError::from(FormatError::Truncated {
            what: "entry",
            space: Space::Entry,
            offset: start,
            needed: len,
            available: data.len().saturating_sub(start),
        }))?;
    if start + len != data.len() {
        return Err(EntryError::Data(format!(
            "{} trailing bytes after the entry at offset {}",
            data.len() - start - len,
            start + len
        )));
    }
    Ok((id, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_layout() {
        // compaction.md §5.1: {ledgerId 10, entryId 3} wrapping E1.
        let e1 = hex::decode(
            "0e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f",
        )
        .unwrap();
        let rec = to_record(&message_id(10, 3, None), &e1).unwrap();
        assert_eq!(hex::encode(&rec[..12]), "00000004080a100300000029");
        let (id, entry) = from_record(&rec).unwrap();
        assert_eq!((id.ledger_id, id.entry_id, id.partition), (10, 3, None));
        assert_eq!(entry, &e1[..]);
        // Partition −1 is a 10-byte varint, as Java writes it.
        let rec = to_record(&message_id(10, 3, Some(-1)), b"x").unwrap();
        assert_eq!(hex::encode(&rec[..4]), "0000000f");
    }

    #[test]
    fn bad_records_are_errors() {
        let rec = to_record(&message_id(1, 2, None), b"abc").unwrap();
        assert!(from_record(&rec[..rec.len() - 1]).is_err());
        assert!(from_record(&[rec.clone(), vec![0]].concat()).is_err());
        assert!(from_record(&[0, 0, 0, 99]).is_err());
        assert!(from_record(&[]).is_err());
    }
}
