//! Kafka RecordBatch v2 (magic 2) and its records (spec
//! chunks-processors-offload.md §3.7). A KoP `entry.format=kafka` payload is
//! a Kafka `MemoryRecords` buffer: one or several batches back to back.
//!
//! Every size read from the data is checked against the bytes that remain
//! before it is used, and records borrow from the (decompressed) buffer.

use crate::format::crc::crc32c;

/// Fixed part of a v2 batch, up to and including the record count.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// baseOffset + batchLength: the bytes `batchLength` does not count.
pub const LOG_OVERHEAD: usize = 12;
/// The CRC covers the batch from the attributes to its end.
const CRC_START: usize = 21;

pub const ATTR_TIMESTAMP_LOG_APPEND: i16 = 0x08;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;

/// The header of one record batch, and where its records section lies.
#[derive(Debug, Clone, Copy)]
pub struct BatchHeader<'a> {
    /// Position of the batch in the payload.
    pub position: usize,
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
    /// The records section (compressed when the codec bits say so).
    pub records: &'a [u8],
}

impl BatchHeader<'_> {
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_TIMESTAMP_LOG_APPEND != 0
    }

    /// Offsets the batch occupies: `lastOffsetDelta + 1`.
    pub fn offset_span(&self) -> i64 {
        i64::from(self.last_offset_delta) + 1
    }

    /// A record's sequence number, wrapping at `i32::MAX` as Kafka does.
    pub fn sequence(&self, offset_delta: i32) -> Option<i32> {
        if self.base_sequence < 0 {
            return None;
        }
        let base = i64::from(self.base_sequence);
        let next = base + i64::from(offset_delta);
        Some(if next > i64::from(i32::MAX) {
            (next - i64::from(i32::MAX) - 1) as i32
        } else {
            next as i32
        })
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// A failure at a byte position of the payload (or of a records section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub position: usize,
    pub reason: String,
}

impl FormatError {
    fn new(position: usize, reason: impl Into<String>) -> Self {
        FormatError {
            position,
            reason: reason.into(),
        }
    }
}

/// Splits a MemoryRecords buffer into its batches. With `verify_crc`, each
/// batch's CRC-32C must match. Only magic 2 is accepted.
pub fn split_batches(
    payload: &[u8],
    verify_crc: bool,
) -> Result<Vec<BatchHeader<'_>>, FormatError> {
    let mut batches = Vec::new();
    let mut pos = 0;
    while pos < payload.len() {
        let rest = &payload[pos..];
        if rest.len() < LOG_OVERHEAD {
            return Err(FormatError::new(
                pos,
                format!("truncated batch header: {} bytes left", rest.len()),
            ));
        }
        let batch_length = be_i32(rest, 8);
        let total = usize::try_from(batch_length)
            .ok()
            .and_then(|l| l.checked_add(LOG_OVERHEAD))
            .filter(|&t| t >= RECORD_BATCH_OVERHEAD)
            .ok_or_else(|| FormatError::new(pos, format!("invalid batchLength {batch_length}")))?;
        if total > rest.len() {
            return Err(FormatError::new(
                pos,
                format!(
                    "batchLength {batch_length} runs past the payload ({} bytes left)",
                    rest.len() - LOG_OVERHEAD
                ),
            ));
        }
        let b = &rest[..total];
        let magic = b[16] as i8;
        if magic != 2 {
            return Err(FormatError::new(
                pos,
                format!("unsupported Kafka message format: magic {magic} (only v2 record batches are decoded)"),
            ));
        }
        let crc = be_i32(b, 17) as u32;
        if verify_crc {
            let computed = crc32c(&b[CRC_START..]);
            if computed != crc {
                return Err(FormatError::new(
                    pos,
                    format!("batch crc32c mismatch: stored {crc:#010x}, computed {computed:#010x}"),
                ));
            }
        }
        let records_count = be_i32(b, 57);
        if records_count < 0 {
            return Err(FormatError::new(
                pos,
                format!("negative record count {records_count}"),
            ));
        }
        batches.push(BatchHeader {
            position: pos,
            base_offset: be_i64(b, 0),
            partition_leader_epoch: be_i32(b, 12),
            crc,
            attributes: be_i16(b, 21),
            last_offset_delta: be_i32(b, 23),
            base_timestamp: be_i64(b, 27),
            max_timestamp: be_i64(b, 35),
            producer_id: be_i64(b, 43),
            producer_epoch: be_i16(b, 51),
            base_sequence: be_i32(b, 53),
            records_count,
            records: &b[RECORD_BATCH_OVERHEAD..],
        });
        pos += total;
    }
    Ok(batches)
}

/// One record, borrowing from the records section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Header keys are UTF-8 text in Kafka; values are bytes or null.
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

/// A cursor over a records section, reading Kafka's zigzag varints.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn fail(&self, reason: impl Into<String>) -> FormatError {
        FormatError::new(self.pos, reason)
    }

    fn varlong(&mut self, max_bytes: usize) -> Result<i64, FormatError> {
        let start = self.pos;
        let mut raw: u64 = 0;
        for i in 0..max_bytes {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(FormatError::new(start, "truncated varint"));
            };
            self.pos += 1;
            raw |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(FormatError::new(
            start,
            format!("varint longer than {max_bytes} bytes"),
        ))
    }

    fn varint(&mut self) -> Result<i32, FormatError> {
        let start = self.pos;
        let v = self.varlong(5)?;
        i32::try_from(v).map_err(|_| FormatError::new(start, "varint overflows 32 bits"))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                self.fail(format!(
                    "{what} of {n} bytes runs past the record ({} left)",
                    self.buf.len() - self.pos
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A length-prefixed byte string; length −1 is null.
    fn nullable_bytes(&mut self, what: &str) -> Result<Option<&'a [u8]>, FormatError> {
        let at = self.pos;
        match self.varint()? {
            -1 => Ok(None),
            n if n < 0 => Err(FormatError::new(at, format!("invalid {what} length {n}"))),
            n => self.take(n as usize, what).map(Some),
        }
    }
}

/// Parses exactly `count` records from a (decompressed) records section,
/// appending to `out`. Leftover bytes are an error, as in Kafka's reader.
pub fn parse_records<'a>(
    buf: &'a [u8],
    count: i32,
    out: &mut Vec<Record<'a>>,
) -> Result<(), FormatError> {
    let mut c = Cursor { buf, pos: 0 };
    for i in 0..count {
        let at = c.pos;
        let length = c.varint()?;
        let length = usize::try_from(length)
            .map_err(|_| FormatError::new(at, format!("record {i}: negative length {length}")))?;
        let body = c.take(length, "record")?;
        let body_start = c.pos - length;
        let mut r = Cursor { buf: body, pos: 0 };
        let parsed = (|| {
            r.take(1, "attributes")?;
            let timestamp_delta = r.varlong(10)?;
            let offset_delta = r.varint()?;
            let key = r.nullable_bytes("key")?;
            let value = r.nullable_bytes("value")?;
            let header_count = r.varint()?;
            if header_count < 0 {
                return Err(r.fail(format!("negative header count {header_count}")));
            }
            let mut headers = Vec::new();
            for _ in 0..header_count {
                let key_at = r.pos;
                let key = r
                    .nullable_bytes("header key")?
                    .ok_or_else(|| FormatError::new(key_at, "null header key"))?;
                let value = r.nullable_bytes("header value")?;
                headers.push((key, value));
            }
            if r.pos != body.len() {
                return Err(r.fail(format!(
                    "record length {length} but its fields end after {} bytes",
                    r.pos
                )));
            }
            Ok(Record {
                timestamp_delta,
                offset_delta,
                key,
                value,
                headers,
            })
        })();
        match parsed {
            Ok(record) => out.push(record),
            Err(e) => {
                return Err(FormatError::new(
                    body_start + e.position,
                    format!("record {i}: {}", e.reason),
                ))
            }
        }
    }
    if c.pos != buf.len() {
        return Err(FormatError::new(
            c.pos,
            format!(
                "{} bytes left after the {count} declared records",
                buf.len() - c.pos
            ),
        ));
    }
    Ok(())
}

/// The type of a control record (key = int16 version, int16 type).
pub fn control_type(key: Option<&[u8]>) -> Option<i16> {
    let key = key?;
    (key.len() >= 4).then(|| be_i16(key, 2))
}

pub const CONTROL_ABORT: i16 = 0;
pub const CONTROL_COMMIT: i16 = 1;
