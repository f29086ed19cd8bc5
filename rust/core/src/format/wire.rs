//! A borrowing protobuf wire-format reader.
//!
//! prost decodes into owned structs (a `String` per string field, a `Vec` per
//! repeated field). The decode hot path instead reads fields in place and
//! borrows strings and bytes from the entry buffer, so splitting a batch makes
//! no heap allocation per message. prost still serves encoding and the owned
//! types in `proto`.
//!
//! Measured (`cargo bench --bench codec`, group `metadata_parse`, and
//! callgrind instruction counts; figures in benches/README.md): the views
//! parse a typical batch header in 0.56x prost's instructions and a rich one
//! in 0.25x, a plain SingleMessageMetadata in 0.68x and a keyed one in 0.24x
//! (prost allocates a `String` or `Vec` per string, key and property); by
//! time 1.8x, 4.9x, 1.1x and 5.5x prost's speed. What makes them win: one-
//! and two-byte varints and the field loop inlined with their error paths
//! cold, an inlined ASCII check before UTF-8 validation, and the usual
//! `0a len key 12 len value` KeyValue read without the loop.

use std::cell::RefCell;

use crate::error::{EntryError, FormatError, Result, Space};

/// What a string field that is not valid UTF-8 becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Utf8Errors {
    /// Each malformed sequence becomes U+FFFD, as Pulsar's Java client reads
    /// it (LightProto's `readString` is Netty's `ByteBuf.toString(UTF_8)`,
    /// which replaces malformed input); the message is kept.
    #[default]
    Replace,
    /// The field is an error: the entry becomes one error row naming it.
    Error,
}

impl std::str::FromStr for Utf8Errors {
    type Err = EntryError;

    /// `replace` or `error` (any case).
    fn from_str(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "replace" => Ok(Utf8Errors::Replace),
            "error" => Ok(Utf8Errors::Error),
            _ => Err(EntryError::Options(format!(
                "unknown utf8_errors {name:?}; expected \"replace\" or \"error\""
            ))),
        }
    }
}

impl Utf8Errors {
    pub fn name(self) -> &'static str {
        match self {
            Utf8Errors::Replace => "replace",
            Utf8Errors::Error => "error",
        }
    }

    /// `lossy` when invalid text is to be replaced, else `None` (strict).
    pub fn arena(self, lossy: &Lossy) -> Option<&Lossy> {
        (self == Utf8Errors::Replace).then_some(lossy)
    }
}

/// Holds the replacement text of string fields that were not valid UTF-8
/// (U+FFFD per malformed sequence, `String::from_utf8_lossy`), so views can
/// keep borrowing `&str` with the arena's lifetime. Allocates only for such
/// fields; valid text stays borrowed from the entry.
#[derive(Debug, Default)]
pub struct Lossy {
    texts: RefCell<Vec<Box<str>>>,
}

impl Lossy {
    /// `b` with each malformed sequence replaced by U+FFFD.
    pub fn replace(&self, b: &[u8]) -> &str {
        let text: Box<str> = String::from_utf8_lossy(b).into();
        let ptr: *const str = &*text;
        self.texts.borrow_mut().push(text);
        // SAFETY: the text lives in its own heap allocation, which neither
        // moves when the vector grows nor is freed before `self` (boxes are
        // only ever pushed); the returned borrow is tied to `&self`.
        unsafe { &*ptr }
    }

    /// `b` as text: borrowed when valid, replaced (with `lossy`) otherwise.
    pub fn text<'a>(lossy: Option<&'a Lossy>, b: &'a [u8]) -> Option<&'a str> {
        match utf8(b) {
            Ok(s) => Some(s),
            Err(_) => lossy.map(|l| l.replace(b)),
        }
    }
}

/// One field value as it appears on the wire.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    // No field of ours is fixed-width; these are read only to be skipped.
    Fixed64,
    Fixed32,
}

/// Iterates the fields of one serialized message.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Position of `buf[0]`, for error offsets.
    base: usize,
    space: Space,
    message: &'static str,
    /// Where invalid UTF-8 is replaced; `None`: it is an error.
    lossy: Option<&'a Lossy>,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], base: usize, space: Space, message: &'static str) -> Self {
        Reader {
            buf,
            pos: 0,
            base,
            space,
            message,
            lossy: None,
        }
    }

    /// String fields that are not UTF-8 are replaced into `lossy` (when
    /// given) instead of failing.
    pub fn with_lossy(mut self, lossy: Option<&'a Lossy>) -> Self {
        self.lossy = lossy;
        self
    }

    #[cold]
    #[inline(never)]
    pub fn error(&self, at: usize, reason: impl Into<String>) -> EntryError {
        EntryError::from(FormatError::Protobuf {
            message: self.message,
            space: self.space,
            offset: self.base + at,
            reason: reason.into(),
        })
    }

    /// One-byte varints (every tag and small value of ours) take the fast path.
    #[inline(always)]
    fn varint(&mut self) -> Result<u64> {
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(u64::from(byte));
            }
            // Two bytes: payload sizes under 16 KiB.
            if let Some(&second) = self.buf.get(self.pos + 1) {
                if second < 0x80 {
                    self.pos += 2;
                    return Ok(u64::from(byte & 0x7f) | u64::from(second) << 7);
                }
            }
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(self.error(start, "truncated varint"));
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                if i == 9 && byte > 1 {
                    return Err(self.error(start, "varint overflows 64 bits"));
                }
                return Ok(value);
            }
        }
        Err(self.error(start, "varint longer than 10 bytes"))
    }

    #[inline(always)]
    fn take(&mut self, n: usize, start: usize) -> Result<&'a [u8]> {
        if n <= self.buf.len() - self.pos {
            let slice = &self.buf[self.pos..self.pos + n];
            self.pos += n;
            Ok(slice)
        } else {
            Err(self.take_error(n, start))
        }
    }

    #[cold]
    #[inline(never)]
    fn take_error(&self, n: usize, start: usize) -> EntryError {
        self.error(
            start,
            format!(
                "field length {n} runs past the end ({} bytes left)",
                self.buf.len() - self.pos
            ),
        )
    }

    /// The next `(field_number, value, field_start)`, or `None` at the end.
    #[inline(always)]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>, usize)>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let start = self.pos;
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(self.error(start, format!("invalid field number {field}")));
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8, start)?;
                Value::Fixed64
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| self.error(start, "length overflow"))?;
                Value::Bytes(self.take(len, start)?)
            }
            5 => {
                self.take(4, start)?;
                Value::Fixed32
            }
            // Java's parser aborts on groups (3, 4) and reserved types alike.
            t => return Err(self.error(start, format!("Invalid unknown tag type: {t}"))),
        };
        Ok(Some((field as u32, value, start)))
    }

    #[cold]
    #[inline(never)]
    fn wrong_type(&self, at: usize, field: &str) -> EntryError {
        self.error(at, format!("field `{field}` has the wrong wire type"))
    }

    #[cold]
    #[inline(never)]
    fn not_utf8(&self, at: usize, field: &str, e: std::str::Utf8Error) -> EntryError {
        self.error(at, format!("field `{field}` is not UTF-8: {e}"))
    }

    #[inline(always)]
    pub fn expect_varint(&self, v: Value<'a>, at: usize, field: &str) -> Result<u64> {
        match v {
            Value::Varint(x) => Ok(x),
            _ => Err(self.wrong_type(at, field)),
        }
    }

    #[inline(always)]
    pub fn expect_bytes(&self, v: Value<'a>, at: usize, field: &str) -> Result<&'a [u8]> {
        match v {
            Value::Bytes(b) => Ok(b),
            _ => Err(self.wrong_type(at, field)),
        }
    }

    #[inline(always)]
    pub fn expect_str(&self, v: Value<'a>, at: usize, field: &str) -> Result<&'a str> {
        let b = self.expect_bytes(v, at, field)?;
        match utf8(b) {
            Ok(s) => Ok(s),
            Err(e) => match self.lossy {
                Some(l) => Ok(l.replace(b)),
                None => Err(self.not_utf8(at, field, e)),
            },
        }
    }

    /// Java reads a bool as true only when the varint is exactly 1.
    #[inline(always)]
    pub fn expect_bool(&self, v: Value<'a>, at: usize, field: &str) -> Result<bool> {
        Ok(self.expect_varint(v, at, field)? == 1)
    }

    /// int32 fields carry negative values as 10-byte varints; keep the low 32 bits.
    #[inline(always)]
    pub fn expect_i32(&self, v: Value<'a>, at: usize, field: &str) -> Result<i32> {
        Ok(self.expect_varint(v, at, field)? as i32)
    }
}

/// UTF-8 validation with an inlined ASCII fast path: keys, property names
/// and values are short and almost always ASCII, where `str::from_utf8`'s
/// call and setup cost more than the check itself (measured: 84 -> ~25
/// instructions per string in `split_batch` of keyed records).
#[inline(always)]
pub fn utf8(b: &[u8]) -> std::result::Result<&str, std::str::Utf8Error> {
    if b.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(b) })
    } else {
        std::str::from_utf8(b)
    }
}

/// Decodes a packed run of varints (repeated scalars sent packed).
pub fn packed_varints(bytes: &[u8]) -> PackedVarints<'_> {
    PackedVarints { bytes, pos: 0 }
}

pub struct PackedVarints<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Iterator for PackedVarints<'_> {
    type Item = Option<u64>;
    /// `Some(None)` marks a malformed varint; callers validate once up front.
    fn next(&mut self) -> Option<Option<u64>> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                self.pos = self.bytes.len();
                return Some(None);
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(Some(value));
            }
        }
        self.pos = self.bytes.len();
        Some(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(buf: &[u8]) -> Result<Vec<(u32, String)>> {
        let mut r = Reader::new(buf, 0, Space::Entry, "test");
        let mut out = vec![];
        while let Some((f, v, _)) = r.next_field()? {
            out.push((f, format!("{v:?}")));
        }
        Ok(out)
    }

    #[test]
    fn reads_negative_int32_as_ten_byte_varint() {
        let buf = [
            0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        let mut r = Reader::new(&buf, 0, Space::Entry, "test");
        let (f, v, at) = r.next_field().unwrap().unwrap();
        assert_eq!(f, 3);
        assert_eq!(r.expect_i32(v, at, "partition").unwrap(), -1);
    }

    #[test]
    fn rejects_groups_like_java() {
        let err = fields(&[0x0b]).unwrap_err();
        assert!(
            err.to_string().contains("Invalid unknown tag type: 3"),
            "{err}"
        );
    }

    #[test]
    fn rejects_truncated_and_overlong() {
        assert!(fields(&[0x0a, 0x05, b'a'])
            .unwrap_err()
            .to_string()
            .contains("runs past the end"));
        assert!(fields(&[0x08, 0x80])
            .unwrap_err()
            .to_string()
            .contains("truncated varint"));
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(fields(&overlong).is_err());
        assert!(fields(&[0x00])
            .unwrap_err()
            .to_string()
            .contains("invalid field number 0"));
    }

    #[test]
    fn bool_is_true_only_for_one() {
        let r = Reader::new(&[], 0, Space::Entry, "t");
        assert!(r.expect_bool(Value::Varint(1), 0, "b").unwrap());
        assert!(!r.expect_bool(Value::Varint(2), 0, "b").unwrap());
    }

    #[test]
    fn packed_varints_decode() {
        let v: Vec<_> = packed_varints(&[0x00, 0x02, 0xac, 0x02]).collect();
        assert_eq!(v, vec![Some(0), Some(2), Some(300)]);
        let bad: Vec<_> = packed_varints(&[0x80]).collect();
        assert_eq!(bad, vec![None]);
    }
}
