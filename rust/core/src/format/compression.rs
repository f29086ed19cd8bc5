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
mod tests {
    use super::*;

    const LOREM: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Cras id massa odio. Duis commodo ligula sed efficitur cursus. Aliquam sollicitudin, tellus quis suscipit tincidunt, erat sem efficitur nulla, in feugiat diam ex a dolor. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia Curae; Vestibulum ac volutpat nisl, vel aliquam elit. Maecenas auctor aliquet turpis, id ullamcorper metus. Ut tincidunt et magna non ultrices. Quisque lacinia metus sed egestas tincidunt. Sed congue lacinia maximus.";
    // Spec §12.1, from Pulsar's CompressorCodecTest.
    const ZLIB: &str = "789c54914d4ec4300c85aff20e50f502acd0b0840542b03789a7b2e4249dd8461c1f7706a16157d5f1fbf9fc3c2637c86ed150878e09130735f6056574e3e2ec31415576b1227d03abf88ad32483543432238c2a63c55388e5566ba30ea86ca104e30a3e9fa5c82153625ad88a47954b50830dd5eba84a5fe0ac1a86cb2193cf4a5a3a5c7a911a3d03f1244fc17627d843951648c79963939c57495dfe06ddfaacf86073f90ccd86d49d7fcbee535ada1c8b1425e786318b40a3787eb323d4a71436ecc3822767f84f51219c62123ffcd32df81a1abea77f17d3055faca0df9237602fc4857b424b3b4fced769da648b24bb1c2c8f2ead8cb9f3445ee000f57e07e008d568eb843efa5fbc15afc92ba5a094f7c97cd7d51bf82d33a6e59fc48ab7fc9d87ddeedfd3b7b434fb010000ffff";
    const LZ4: &str = "f1aa4c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c757320717569732073757363697069742074696e636964756e742c20657261742073656d206566663600f20e72206e756c6c612c20696e2066657567696174206469616d2065782061d000f3022e20566573746962756c756d20616e7465ed00617072696d69733900f92761756369627573206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b5800f3076320766f6c7574706174206e69736c2c2076656c2061e500023101f2004d616563656e617320617563746f721e00a06574207475727069732c4c0100cc00f7016d636f72706572206d657475732e20550101009500956d61676e61206e6f6e9f00f2022e2051756973717565206c6163696e69613b00027901666765737461734401502e20536564d90118673000706178696d75732e";
    const ZSTD: &str = "28b52ffd600c017d0900c6573c1b9027314099d2a79d3ee4d712d9a201c61c60008415bcfbc24c1802330033003300b7c8cf78602958ceaf800dfc81a64c2a3eeea453b0a13f33625ef9e407f9ac9a96a5c172a156c8faf4c1c3c36533b98b1d1c08857e58e9c8dac1e62ee86e4db1b4d231176af67899abf5c92b3711cebd3375617edc61bad0227e013672f36cbd7e38980f4b5337564a740f132e00a3b305d3ef862ddbb14d4c9c563f7a6b35e76aedf975d0b986d752befc24a6865cf6d6704d43b0414e3007466e7902218719d848d234846e5e74b645e4b7c0864163320895031bb96ac5c79283558a7c7256ad76506bc949c6ca88807c967071191500535970afd547bb8b6f0dd0eb5822abc3580008d6f669019e5640828ea2d9b1a02d13b685db5c2f0cb70c9edac05061b912e2f3395e150b9b01";
    const SNAPPY: &str = "8c04f0b44c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c757320717569732073757363697069742074696e636964756e742c20657261742073656d1d516c6e756c6c612c20696e2066657567696174206469616d20657820612005d0442e20566573746962756c756d20616e74652009ed147072696d69730539d861756369627573206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b202e5800586320766f6c7574706174206e69736c2c2076656c20616c09e52931384d616563656e617320617563746f72091e246574207475727069732c214c01cc286d636f72706572206d6574212900553d010195206d61676e61206e6f6e159f402e2051756973717565206c6163696e6961093b002025791c67657374617320743144102e2053656421d900672e3000186178696d75732e";

    fn dec(codec: Codec, input: &[u8], size: usize) -> Result<Vec<u8>> {
        let mut d = Decompressor::default();
        d.decompress(codec, input, size as u32, DEFAULT_MAX_UNCOMPRESSED_SIZE, 0)
            .map(|b| b.to_vec())
    }

    #[test]
    fn pulsar_codec_test_vectors() {
        assert_eq!(LOREM.len(), 524);
        for (codec, vector) in [
            (Codec::Zlib, ZLIB),
            (Codec::Lz4, LZ4),
            (Codec::Zstd, ZSTD),
            (Codec::Snappy, SNAPPY),
        ] {
            let out = dec(codec, &hex::decode(vector).unwrap(), 524).unwrap();
            assert_eq!(out, LOREM.as_bytes(), "{codec}");
        }
    }

    #[test]
    fn zlib_never_doubles_the_sync_flush_marker() {
        // Every size up to a few KB, compressible and not: exactly one
        // trailing `00 00 ff ff`, as java.util.zip.Deflater writes it.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..6000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for len in 0..3000usize {
            // Half noise, half repetitive: output sizes sweep past every capacity.
            let text: Vec<u8> = (0..len)
                .map(|i| {
                    if i % 2 == 0 {
                        noise[i]
                    } else {
                        b"abcab"[i % 5]
                    }
                })
                .collect();
            let c = compress(Codec::Zlib, &text).unwrap();
            if len > 0 {
                assert!(c.ends_with(&[0, 0, 0xff, 0xff]), "len {len}");
                assert!(
                    !c.ends_with(&[0, 0, 0xff, 0xff, 0, 0, 0, 0xff, 0xff]),
                    "len {len}"
                );
            }
            assert_eq!(dec(Codec::Zlib, &c, len).unwrap(), text);
        }
    }

    #[test]
    fn java_zlib_encoding_is_byte_identical() {
        // java.util.zip.Deflater + SYNC_FLUSH reproduces the spec vector; so do we.
        assert_eq!(
            hex::encode(compress(Codec::Zlib, LOREM.as_bytes()).unwrap()),
            ZLIB
        );
        assert_eq!(
            hex::encode(compress(Codec::Zlib, b"hello").unwrap()),
            "789cca48cdc9c907000000ffff"
        );
        assert!(compress(Codec::Zlib, b"").unwrap().is_empty());
    }

    #[test]
    fn client_vectors_for_hello_and_zeros() {
        for (codec, hexed) in [
            (Codec::Zlib, "789cca48cdc9c907000000ffff"),
            (Codec::Lz4, "5068656c6c6f"),
            (Codec::Zstd, "28b52ffd200529000068656c6c6f"),
            (Codec::Snappy, "051068656c6c6f"),
        ] {
            assert_eq!(
                dec(codec, &hex::decode(hexed).unwrap(), 5).unwrap(),
                b"hello",
                "{codec}"
            );
        }
        // Java's unterminated stream and C++'s complete one both decode.
        assert_eq!(
            dec(
                Codec::Zlib,
                &hex::decode("789c6260800100000000ffff").unwrap(),
                10
            )
            .unwrap(),
            vec![0; 10]
        );
        assert_eq!(
            dec(
                Codec::Zlib,
                &hex::decode("789c6360800100000a0001").unwrap(),
                10
            )
            .unwrap(),
            vec![0; 10]
        );
    }

    #[test]
    fn round_trips_every_codec_including_empty() {
        let big: Vec<u8> = (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        for codec in Codec::ALL {
            for input in [&b""[..], b"x", LOREM.as_bytes(), &big] {
                let c = compress(codec, input).unwrap();
                assert_eq!(
                    dec(codec, &c, input.len()).unwrap(),
                    input,
                    "{codec} len {}",
                    input.len()
                );
            }
        }
    }

    #[test]
    fn a_reused_buffer_never_changes_a_stream_result() {
        // Fuzz finding (issue 16 runs, `decompress`): a Decompressor whose
        // buffer was longer than the first output step called zstd with no
        // output space once the step filled, and reported "Destination buffer
        // is too small" where a fresh one reported "Data corruption detected".
        // The input as the target reads it: codec, size, bytes.
        let data = [
            0xdf, 0x05, 0x00, 0x01, 0x2c, 0x28, 0xb5, 0x2f, 0xfd, 0x60, 0x2c, 0x00, 0xdd, 0x00,
            0x00, 0xa0, 0x7b, 0x69, 0x22, 0x64, 0x22, 0x3a, 0x38, 0x37, 0x33, 0x35, 0x37, 0x32,
            0x2c, 0x22, 0x76, 0x22, 0x3a, 0x22, 0x61, 0x62, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff,
        ];
        let size = u32::from_be_bytes(data[1..5].try_into().unwrap()) % ((1 << 20) + 1);
        for codec in [Codec::Zstd, Codec::Zlib] {
            let fresh = dec(codec, &data[5..], size as usize);
            for len in [1usize, 4096, 64 << 10, (64 << 10) + 1, 300_000, 1 << 20] {
                let mut d = Decompressor {
                    out: vec![7; len],
                    ..Decompressor::default()
                };
                let warm = d
                    .decompress(codec, &data[5..], size, 1 << 20, 0)
                    .map(<[u8]>::to_vec);
                assert_eq!(fresh, warm, "{codec}, buffer of {len}");
            }
        }
    }

    #[test]
    fn size_limit_is_checked_before_allocating() {
        let mut d = Decompressor::default();
        let err = d
            .decompress(Codec::Lz4, b"\x00", u32::MAX, 1024, 17)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "uncompressed_size 4294967295 exceeds the limit of 1024 bytes (entry offset 17)"
        );
        assert_eq!(d.out.capacity(), 0);
        // An LZ4 block of 1 byte cannot hold 1 MiB: refused before the buffer grows.
        let err = d
            .decompress(Codec::Lz4, b"\x00", 1 << 20, 1 << 30, 0)
            .unwrap_err();
        assert!(
            err.to_string().contains("more than a 1-byte LZ4 block"),
            "{err}"
        );
        assert_eq!(d.out.capacity(), 0);
        // The largest legal expansion still decodes: 1 MB of zeros.
        let zeros = vec![0u8; 1 << 20];
        let c = compress(Codec::Lz4, &zeros).unwrap();
        assert!(zeros.len() <= max_output(Codec::Lz4, c.len()));
        assert_eq!(dec(Codec::Lz4, &c, zeros.len()).unwrap(), zeros);
    }

    #[test]
    fn decompress_at_appends_into_a_shared_buffer() {
        let mut d = Decompressor::default();
        let mut out = b"head".to_vec();
        for codec in Codec::ALL {
            let c = compress(codec, LOREM.as_bytes()).unwrap();
            let at = out.len();
            let n = d
                .decompress_at(
                    codec,
                    &c,
                    524,
                    DEFAULT_MAX_UNCOMPRESSED_SIZE,
                    0,
                    &mut out,
                    at,
                )
                .unwrap();
            assert_eq!(&out[at..at + n], LOREM.as_bytes(), "{codec}");
        }
        assert_eq!(&out[..4], b"head");
        // Writing below the current length reuses the bytes already there.
        let c = compress(Codec::Lz4, b"hello").unwrap();
        let len = out.len();
        d.decompress_at(Codec::Lz4, &c, 5, 1024, 0, &mut out, 0)
            .unwrap();
        assert_eq!((&out[..9], out.len()), (&b"helloorem"[..], len));
    }

    #[test]
    fn wrong_sizes_and_garbage_are_errors() {
        let lorem_lz4 = hex::decode(LZ4).unwrap();
        for codec in [Codec::Lz4, Codec::Zlib, Codec::Zstd, Codec::Snappy] {
            let good = compress(codec, LOREM.as_bytes()).unwrap();
            assert!(dec(codec, &good, 523).is_err(), "{codec} short");
            assert!(dec(codec, &good, 525).is_err(), "{codec} long");
            assert!(
                dec(codec, &[0xde, 0xad, 0xbe, 0xef], 100).is_err(),
                "{codec} garbage"
            );
        }
        assert!(dec(Codec::Lz4, &lorem_lz4[..100], 524).is_err());
    }

    #[test]
    fn codec_names_parse() {
        assert_eq!("ZSTD".parse::<Codec>().unwrap(), Codec::Zstd);
        assert!("gzip".parse::<Codec>().is_err());
    }
}
