//! Bounds an Avro datum by its own bytes before it is decoded.
//!
//! The Avro decoder reserves room for an array or map block's item count
//! before it reads the items, and recurses once per nesting level. A crafted
//! or damaged datum could claim billions of items in a few bytes, or nest
//! deeply enough to exhaust the stack. This walk reads the datum as the writer
//! schema lays it out, allocating nothing, and rejects counts and lengths the
//! remaining bytes cannot hold, nesting deeper than [`MAX_DEPTH`], and more
//! items in all than the datum's size can justify.

use std::collections::HashMap;

use apache_avro::schema::{Name, Schema};

/// The deepest nesting of records, arrays, maps and unions accepted.
pub const MAX_DEPTH: usize = 128;

/// Items of zero encoded size (nulls, empty records) a datum may hold beyond
/// its byte count.
const ZERO_SIZE_ALLOWANCE: u64 = 1 << 16;

/// Named types of a schema, for `Ref`s.
pub type Names = HashMap<Name, Schema>;

struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    names: &'a Names,
    items: u64,
    max_items: u64,
}

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<(), String> {
        if n > self.remaining() {
            return Err(format!(
                "truncated Avro datum: {what} needs {n} bytes at offset {}, {} left",
                self.at,
                self.remaining()
            ));
        }
        self.at += n;
        Ok(())
    }

    fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(format!("truncated Avro varint at offset {}", self.at));
            };
            self.at += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(format!(
            "Avro varint longer than 10 bytes at offset {}",
            self.at
        ))
    }

    fn length(&mut self, what: &str) -> Result<usize, String> {
        let at = self.at;
        let len = self.long()?;
        if len < 0 || len as u64 > self.remaining() as u64 {
            return Err(format!(
                "Avro {what} length {len} at offset {at} exceeds the {} bytes left",
                self.remaining()
            ));
        }
        Ok(len as usize)
    }

    fn blocks(&mut self, depth: usize, item: &Schema, map: bool) -> Result<(), String> {
        loop {
            let at = self.at;
            let mut count = self.long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                count = count.checked_neg().ok_or("Avro block count overflows")?;
                self.length("block size")?;
            }
            let count = count as u64;
            self.items = self.items.saturating_add(count);
            if count > self.remaining() as u64 + ZERO_SIZE_ALLOWANCE || self.items > self.max_items
            {
                return Err(format!(
                    "Avro block of {count} items at offset {at} is more than the datum's {} bytes can hold",
                    self.bytes.len()
                ));
            }
            for _ in 0..count {
                if map {
                    let n = self.length("map key")?;
                    self.take(n, "a map key")?;
                }
                self.value(item, depth + 1)?;
            }
        }
    }

    fn value(&mut self, schema: &Schema, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("Avro datum nests deeper than {MAX_DEPTH} levels"));
        }
        match schema {
            Schema::Null => Ok(()),
            Schema::Boolean => self.take(1, "a boolean"),
            Schema::Int
            | Schema::Long
            | Schema::Date
            | Schema::TimeMillis
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos
            | Schema::Enum(_) => self.long().map(drop),
            Schema::Float => self.take(4, "a float"),
            Schema::Double => self.take(8, "a double"),
            Schema::Duration => self.take(12, "a duration"),
            Schema::Bytes | Schema::String | Schema::Uuid | Schema::BigDecimal => {
                let n = self.length("bytes")?;
                self.take(n, "bytes")
            }
            Schema::Fixed(f) => self.take(f.size, "a fixed"),
            Schema::Decimal(d) => self.value(&d.inner, depth + 1),
            Schema::Array(a) => self.blocks(depth, &a.items, false),
            Schema::Map(m) => self.blocks(depth, &m.types, true),
            Schema::Union(u) => {
                let at = self.at;
                let index = self.long()?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| u.variants().get(i))
                    .ok_or_else(|| {
                        format!("Avro union branch {index} at offset {at} is not in the schema")
                    })?;
                self.value(branch, depth + 1)
            }
            Schema::Record(r) => {
                for f in &r.fields {
                    self.value(&f.schema, depth + 1)?;
                }
                Ok(())
            }
            Schema::Ref { name } => {
                let target = self
                    .names
                    .get(name)
                    .ok_or_else(|| format!("Avro schema names an unknown type {name}"))?;
                self.value(target, depth + 1)
            }
        }
    }
}

/// Checks that `bytes` is a datum of `schema` whose lengths and counts its
/// bytes can hold; the error says what and where.
pub fn check_datum(schema: &Schema, names: &Names, bytes: &[u8]) -> Result<(), String> {
    let mut walk = Walk {
        bytes,
        at: 0,
        names,
        items: 0,
        max_items: (bytes.len() as u64).saturating_mul(2) + ZERO_SIZE_ALLOWANCE,
    };
    walk.value(schema, 0)
}
