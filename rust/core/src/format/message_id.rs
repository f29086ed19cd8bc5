//! Message ids as Pulsar's Java client serialises, prints, orders and seeks
//! them (spec chunks-processors-offload.md §1.4–§1.6, entry-format.md §3.4).
//!
//! - [`MessageId`]: a plain or batch message id (`MessageIdImpl`,
//!   `BatchMessageIdImpl`);
//! - [`ChunkMessageId`]: a chunked message's id (`ChunkMessageIdImpl`): the
//!   first and last chunk positions. It *is* the last chunk's position for
//!   equality and ordering, and seeks to the first chunk (PIP-107);
//! - [`AnyMessageId`]: what [`AnyMessageId::deserialize`] returns.
//!
//! Serialised bytes are Java's `MessageId.toByteArray()`, byte for byte.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use prost::Message as _;

use crate::error::{EntryError, FormatError, Result, Space};
use crate::format::wire::{Reader, Value};
use crate::proto;

/// A message position: `(ledger_id, entry_id, partition, batch_index)`.
///
/// `batch_index` is −1 for a non-batched message and `partition` −1 for a
/// non-partitioned topic, as in Java. `batch_size` (messages in the batch) is
/// carried for serialisation only: like Java, equality, ordering and hashing
/// ignore it.
#[derive(Debug, Clone, Copy)]
pub struct MessageId {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
    pub batch_index: i32,
    pub batch_size: Option<i32>,
}

impl MessageId {
    /// A non-batched message id.
    pub fn new(ledger_id: i64, entry_id: i64, partition: i32) -> Self {
        MessageId {
            ledger_id,
            entry_id,
            partition,
            batch_index: -1,
            batch_size: None,
        }
    }

    /// A message inside a batch of `batch_size` messages.
    pub fn batch(
        ledger_id: i64,
        entry_id: i64,
        partition: i32,
        batch_index: i32,
        batch_size: Option<i32>,
    ) -> Self {
        MessageId {
            ledger_id,
            entry_id,
            partition,
            batch_index,
            batch_size,
        }
    }

    /// Java's `BatchMessageIdImpl` iff a batch index is set.
    pub fn is_batch(&self) -> bool {
        self.batch_index != -1
    }

    /// The fields Java compares, hashes and orders by (`MessageIdAdvUtils`).
    pub fn key(&self) -> (i64, i64, i32, i32) {
        (
            self.ledger_id,
            self.entry_id,
            self.partition,
            self.batch_index,
        )
    }

    /// `MessageIdImpl.writeMessageIdData`: partition only when ≥ 0, batch index
    /// unless −1, and the batch size always (0 when unknown: Java writes any
    /// value > −1 and its plain ids pass 0).
    fn to_proto(self) -> proto::MessageIdData {
        proto::MessageIdData {
            ledger_id: self.ledger_id as u64,
            entry_id: self.entry_id as u64,
            partition: (self.partition >= 0).then_some(self.partition),
            batch_index: (self.batch_index != -1).then_some(self.batch_index),
            ack_set: vec![],
            batch_size: Some(self.batch_size.filter(|&s| s > -1).unwrap_or(0)),
            first_chunk_message_id: None,
        }
    }

    /// `MessageId.toByteArray()`.
    pub fn serialize(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    /// The position a consumer seeks to for this id (the id itself).
    pub fn seek_position(&self) -> MessageId {
        *self
    }
}

impl PartialEq for MessageId {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for MessageId {}

impl Hash for MessageId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl PartialOrd for MessageId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MessageId {
    /// `MessageIdAdv.compareTo`: ledger, entry, partition, batch index (signed).
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for MessageId {
    /// `ledger:entry:partition`, plus `:batch_index` for a batch message, as
    /// `MessageIdImpl.toString` / `BatchMessageIdImpl.toString` print them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.ledger_id, self.entry_id, self.partition)?;
        if self.is_batch() {
            write!(f, ":{}", self.batch_index)?;
        }
        Ok(())
    }
}

/// A chunked message's id: its first and last chunk (PIP-107).
#[derive(Debug, Clone, Copy)]
pub struct ChunkMessageId {
    pub first: MessageId,
    pub last: MessageId,
}

impl ChunkMessageId {
    /// Chunks are never batched: both halves are plain positions.
    pub fn new(first: MessageId, last: MessageId) -> Self {
        ChunkMessageId {
            first: MessageId::new(first.ledger_id, first.entry_id, first.partition),
            last: MessageId::new(last.ledger_id, last.entry_id, last.partition),
        }
    }

    /// `ChunkMessageIdImpl.toByteArray()`: the last chunk as the outer
    /// MessageIdData and the first chunk in field 7, each with batch size 0.
    pub fn serialize(&self) -> Vec<u8> {
        let mut outer = self.last.to_proto();
        outer.first_chunk_message_id = Some(Box::new(self.first.to_proto()));
        outer.encode_to_vec()
    }

    /// A consumer seeks to the first chunk, or it would skip the message.
    pub fn seek_position(&self) -> MessageId {
        self.first
    }
}

impl fmt::Display for ChunkMessageId {
    /// `first;last`, e.g. `12:3:-1;12:7:-1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{};{}", self.first, self.last)
    }
}

/// Either kind of id, as [`AnyMessageId::deserialize`] returns it. Equality,
/// hashing and ordering use the (last) position only, so a chunk id equals a
/// plain id at its last chunk, as in Java; unlike Java's `ChunkMessageIdImpl`,
/// whose `hashCode` also mixes in the first chunk, hashing stays consistent
/// with equality.
#[derive(Debug, Clone, Copy)]
pub enum AnyMessageId {
    Message(MessageId),
    Chunk(ChunkMessageId),
}

impl AnyMessageId {
    /// The position that identifies the message: the last chunk for a chunk id.
    pub fn position(&self) -> MessageId {
        match self {
            AnyMessageId::Message(m) => *m,
            AnyMessageId::Chunk(c) => c.last,
        }
    }

    pub fn seek_position(&self) -> MessageId {
        match self {
            AnyMessageId::Message(m) => m.seek_position(),
            AnyMessageId::Chunk(c) => c.seek_position(),
        }
    }

    pub fn serialize(&self) -> Vec<u8> {
        match self {
            AnyMessageId::Message(m) => m.serialize(),
            AnyMessageId::Chunk(c) => c.serialize(),
        }
    }

    /// `MessageIdImpl.fromByteArray`: a batch index wins (the chunk field is
    /// then ignored), else `first_chunk_message_id` makes a chunk id, else a
    /// plain id. Ack sets, unknown fields and (for plain ids) the batch size
    /// are ignored, as in Java; missing required fields are an error.
    pub fn deserialize(bytes: &[u8]) -> Result<AnyMessageId> {
        let outer = parse_id_data(bytes, 0)?;
        if let Some(batch_index) = outer.batch_index {
            return Ok(AnyMessageId::Message(MessageId::batch(
                outer.ledger_id,
                outer.entry_id,
                outer.partition,
                batch_index,
                outer.batch_size,
            )));
        }
        let last = MessageId::new(outer.ledger_id, outer.entry_id, outer.partition);
        match outer.first_chunk {
            Some((raw, at)) => {
                let first = parse_id_data(raw, at)?;
                Ok(AnyMessageId::Chunk(ChunkMessageId::new(
                    MessageId::new(first.ledger_id, first.entry_id, first.partition),
                    last,
                )))
            }
            None => Ok(AnyMessageId::Message(last)),
        }
    }
}

/// A message id as plain values, the form a binding passes it in:
/// `(ledger_id, entry_id, partition, batch_index, batch_size)` of the
/// (last) position, and the first chunk's `(ledger_id, entry_id, partition)`
/// for a chunk id.
pub type IdParts = (i64, i64, i32, i32, Option<i32>, Option<(i64, i64, i32)>);

impl AnyMessageId {
    /// The id of [`IdParts`]: a chunk id when the first chunk is given (its
    /// positions plain, as [`ChunkMessageId::new`] makes them).
    pub fn from_parts(parts: IdParts) -> AnyMessageId {
        let (ledger_id, entry_id, partition, batch_index, batch_size, first) = parts;
        let id = MessageId::batch(ledger_id, entry_id, partition, batch_index, batch_size);
        match first {
            None => id.into(),
            Some((l, e, p)) => ChunkMessageId::new(MessageId::new(l, e, p), id).into(),
        }
    }

    /// The [`IdParts`] of this id.
    pub fn parts(&self) -> IdParts {
        let m = self.position();
        let first = match self {
            AnyMessageId::Message(_) => None,
            AnyMessageId::Chunk(c) => {
                Some((c.first.ledger_id, c.first.entry_id, c.first.partition))
            }
        };
        let (l, e, p, b) = m.key();
        (l, e, p, b, m.batch_size, first)
    }
}

impl From<MessageId> for AnyMessageId {
    fn from(m: MessageId) -> Self {
        AnyMessageId::Message(m)
    }
}

impl From<ChunkMessageId> for AnyMessageId {
    fn from(c: ChunkMessageId) -> Self {
        AnyMessageId::Chunk(c)
    }
}

impl PartialEq for AnyMessageId {
    fn eq(&self, other: &Self) -> bool {
        self.position() == other.position()
    }
}

impl Eq for AnyMessageId {}

impl Hash for AnyMessageId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.position().hash(state)
    }
}

impl PartialOrd for AnyMessageId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for AnyMessageId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.position().cmp(&other.position())
    }
}

impl fmt::Display for AnyMessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyMessageId::Message(m) => m.fmt(f),
            AnyMessageId::Chunk(c) => c.fmt(f),
        }
    }
}

/// The MessageIdData fields that matter, with presence.
struct IdData<'a> {
    ledger_id: i64,
    entry_id: i64,
    partition: i32,
    batch_index: Option<i32>,
    batch_size: Option<i32>,
    /// Raw nested message and its offset.
    first_chunk: Option<(&'a [u8], usize)>,
}

fn parse_id_data(buf: &[u8], base: usize) -> Result<IdData<'_>> {
    let mut r = Reader::new(buf, base, Space::MessageId, "MessageIdData");
    let (mut ledger, mut entry) = (None, None);
    let mut data = IdData {
        ledger_id: 0,
        entry_id: 0,
        partition: -1,
        batch_index: None,
        batch_size: None,
        first_chunk: None,
    };
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => ledger = Some(r.expect_varint(v, at, "ledgerId")? as i64),
            2 => entry = Some(r.expect_varint(v, at, "entryId")? as i64),
            3 => data.partition = r.expect_i32(v, at, "partition")?,
            4 => data.batch_index = Some(r.expect_i32(v, at, "batch_index")?),
            // ack_set: unpacked varints or a packed run; Java's fromByteArray ignores it.
            5 if !matches!(v, Value::Varint(_) | Value::Bytes(_)) => {
                return Err(r.error(at, "field `ack_set` has the wrong wire type"));
            }
            6 => data.batch_size = Some(r.expect_i32(v, at, "batch_size")?),
            7 => {
                let raw = r.expect_bytes(v, at, "first_chunk_message_id")?;
                // The nested message starts after its key and length prefix.
                let start = base + (raw.as_ptr() as usize - buf.as_ptr() as usize);
                data.first_chunk = Some((raw, start));
            }
            _ => {}
        }
    }
    let missing = |field| {
        EntryError::from(FormatError::MissingField {
            message: "MessageIdData",
            space: Space::MessageId,
            offset: base,
            field,
        })
    };
    data.ledger_id = ledger.ok_or_else(|| missing("ledgerId"))?;
    data.entry_id = entry.ok_or_else(|| missing("entryId"))?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        hex::encode(b)
    }

    #[test]
    fn spec_chunk_id_vector_is_byte_exact() {
        let id = ChunkMessageId::new(MessageId::new(10, 2, -1), MessageId::new(10, 5, -1));
        assert_eq!(hex(&id.serialize()), "080a100530003a06080a10023000");
        assert_eq!(id.to_string(), "10:2:-1;10:5:-1");
        match AnyMessageId::deserialize(&id.serialize()).unwrap() {
            AnyMessageId::Chunk(c) => {
                assert_eq!(c.first.key(), (10, 2, -1, -1));
                assert_eq!(c.last.key(), (10, 5, -1, -1));
            }
            other => panic!("expected a chunk id, got {other:?}"),
        }
    }

    #[test]
    fn plain_and_batch_ids_write_batch_size_like_java() {
        assert_eq!(hex(&MessageId::new(10, 3, -1).serialize()), "080a10033000");
        assert_eq!(
            hex(&MessageId::new(10, 3, 2).serialize()),
            "080a1003180230 00".replace(' ', "")
        );
        assert_eq!(
            hex(&MessageId::batch(10, 3, -1, 1, Some(3)).serialize()),
            "080a100320013003"
        );
        assert_eq!(
            hex(&MessageId::batch(10, 3, -1, 1, None).serialize()),
            "080a100320013000"
        );
    }

    #[test]
    fn parse_precedence_batch_index_then_first_chunk_then_plain() {
        // Batch index and a chunk field: the batch index wins.
        let mut both = MessageId::batch(10, 5, -1, 2, Some(4)).to_proto();
        both.first_chunk_message_id = Some(Box::new(MessageId::new(10, 2, -1).to_proto()));
        match AnyMessageId::deserialize(&both.encode_to_vec()).unwrap() {
            AnyMessageId::Message(m) => {
                assert_eq!(m.key(), (10, 5, -1, 2));
                assert_eq!(m.batch_size, Some(4));
            }
            other => panic!("{other:?}"),
        }
        // The C++ client writes no batch size at all.
        let cpp = hex::decode("080a10053a04080a1002").unwrap();
        assert!(matches!(
            AnyMessageId::deserialize(&cpp).unwrap(),
            AnyMessageId::Chunk(_)
        ));
        let plain = AnyMessageId::deserialize(&hex::decode("080a1003").unwrap()).unwrap();
        assert_eq!(plain.to_string(), "10:3:-1");
        // CommandMessage form (explicit -1 as 10-byte varints) is a batch id in Java.
        let cmd = hex::decode("080a100318ffffffffffffffffff0120ffffffffffffffffff01").unwrap();
        let id = AnyMessageId::deserialize(&cmd).unwrap();
        assert_eq!(id.position().key(), (10, 3, -1, -1));
    }

    #[test]
    fn parts_round_trip() {
        let chunk = (7, 4, 0, -1, None, Some((7, 1, 0)));
        let id = AnyMessageId::from_parts(chunk);
        assert!(matches!(id, AnyMessageId::Chunk(_)));
        assert_eq!(id.to_string(), "7:1:0;7:4:0");
        assert_eq!(id.parts(), chunk);
        assert_eq!(
            AnyMessageId::deserialize(&id.serialize()).unwrap().parts(),
            chunk
        );
        let batch = (7, 4, 0, 2, Some(5), None);
        let id = AnyMessageId::from_parts(batch);
        assert_eq!(
            id.serialize(),
            MessageId::batch(7, 4, 0, 2, Some(5)).serialize()
        );
        assert_eq!(
            AnyMessageId::deserialize(&id.serialize()).unwrap().parts(),
            batch
        );
        // A chunk's halves are plain positions, whatever the parts say.
        let batched = AnyMessageId::from_parts((7, 4, 0, 1, Some(3), Some((7, 1, 0))));
        assert_eq!(batched.parts(), chunk);
    }

    #[test]
    fn chunk_ids_equal_and_order_by_the_last_chunk() {
        let chunk: AnyMessageId =
            ChunkMessageId::new(MessageId::new(7, 1, 0), MessageId::new(7, 4, 0)).into();
        let last: AnyMessageId = MessageId::new(7, 4, 0).into();
        let middle: AnyMessageId = MessageId::new(7, 2, 0).into();
        assert_eq!(chunk, last);
        assert!(middle < chunk);
        let mut set = std::collections::HashSet::new();
        set.insert(chunk);
        assert!(set.contains(&last), "hash is consistent with equality");
        assert_eq!(chunk.seek_position().key(), (7, 1, 0, -1));
        assert_eq!(last.seek_position().key(), (7, 4, 0, -1));
        // Signed comparison, as Java's Long.compare.
        assert!(MessageId::new(-1, 0, -1) < MessageId::new(0, 0, -1));
    }

    #[test]
    fn bad_bytes_are_errors() {
        let e = AnyMessageId::deserialize(&hex::decode("1003").unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MessageIdData at message-id offset 0 is missing required field `ledgerId`"
        );
        assert!(AnyMessageId::deserialize(&[0x08]).is_err());
        let nested_missing = hex::decode("080a10053a021002").unwrap();
        let e = AnyMessageId::deserialize(&nested_missing).unwrap_err();
        assert!(e.to_string().contains("offset 6"), "{e}");
    }
}
