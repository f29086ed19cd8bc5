//! Payload codecs (spec entry-format.md §4), each in Pulsar's exact stored form:
//! raw LZ4 and Snappy blocks, zlib streams (Java's unterminated sync-flushed
//! form included), zstd frames.
//!
//! Decompression is sized by `uncompressed_size` and refuses sizes over a
//! caller-given limit before allocating anything.

use std::fmt;
use std::str::FromStr;

use flate2::{
    Compress, Compression as ZlibLevel, Decompress, FlushCompress, FlushDecompress, Status,
};

use crate::error::{EntryError, FormatError, Result};

/// Default bound on one decompressed payload.
pub const DEFAULT_MAX_UNCOMPRESSED_SIZE: usize = 256 * 1024 * 1024;

/// The largest size limit accepted (`max_uncompressed_size`,
/// `max_message_size`): keeps every output column's 32-bit offsets safe
/// whatever one entry holds.
pub const MAX_UNCOMPRESSED_SIZE_CAP: usize = 1 << 30;

/// `value` when it is at most [`MAX_UNCOMPRESSED_SIZE_CAP`]; else an
/// options error naming the option.
pub fn size_limit(name: &str, value: usize) -> Result<usize> {
    if value > MAX_UNCOMPRESSED_SIZE_CAP {
        return Err(EntryError::Options(format!(
            "{name} {value} exceeds the supported maximum {MAX_UNCOMPRESSED_SIZE_CAP}"
        )));
    }
    Ok(value)
}

/// Pulsar's `CompressionType` (field 8 of MessageMetadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Codec {
    #[default]
    None,
    Lz4,
    Zlib,
    Zstd,
    Snappy,
}

impl Codec {
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Lz4,
        Codec::Zlib,
        Codec::Zstd,
        Codec::Snappy,
    ];

    pub fn from_proto(value: i32) -> Option<Codec> {
        Some(match value {
            0 => Codec::None,
            1 => Codec::Lz4,
            2 => Codec::Zlib,
            3 => Codec::Zstd,
            4 => Codec::Snappy,
            _ => return None,
        })
    }

    pub fn to_proto(self) -> i32 {
        match self {
            Codec::None => 0,
            Codec::Lz4 => 1,
            Codec::Zlib => 2,
            Codec::Zstd => 3,
            Codec::Snappy => 4,
        }
    }

    /// Lowercase name, as used in the decode output's `compression` column.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zlib => "zlib",
            Codec::Zstd => "zstd",
            Codec::Snappy => "snappy",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Codec {
    type Err = EntryError;
    fn from_str(s: &str) -> Result<Codec> {
        Codec::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                EntryError::Options(format!(
                    "unknown compression {s:?}; expected none, lz4, zlib, zstd or snappy"
                ))
            })
    }
}

/// Reusable decompression state: one output buffer and codec contexts, so a
/// scan over many entries allocates only when a payload outgrows the buffer.
pub struct Decompressor {
    out: Vec<u8>,
    zlib: Decompress,
    zstd: Option<zstd::stream::raw::Decoder<'static>>,
}

impl Default for Decompressor {
    fn default() -> Self {
        Decompressor {
            out: Vec::new(),
            zlib: Decompress::new(true),
            zstd: None,
        }
    }
}

/// The most bytes `input_len` compressed bytes can expand to under `codec`,
/// from the format itself: a larger `uncompressed_size` cannot be right, and
/// is refused before anything is allocated.
///
/// - LZ4 block: 255:1 (each extra length byte adds 255), plus a few literals;
/// - Snappy block: 64 bytes per 3-byte copy element (~21.3:1);
/// - zlib (deflate): 1032:1, deflate's maximum (258 bytes per 2 bits);
/// - zstd frame: a block holds at most 128 KiB and the smallest block (an RLE
///   block: 3-byte header, 1 byte) takes 4 bytes, so 32 KiB per input byte.
pub fn max_output(codec: Codec, input_len: usize) -> usize {
    let ratio = match codec {
        Codec::None => return input_len,
        Codec::Lz4 => 255,
        Codec::Snappy => 22,
        Codec::Zlib => 1032,
        Codec::Zstd => return (input_len / 4 + 1).saturating_mul(128 << 10),
    };
    input_len.saturating_mul(ratio).saturating_add(64)
}

/// The output a streaming codec (zlib, zstd) gets before its stream has
/// produced anything: `size` when the stream proves nothing, bounded by a
/// modest multiple of the input. It then doubles as the stream fills it, so
/// memory follows what the stream really produces, never the size claimed.
pub fn first_output(codec: Codec, input_len: usize, size: usize) -> usize {
    match codec {
        Codec::Zlib | Codec::Zstd => size.min(input_len.saturating_mul(8).max(FIRST_STEP)),
        _ => size,
    }
}

const FIRST_STEP: usize = 64 << 10;

/// Grows `out` so that `out[at..]` holds at least `want` bytes (zero-filled).
fn grow_to(out: &mut Vec<u8>, at: usize, want: usize) {
    if out.len() < at + want {
        out.resize(at + want, 0);
    }
}

impl Decompressor {
    /// Decompresses `input` (which starts at entry offset `offset`) into
    /// exactly `size` bytes. `Codec::None` returns `input` without copying.
    pub fn decompress<'a>(
        &'a mut self,
        codec: Codec,
        input: &'a [u8],
        size: u32,
        limit: usize,
        offset: usize,
    ) -> Result<&'a [u8]> {
        if codec == Codec::None {
            return Ok(input);
        }
        let mut out = std::mem::take(&mut self.out);
        let result = self.decompress_at(codec, input, size, limit, offset, &mut out, 0);
        self.out = out;
        let size = result?;
        Ok(&self.out[..size])
    }

    /// Decompresses `input` into `out[at..at + size]`, growing `out` (zero-filled)
    /// only past its current length, so a buffer reused across entries is zeroed
    /// once. Returns `size`. Bytes of `out` past `at` are unspecified on error.
    /// `Codec::None` copies `input`.
    ///
    /// The size is checked against `limit` (and, for LZ4, against what the
    /// input could possibly expand to) before anything is allocated.
    #[allow(clippy::too_many_arguments)]
    pub fn decompress_at(
        &mut self,
        codec: Codec,
        input: &[u8],
        size: u32,
        limit: usize,
        offset: usize,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<usize> {
        let size = size as usize;
        if size > limit {
            return Err(EntryError::from(FormatError::TooLarge {
                what: "uncompressed_size",
                size: size as u64,
                limit: limit as u64,
                offset,
            }));
        }
        let fail = |reason: String| {
            EntryError::from(FormatError::Decompress {
                codec: codec.name(),
                offset,
                reason,
            })
        };
        // Checks that need only the input come before the buffer grows.
        match codec {
            Codec::None if input.len() != size => {
                return Err(fail(format!(
                    "payload holds {} bytes, uncompressed_size is {size}",
                    input.len()
                )))
            }
            Codec::Lz4 | Codec::Snappy | Codec::Zlib | Codec::Zstd
                if size > max_output(codec, input.len()) =>
            {
                let what = match codec {
                    Codec::Lz4 => "LZ4 block",
                    Codec::Snappy => "Snappy block",
                    Codec::Zlib => "zlib stream",
                    _ => "zstd frame",
                };
                return Err(fail(format!(
                    "uncompressed_size {size} is more than a {}-byte {what} can hold ({} at most)",
                    input.len(),
                    max_output(codec, input.len())
                )));
            }
            Codec::Snappy => {
                let n = snap::raw::decompress_len(input).map_err(|e| fail(e.to_string()))?;
                if n != size {
                    return Err(fail(format!(
                        "block holds {n} bytes, uncompressed_size is {size}"
                    )));
                }
            }
            _ => {}
        }
        let end = at
            .checked_add(size)
            .ok_or_else(|| fail("output offset overflow".into()))?;
        match codec {
            // Streams: the buffer grows as the stream proves its size.
            Codec::Zlib => self.zlib_into(input, size, out, at, &fail)?,
            Codec::Zstd => self.zstd_into(input, size, out, at, &fail)?,
            _ => {
                if out.len() < end {
                    out.resize(end, 0);
                }
                self.decompress_into(codec, input, &mut out[at..end], offset)?;
            }
        }
        Ok(size)
    }

    /// Inflates a zlib stream into `out[at..at + size]`, growing `out` only
    /// as the stream produces bytes. Java's Deflater output is sync-flushed and
    /// never finished, so it stops at `size` bytes instead of waiting for a
    /// stream end / Adler-32.
    fn zlib_into(
        &mut self,
        input: &[u8],
        size: usize,
        out: &mut Vec<u8>,
        at: usize,
        fail: &dyn Fn(String) -> EntryError,
    ) -> Result<()> {
        let z = &mut self.zlib;
        z.reset(true);
        let mut produced = 0;
        let mut room = first_output(Codec::Zlib, input.len(), size);
        while produced < size {
            grow_to(out, at, room);
            let window = (out.len() - at).min(size);
            let consumed = z.total_in() as usize;
            let status = z
                .decompress(
                    &input[consumed..],
                    &mut out[at + produced..at + window],
                    FlushDecompress::Sync,
                )
                .map_err(|e| fail(e.to_string()))?;
            let now = z.total_out() as usize;
            let progressed = now > produced || z.total_in() as usize > consumed;
            produced = now;
            if status == Status::StreamEnd || !progressed {
                break;
            }
            if produced == window {
                // Double what is there (a reused buffer may already be longer
                // than `room`), so the next call always has space.
                room = window.saturating_mul(2).max(FIRST_STEP).min(size);
            }
        }
        if produced != size {
            return Err(fail(format!(
                "stream ended after {produced} bytes, uncompressed_size is {size}"
            )));
        }
        // Stricter than Java (which silently truncates): a stream with
        // output left past `size` means the size field is wrong.
        let consumed = z.total_in() as usize;
        if consumed < input.len() {
            let mut probe = [0u8; 1];
            let before = z.total_out();
            let _ = z.decompress(&input[consumed..], &mut probe, FlushDecompress::Sync);
            if z.total_out() > before {
                return Err(fail(format!(
                    "stream holds more than uncompressed_size {size} bytes"
                )));
            }
        }
        Ok(())
    }

    /// Decompresses zstd frames into `out[at..at + size]`, growing `out` only
    /// as the frames produce bytes. Output past `size`, trailing bytes that
    /// are not a frame, or fewer than `size` bytes are errors.
    fn zstd_into(
        &mut self,
        input: &[u8],
        size: usize,
        out: &mut Vec<u8>,
        at: usize,
        fail: &dyn Fn(String) -> EntryError,
    ) -> Result<()> {
        // The decoder is kept for the next call only after a success: a
        // stream that failed part-way may leave state that `reinit` does not
        // clear, and a reused decoder must give every input the answer a fresh
        // one would.
        use zstd::stream::raw::Operation;
        let mut z = match self.zstd.take() {
            Some(mut z) => {
                z.reinit().map_err(|e| fail(e.to_string()))?;
                z
            }
            None => zstd::stream::raw::Decoder::new().map_err(|e| fail(e.to_string()))?,
        };
        let done = Self::zstd_run(&mut z, input, size, out, at, fail);
        if done.is_ok() {
            self.zstd = Some(z);
        }
        done
    }

    /// One zstd stream into `out[at..at + size]` (see `zstd_into`).
    fn zstd_run(
        z: &mut zstd::stream::raw::Decoder<'static>,
        input: &[u8],
        size: usize,
        out: &mut Vec<u8>,
        at: usize,
        fail: &dyn Fn(String) -> EntryError,
    ) -> Result<()> {
        use zstd::stream::raw::Operation;
        let (mut consumed, mut produced, mut remaining) = (0, 0, 0);
        let mut room = first_output(Codec::Zstd, input.len(), size);
        while produced < size {
            grow_to(out, at, room);
            let window = (out.len() - at).min(size);
            let st = z
                .run_on_buffers(&input[consumed..], &mut out[at + produced..at + window])
                .map_err(|e| fail(e.to_string()))?;
            consumed += st.bytes_read;
            produced += st.bytes_written;
            remaining = st.remaining;
            if st.bytes_read == 0 && st.bytes_written == 0 {
                break;
            }
            if produced == window {
                room = window.saturating_mul(2).max(FIRST_STEP).min(size);
            }
        }
        if produced != size {
            return Err(fail(format!(
                "produced {produced} bytes, uncompressed_size is {size}"
            )));
        }
        // A frame larger than `size` is an error, not a truncation; so are
        // trailing bytes that are not a frame.
        if consumed < input.len() || remaining != 0 {
            let mut probe = [0u8; 1];
            let st = z
                .run_on_buffers(&input[consumed..], &mut probe)
                .map_err(|e| fail(e.to_string()))?;
            if st.bytes_written > 0 {
                return Err(fail(format!(
                    "frame holds more than uncompressed_size {size} bytes"
                )));
            }
            if st.remaining != 0 && consumed + st.bytes_read == input.len() {
                return Err(fail("truncated frame".into()));
            }
        }
        Ok(())
    }

    /// Fills `out` (exactly the uncompressed size) from `input`.
    fn decompress_into(
        &mut self,
        codec: Codec,
        input: &[u8],
        out: &mut [u8],
        offset: usize,
    ) -> Result<()> {
        let size = out.len();
        let fail = |reason: String| {
            EntryError::from(FormatError::Decompress {
                codec: codec.name(),
                offset,
                reason,
            })
        };
        match codec {
            Codec::None => out.copy_from_slice(input),
            Codec::Lz4 => {
                let n = lz4_flex::block::decompress_into(input, out)
                    .map_err(|e| fail(e.to_string()))?;
                if n != size {
                    return Err(fail(format!(
                        "produced {n} bytes, uncompressed_size is {size}"
                    )));
                }
            }
            Codec::Snappy => {
                snap::raw::Decoder::new()
                    .decompress(input, out)
                    .map_err(|e| fail(e.to_string()))?;
            }
            Codec::Zlib | Codec::Zstd => {
                return Err(fail("a stream codec reached the block path".into()))
            }
        }
        Ok(())
    }
}

/// Compresses a whole payload the way Pulsar's Java producer stores it.
///
/// SNAPPY is written by [`crate::format::snappy`], byte-identical to Pulsar's
/// `CompressionCodecSnappy`.
/// ZLIB is written like `java.util.zip.Deflater` with SYNC_FLUSH and no
/// `finish()` (unterminated, empty input → empty output), so our bytes equal
/// Java's with the same zlib; every Pulsar reader accepts that form.
pub fn compress(codec: Codec, input: &[u8]) -> Result<Vec<u8>> {
    Ok(match codec {
        Codec::None => input.to_vec(),
        Codec::Lz4 => lz4_flex::block::compress(input),
        // aircompressor's algorithm, not `snap`'s: the bytes Pulsar writes.
        Codec::Snappy => crate::format::snappy::compress(input)?,
        Codec::Zstd => {
            zstd::bulk::compress(input, 3).map_err(|e| EntryError::Encode(format!("zstd: {e}")))?
        }
        Codec::Zlib => {
            // Pulsar's CompressionCodecZLib: one output buffer of
            // ceil(len * 1.001) + 14 bytes, `deflate(SYNC_FLUSH)` repeated until
            // the input is consumed and a call produces nothing. Growing the
            // buffer on an exact fill instead would make zlib emit a second,
            // empty sync-flush block that Java never writes.
            let mut z = Compress::new(ZlibLevel::default(), true);
            let estimate = (input.len() as f64 * 1.001).ceil() as usize + 14;
            let mut out = Vec::with_capacity(estimate);
            if input.is_empty() {
                return Ok(out);
            }
            loop {
                let consumed = z.total_in() as usize;
                let before = z.total_out();
                z.compress_vec(&input[consumed..], &mut out, FlushCompress::Sync)
                    .map_err(|e| EntryError::Encode(format!("zlib: {e}")))?;
                let produced = z.total_out() - before;
                if z.total_in() as usize == input.len() && produced == 0 {
                    break;
                }
                if out.len() == out.capacity() {
                    // Java would stop making progress here; never reached with
                    // the estimate above, which exceeds deflate's worst case.
                    out.reserve(out.capacity().max(1024));
                }
            }
            out
        }
    })
}

#[cfg(test)]
#[path = "compression_tests.rs"]
mod tests;
