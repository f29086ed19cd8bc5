//! The `value` column of [`super::Columns`].

use super::*;

/// The `value` column, built by hand so that a payload can be decompressed
/// straight into its data buffer and compacted there: a value is written
/// once, by the decompressor, and moved once within cache-hot memory, where
/// a `BinaryBuilder` would copy it out of a separate decompression buffer.
pub(in crate::decode) struct ValueColumn {
    /// Committed values up to `end()`; the bytes after it are scratch, zeroed
    /// once and reused by the next entry's decompression.
    pub(in crate::decode) data: Vec<u8>,
    pub(in crate::decode) offsets: Vec<i32>,
    pub(in crate::decode) nulls: NullBufferBuilder,
}

impl ValueColumn {
    pub(in crate::decode) fn with_capacity(bytes: usize) -> Self {
        ValueColumn {
            data: Vec::with_capacity(bytes),
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
        }
    }

    /// End of the committed values (offsets fit i32: see `FLUSH_BYTES`).
    #[inline]
    pub(in crate::decode) fn end(&self) -> usize {
        self.offsets[self.offsets.len() - 1] as usize
    }

    /// Appends a value copied from elsewhere.
    #[inline]
    pub(in crate::decode) fn append_copy(&mut self, value: Option<&[u8]>) {
        let Some(v) = value else {
            self.offsets.push(self.end() as i32);
            self.nulls.append_null();
            return;
        };
        let at = self.end();
        let end = at + v.len();
        if self.data.len() >= end {
            self.data[at..end].copy_from_slice(v);
        } else {
            self.data.truncate(at);
            self.data.extend_from_slice(v);
        }
        self.offsets.push(end as i32);
        self.nulls.append_non_null();
    }

    /// Appends the values at `spans` of `payload` (a batch's records, read
    /// in place): the buffer grows once for all of them.
    pub(in crate::decode) fn append_spans(&mut self, payload: &[u8], spans: &[Span]) {
        let at = self.end();
        // Bytes past `end()` are scratch: overwritten from `at` on.
        self.data.truncate(at);
        let total: usize = spans
            .iter()
            .map(|s| match s {
                Span::At(_, len) => *len,
                Span::Null => 0,
            })
            .sum();
        self.data.reserve(total);
        self.offsets.reserve(spans.len());
        for &span in spans {
            match span {
                Span::At(src, len) => {
                    self.data.extend_from_slice(&payload[src..src + len]);
                    self.nulls.append_non_null();
                }
                Span::Null => self.nulls.append_null(),
            }
            self.offsets.push(self.data.len() as i32);
        }
    }

    /// Commits `data[end()..end() + len]` as the next value, or moves
    /// `data[src..src + len]` there first (`src >= end()`).
    #[inline]
    pub(in crate::decode) fn commit(&mut self, src: usize, len: usize) {
        let at = self.end();
        if src != at {
            self.data.copy_within(src..src + len, at);
        }
        self.offsets.push((at + len) as i32);
        self.nulls.append_non_null();
    }

    pub(in crate::decode) fn finish(&mut self) -> BinaryArray {
        let end = self.end();
        let mut data = std::mem::take(&mut self.data);
        data.truncate(end);
        // The capacity reserved from the input's size lives as long as the
        // array; give it back only when most of it went unused. Shrinking
        // always would return memory to the OS that the next batch faults in
        // again (measured: 2x the decode time).
        if data.capacity() / 3 > data.len() {
            data.shrink_to_fit();
        }
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        BinaryArray::new(offsets, Buffer::from_vec(data), self.nulls.finish())
    }
}
