//! Zero-copy views of MessageMetadata, SingleMessageMetadata and
//! BrokerEntryMetadata (spec entry-format.md §3).
//!
//! A view validates the whole message once when it is parsed (wire format,
//! UTF-8, required fields, nested KeyValues), then borrows from the entry
//! buffer. Repeated fields are kept as counts and re-read lazily from the raw
//! bytes, which keeps a view `Copy` and allocation-free.

use crate::error::{EntryError, FormatError, Result, Space};
use crate::format::wire::{packed_varints, utf8, Lossy, Reader, Value};

/// A repeated `KeyValue` field, read lazily from the message that holds it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Properties<'a> {
    raw: &'a [u8],
    field: u32,
    count: u32,
    /// Set when a KeyValue held invalid UTF-8 that was replaced: `iter`
    /// then re-reads with checks, replacing into the same arena.
    lossy: Option<&'a Lossy>,
}

impl<'a> Properties<'a> {
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let field = self.field;
        let mut left = self.count;
        let lossy = self.lossy;
        let mut reader = Reader::new(self.raw, 0, Space::Entry, "KeyValue");
        // Stops after the last KeyValue instead of scanning the rest of the message.
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            // Validated when the owning view was parsed, so errors cannot occur here.
            while let Ok(Some((f, v, _))) = reader.next_field() {
                if f == field {
                    if let Value::Bytes(b) = v {
                        left -= 1;
                        return Some(match lossy {
                            None => validated_key_value(b),
                            Some(l) => parse_key_value(b, 0, Space::Entry, Some(l))
                                .map(|(k, v, _)| (k, v))
                                .unwrap_or(("", "")),
                        });
                    }
                }
            }
            None
        })
    }
}

/// Re-reads a KeyValue that `parse_key_value` accepted when its view was
/// parsed: no UTF-8 re-validation, no error paths.
fn validated_key_value(buf: &[u8]) -> (&str, &str) {
    if let Some((key, value)) = plain_key_value(buf) {
        // SAFETY: as below.
        return unsafe {
            (
                std::str::from_utf8_unchecked(key),
                std::str::from_utf8_unchecked(value),
            )
        };
    }
    let mut r = Reader::new(buf, 0, Space::Entry, "KeyValue");
    let (mut key, mut value): (&[u8], &[u8]) = (b"", b"");
    while let Ok(Some((field, v, _))) = r.next_field() {
        match (field, v) {
            (1, Value::Bytes(b)) => key = b,
            (2, Value::Bytes(b)) => value = b,
            _ => {}
        }
    }
    // SAFETY: both strings passed `std::str::from_utf8` in `parse_key_value`
    // when the owning view was built from these same bytes.
    unsafe {
        (
            std::str::from_utf8_unchecked(key),
            std::str::from_utf8_unchecked(value),
        )
    }
}

/// The shape every producer writes, `0a <len> key 12 <len> value` with both
/// lengths under 128, read without the general field loop; `None` for
/// anything else (which the general reader then handles).
#[inline(always)]
fn plain_key_value(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&[0x0a, k], rest) = buf.split_first_chunk::<2>()? else {
        return None;
    };
    let (key, rest) = rest.split_at_checked(usize::from(k))?;
    let (&[0x12, v], value) = rest.split_first_chunk::<2>()? else {
        return None;
    };
    (k < 0x80 && v < 0x80 && value.len() == usize::from(v)).then_some((key, value))
}

/// A KeyValue's key and value, and whether invalid UTF-8 was replaced.
#[inline]
fn parse_key_value<'a>(
    buf: &'a [u8],
    base: usize,
    space: Space,
    lossy: Option<&'a Lossy>,
) -> Result<(&'a str, &'a str, bool)> {
    if let Some((key, value)) = plain_key_value(buf) {
        if let (Ok(key), Ok(value)) = (utf8(key), utf8(value)) {
            return Ok((key, value, false));
        }
        // Not UTF-8: the general reader below reports which field, or replaces.
    }
    let mut r = Reader::new(buf, base, space, "KeyValue").with_lossy(lossy);
    let (mut key, mut value) = (None, None);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => key = Some(r.expect_str(v, at, "key")?),
            2 => value = Some(r.expect_str(v, at, "value")?),
            _ => {}
        }
    }
    let missing = |field| {
        EntryError::from(FormatError::MissingField {
            message: "KeyValue",
            space,
            offset: base,
            field,
        })
    };
    let (key, value) = (
        key.ok_or_else(|| missing("key"))?,
        value.ok_or_else(|| missing("value"))?,
    );
    // Replaced text lives outside `buf`.
    let inside = |s: &str| buf.as_ptr_range().contains(&s.as_ptr()) || s.is_empty();
    Ok((key, value, !(inside(key) && inside(value))))
}

/// One `EncryptionKeys` entry: key name, encrypted data key, metadata.
#[derive(Debug, Clone, Copy)]
pub struct EncryptionKeyView<'a> {
    pub key: &'a str,
    pub value: &'a [u8],
    pub metadata: Properties<'a>,
}

fn parse_encryption_key<'a>(
    buf: &'a [u8],
    base: usize,
    space: Space,
    lossy: Option<&'a Lossy>,
) -> Result<EncryptionKeyView<'a>> {
    let mut r = Reader::new(buf, base, space, "EncryptionKeys").with_lossy(lossy);
    let (mut key, mut value, mut count) = (None, None, 0u32);
    let mut replaced = false;
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => key = Some(r.expect_str(v, at, "key")?),
            2 => value = Some(r.expect_bytes(v, at, "value")?),
            3 => {
                let kv =
                    parse_key_value(r.expect_bytes(v, at, "metadata")?, base + at, space, lossy)?;
                replaced |= kv.2;
                count += 1;
            }
            _ => {}
        }
    }
    let missing = |field| {
        EntryError::from(FormatError::MissingField {
            message: "EncryptionKeys",
            space,
            offset: base,
            field,
        })
    };
    Ok(EncryptionKeyView {
        key: key.ok_or_else(|| missing("key"))?,
        value: value.ok_or_else(|| missing("value"))?,
        metadata: Properties {
            raw: buf,
            field: 3,
            count,
            lossy: lossy.filter(|_| replaced),
        },
    })
}

/// `marker_type` of a transaction's commit marker.
pub const MARKER_TXN_COMMIT: i32 = 21;
/// `marker_type` of a transaction's abort marker.
pub const MARKER_TXN_ABORT: i32 = 22;

/// MessageMetadata, fields 1–32. `None` means the field was not on the wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageMetadataView<'a> {
    /// The serialized message, for lazy access to repeated fields.
    pub raw: &'a [u8],
    pub producer_name: &'a str,
    pub sequence_id: u64,
    pub publish_time: u64,
    pub properties: Properties<'a>,
    pub replicated_from: Option<&'a str>,
    pub partition_key: Option<&'a str>,
    replicate_to_count: u32,
    pub compression: Option<i32>,
    pub uncompressed_size: Option<u32>,
    pub num_messages_in_batch: Option<i32>,
    pub event_time: Option<u64>,
    encryption_keys_count: u32,
    pub encryption_algo: Option<&'a str>,
    pub encryption_param: Option<&'a [u8]>,
    pub schema_version: Option<&'a [u8]>,
    pub partition_key_b64_encoded: Option<bool>,
    pub ordering_key: Option<&'a [u8]>,
    pub deliver_at_time: Option<i64>,
    pub marker_type: Option<i32>,
    pub txnid_least_bits: Option<u64>,
    pub txnid_most_bits: Option<u64>,
    pub highest_sequence_id: Option<u64>,
    pub null_value: Option<bool>,
    pub uuid: Option<&'a str>,
    pub num_chunks_from_msg: Option<i32>,
    pub total_chunk_msg_size: Option<i32>,
    pub chunk_id: Option<i32>,
    pub null_partition_key: Option<bool>,
    compacted_batch_indexes_count: u32,
    pub last_compacted_batch_index: Option<i32>,
    pub schema_id: Option<&'a [u8]>,
    /// Where invalid UTF-8 was replaced (parsed with `Utf8Errors::Replace`):
    /// lazily re-read fields and the batch's SingleMessageMetadata replace
    /// into it too. `None`: strict.
    pub lossy: Option<&'a Lossy>,
}

impl<'a> MessageMetadataView<'a> {
    /// The transaction the entry was written in, `(most, least)` bits.
    pub fn txn(&self) -> Option<(u64, u64)> {
        self.txnid_most_bits.zip(self.txnid_least_bits)
    }

    /// Parses `buf`, which starts at `base` in the entry. Text that is not
    /// UTF-8 is an error.
    pub fn parse(buf: &'a [u8], base: usize) -> Result<Self> {
        Self::parse_with(buf, base, None)
    }

    /// As [`Self::parse`]; with `lossy`, text that is not UTF-8 is replaced
    /// (U+FFFD per malformed sequence) instead.
    pub fn parse_with(buf: &'a [u8], base: usize, lossy: Option<&'a Lossy>) -> Result<Self> {
        let mut r = Reader::new(buf, base, Space::Entry, "MessageMetadata").with_lossy(lossy);
        let mut m = MessageMetadataView {
            raw: buf,
            properties: Properties {
                raw: buf,
                field: 4,
                count: 0,
                lossy: None,
            },
            lossy,
            ..Default::default()
        };
        let (mut has_producer, mut has_sequence, mut has_publish) = (false, false, false);
        while let Some((field, v, at)) = r.next_field()? {
            match field {
                1 => {
                    m.producer_name = r.expect_str(v, at, "producer_name")?;
                    has_producer = true;
                }
                2 => {
                    m.sequence_id = r.expect_varint(v, at, "sequence_id")?;
                    has_sequence = true;
                }
                3 => {
                    m.publish_time = r.expect_varint(v, at, "publish_time")?;
                    has_publish = true;
                }
                4 => {
                    let (_, _, replaced) = parse_key_value(
                        r.expect_bytes(v, at, "properties")?,
                        base + at,
                        Space::Entry,
                        lossy,
                    )?;
                    if replaced {
                        m.properties.lossy = lossy;
                    }
                    m.properties.count += 1;
                }
                5 => m.replicated_from = Some(r.expect_str(v, at, "replicated_from")?),
                6 => m.partition_key = Some(r.expect_str(v, at, "partition_key")?),
                7 => {
                    r.expect_str(v, at, "replicate_to")?;
                    m.replicate_to_count += 1;
                }
                8 => m.compression = Some(r.expect_i32(v, at, "compression")?),
                9 => {
                    m.uncompressed_size = Some(r.expect_varint(v, at, "uncompressed_size")? as u32)
                }
                11 => {
                    m.num_messages_in_batch = Some(r.expect_i32(v, at, "num_messages_in_batch")?)
                }
                12 => m.event_time = Some(r.expect_varint(v, at, "event_time")?),
                13 => {
                    parse_encryption_key(
                        r.expect_bytes(v, at, "encryption_keys")?,
                        base + at,
                        Space::Entry,
                        lossy,
                    )?;
                    m.encryption_keys_count += 1;
                }
                14 => m.encryption_algo = Some(r.expect_str(v, at, "encryption_algo")?),
                15 => m.encryption_param = Some(r.expect_bytes(v, at, "encryption_param")?),
                16 => m.schema_version = Some(r.expect_bytes(v, at, "schema_version")?),
                17 => {
                    m.partition_key_b64_encoded =
                        Some(r.expect_bool(v, at, "partition_key_b64_encoded")?)
                }
                18 => m.ordering_key = Some(r.expect_bytes(v, at, "ordering_key")?),
                19 => m.deliver_at_time = Some(r.expect_varint(v, at, "deliver_at_time")? as i64),
                20 => m.marker_type = Some(r.expect_i32(v, at, "marker_type")?),
                22 => m.txnid_least_bits = Some(r.expect_varint(v, at, "txnid_least_bits")?),
                23 => m.txnid_most_bits = Some(r.expect_varint(v, at, "txnid_most_bits")?),
                24 => {
                    m.highest_sequence_id = Some(r.expect_varint(v, at, "highest_sequence_id")?)
                }
                25 => m.null_value = Some(r.expect_bool(v, at, "null_value")?),
                26 => m.uuid = Some(r.expect_str(v, at, "uuid")?),
                27 => m.num_chunks_from_msg = Some(r.expect_i32(v, at, "num_chunks_from_msg")?),
                28 => m.total_chunk_msg_size = Some(r.expect_i32(v, at, "total_chunk_msg_size")?),
                29 => m.chunk_id = Some(r.expect_i32(v, at, "chunk_id")?),
                30 => m.null_partition_key = Some(r.expect_bool(v, at, "null_partition_key")?),
                31 => match v {
                    Value::Varint(x) => {
                        m.compacted_batch_indexes_count += 1;
                        m.last_compacted_batch_index = Some(x as i32);
                    }
                    // Java writes repeated scalars unpacked; accept packed as protobuf requires.
                    Value::Bytes(b) => {
                        for x in packed_varints(b) {
                            let x = x.ok_or_else(|| {
                                r.error(at, "malformed packed compacted_batch_indexes")
                            })?;
                            m.compacted_batch_indexes_count += 1;
                            m.last_compacted_batch_index = Some(x as i32);
                        }
                    }
                    _ => {
                        return Err(r.error(
                            at,
                            "field `compacted_batch_indexes` has the wrong wire type",
                        ))
                    }
                },
                32 => m.schema_id = Some(r.expect_bytes(v, at, "schema_id")?),
                _ => {} // unknown fields are skipped, as Java does
            }
        }
        let missing = |field| {
            EntryError::from(FormatError::MissingField {
                message: "MessageMetadata",
                space: Space::Entry,
                offset: base,
                field,
            })
        };
        if !has_producer {
            return Err(missing("producer_name"));
        }
        if !has_sequence {
            return Err(missing("sequence_id"));
        }
        if !has_publish {
            return Err(missing("publish_time"));
        }
        Ok(m)
    }

    /// Batch framing is marked by the *presence* of `num_messages_in_batch`.
    pub fn is_batch(&self) -> bool {
        self.num_messages_in_batch.is_some()
    }

    /// Messages in the entry: the batch count, else 1.
    pub fn num_messages(&self) -> i32 {
        self.num_messages_in_batch.unwrap_or(1)
    }

    pub fn is_encrypted(&self) -> bool {
        self.encryption_keys_count > 0
    }

    /// The metadata of this entry once its payload is decrypted: it reads as
    /// not encrypted (the keys stay readable through [`Self::encryption_keys`]).
    pub fn decrypted(mut self) -> Self {
        self.encryption_keys_count = 0;
        self
    }

    pub fn is_chunk(&self) -> bool {
        self.num_chunks_from_msg.is_some_and(|n| n > 1)
    }

    pub fn replicate_to(&self) -> impl Iterator<Item = &'a str> + 'a {
        let lossy = self.lossy;
        self.repeated(7).filter_map(move |(v, _)| match v {
            Value::Bytes(b) => Lossy::text(lossy, b),
            _ => None,
        })
    }

    pub fn replicate_to_count(&self) -> usize {
        self.replicate_to_count as usize
    }

    pub fn encryption_keys(&self) -> impl Iterator<Item = EncryptionKeyView<'a>> + 'a {
        let lossy = self.lossy;
        self.repeated(13).filter_map(move |(v, _)| match v {
            Value::Bytes(b) => parse_encryption_key(b, 0, Space::Entry, lossy).ok(),
            _ => None,
        })
    }

    pub fn encryption_keys_count(&self) -> usize {
        self.encryption_keys_count as usize
    }

    pub fn compacted_batch_indexes_count(&self) -> usize {
        self.compacted_batch_indexes_count as usize
    }

    /// Field 31, in wire order, packed or not.
    pub fn compacted_batch_indexes(&self) -> impl Iterator<Item = i32> + 'a {
        self.repeated(31).flat_map(|(v, _)| {
            let (single, packed) = match v {
                Value::Varint(x) => (Some(x as i32), None),
                Value::Bytes(b) => (None, Some(packed_varints(b).map(|x| x.unwrap_or(0) as i32))),
                _ => (None, None),
            };
            single.into_iter().chain(packed.into_iter().flatten())
        })
    }

    fn repeated(&self, field: u32) -> impl Iterator<Item = (Value<'a>, usize)> + 'a {
        let mut r = Reader::new(self.raw, 0, Space::Entry, "MessageMetadata");
        std::iter::from_fn(move || loop {
            match r.next_field() {
                Ok(Some((f, v, at))) if f == field => return Some((v, at)),
                Ok(Some(_)) => continue,
                _ => return None,
            }
        })
    }
}

/// SingleMessageMetadata: the header of one message inside a batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleMessageMetadataView<'a> {
    pub properties: Properties<'a>,
    pub partition_key: Option<&'a str>,
    pub payload_size: i32,
    pub compacted_out: Option<bool>,
    pub event_time: Option<u64>,
    pub partition_key_b64_encoded: Option<bool>,
    pub ordering_key: Option<&'a [u8]>,
    pub sequence_id: Option<u64>,
    pub null_value: Option<bool>,
    pub null_partition_key: Option<bool>,
}

impl<'a> SingleMessageMetadataView<'a> {
    /// Parses `buf`, which starts at `base` in the batch buffer.
    #[inline]
    pub fn parse(buf: &'a [u8], base: usize) -> Result<Self> {
        Self::parse_with(buf, base, None)
    }

    /// As [`Self::parse`]; with `lossy`, text that is not UTF-8 is replaced.
    #[inline]
    pub fn parse_with(buf: &'a [u8], base: usize, lossy: Option<&'a Lossy>) -> Result<Self> {
        let mut r =
            Reader::new(buf, base, Space::BatchBuffer, "SingleMessageMetadata").with_lossy(lossy);
        let mut m = SingleMessageMetadataView {
            properties: Properties {
                raw: buf,
                field: 1,
                count: 0,
                lossy: None,
            },
            ..Default::default()
        };
        let mut has_size = false;
        while let Some((field, v, at)) = r.next_field()? {
            match field {
                1 => {
                    let (_, _, replaced) = parse_key_value(
                        r.expect_bytes(v, at, "properties")?,
                        base + at,
                        Space::BatchBuffer,
                        lossy,
                    )?;
                    if replaced {
                        m.properties.lossy = lossy;
                    }
                    m.properties.count += 1;
                }
                2 => m.partition_key = Some(r.expect_str(v, at, "partition_key")?),
                3 => {
                    m.payload_size = r.expect_i32(v, at, "payload_size")?;
                    has_size = true;
                }
                4 => m.compacted_out = Some(r.expect_bool(v, at, "compacted_out")?),
                5 => m.event_time = Some(r.expect_varint(v, at, "event_time")?),
                6 => {
                    m.partition_key_b64_encoded =
                        Some(r.expect_bool(v, at, "partition_key_b64_encoded")?)
                }
                7 => m.ordering_key = Some(r.expect_bytes(v, at, "ordering_key")?),
                8 => m.sequence_id = Some(r.expect_varint(v, at, "sequence_id")?),
                9 => m.null_value = Some(r.expect_bool(v, at, "null_value")?),
                10 => m.null_partition_key = Some(r.expect_bool(v, at, "null_partition_key")?),
                _ => {}
            }
        }
        if !has_size {
            return Err(EntryError::from(FormatError::MissingField {
                message: "SingleMessageMetadata",
                space: Space::BatchBuffer,
                offset: base,
                field: "payload_size",
            }));
        }
        Ok(m)
    }

    pub fn is_compacted_out(&self) -> bool {
        self.compacted_out == Some(true)
    }
}

/// BrokerEntryMetadata (PIP-70), from the `0e 02` prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerEntryMetadataView {
    pub broker_timestamp: Option<u64>,
    pub index: Option<u64>,
}

impl BrokerEntryMetadataView {
    pub fn parse(buf: &[u8], base: usize) -> Result<Self> {
        let mut r = Reader::new(buf, base, Space::Entry, "BrokerEntryMetadata");
        let mut m = BrokerEntryMetadataView::default();
        while let Some((field, v, at)) = r.next_field()? {
            match field {
                1 => m.broker_timestamp = Some(r.expect_varint(v, at, "broker_timestamp")?),
                2 => m.index = Some(r.expect_varint(v, at, "index")?),
                _ => {}
            }
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests;
