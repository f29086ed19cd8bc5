//! Kafka's compression codecs in the framings Kafka writes inside a v2
//! RecordBatch (attributes bits 0–2). They differ from Pulsar's stored forms:
//! gzip is RFC 1952, snappy uses snappy-java's "xerial" stream framing (not
//! snappy's own framing format), lz4 is the standard LZ4 frame and zstd a
//! standard frame. None of them records the decompressed size up front, so
//! every decoder is bounded by the caller's limit while it runs.

use std::fmt;
use std::io::{Read, Write};

/// Compression codec of a Kafka record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KafkaCodec {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// snappy-java's stream header: magic `\x82SNAPPY\0`, then version and
/// minimum compatible version (both int32 BE, 1 and 1 as Kafka writes them).
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
/// Block size snappy-java uses by default when Kafka writes a stream.
const XERIAL_BLOCK: usize = 32 * 1024;

impl KafkaCodec {
    pub const ALL: [KafkaCodec; 5] = [
        KafkaCodec::None,
        KafkaCodec::Gzip,
        KafkaCodec::Snappy,
        KafkaCodec::Lz4,
        KafkaCodec::Zstd,
    ];

    /// From the low three bits of the batch attributes.
    pub fn from_attributes(attributes: i16) -> Option<KafkaCodec> {
        Some(match attributes & 0x07 {
            0 => KafkaCodec::None,
            1 => KafkaCodec::Gzip,
            2 => KafkaCodec::Snappy,
            3 => KafkaCodec::Lz4,
            4 => KafkaCodec::Zstd,
            _ => return None,
        })
    }

    pub fn id(self) -> i16 {
        match self {
            KafkaCodec::None => 0,
            KafkaCodec::Gzip => 1,
            KafkaCodec::Snappy => 2,
            KafkaCodec::Lz4 => 3,
            KafkaCodec::Zstd => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KafkaCodec::None => "none",
            KafkaCodec::Gzip => "gzip",
            KafkaCodec::Snappy => "snappy",
            KafkaCodec::Lz4 => "lz4",
            KafkaCodec::Zstd => "zstd",
        }
    }
}

/// A codec by name (any case); an unknown name is an options error that
/// lists the names.
impl std::str::FromStr for KafkaCodec {
    type Err = crate::error::EntryError;
    fn from_str(name: &str) -> Result<KafkaCodec, Self::Err> {
        KafkaCodec::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                crate::error::EntryError::Options(format!(
                    "unknown Kafka compression {name:?}; expected none, gzip, snappy, lz4 or zstd"
                ))
            })
    }
}

impl fmt::Display for KafkaCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a decompression failed: the size limit, or bad data (with a reason).
#[derive(Debug)]
pub enum DecompressError {
    TooLarge,
    Corrupt(String),
}

/// Reads at most `limit` bytes from `reader` into `out`; one byte more is an error.
fn read_bounded(
    mut reader: impl Read,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecompressError> {
    let start = out.len();
    reader
        .by_ref()
        .take(limit as u64 + 1)
        .read_to_end(out)
        .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    if out.len() - start > limit {
        return Err(DecompressError::TooLarge);
    }
    Ok(())
}

fn snappy_block(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let n =
        snap::raw::decompress_len(input).map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    if n > limit.saturating_sub(out.len()) {
        return Err(DecompressError::TooLarge);
    }
    let start = out.len();
    out.resize(start + n, 0);
    snap::raw::Decoder::new()
        .decompress(input, &mut out[start..])
        .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    Ok(())
}

/// Kafka's snappy: a xerial stream (header, then `[int32 BE length][raw
/// snappy block]` chunks), or, as snappy-java also accepts, one raw block.
fn snappy(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    if !input.starts_with(&XERIAL_MAGIC) {
        return snappy_block(input, limit, out);
    }
    if input.len() < XERIAL_HEADER_LEN {
        return Err(DecompressError::Corrupt(
            "truncated xerial snappy header".into(),
        ));
    }
    let mut pos = XERIAL_HEADER_LEN;
    while pos < input.len() {
        let len = input
            .get(pos..pos + 4)
            .map(|b| u32::from_be_bytes(b.try_into().unwrap()) as usize)
            .ok_or_else(|| {
                DecompressError::Corrupt(format!("truncated xerial chunk length at {pos}"))
            })?;
        let chunk = input.get(pos + 4..pos + 4 + len).ok_or_else(|| {
            DecompressError::Corrupt(format!(
                "xerial chunk at {pos} claims {len} bytes, {} left",
                input.len() - pos - 4
            ))
        })?;
        snappy_block(chunk, limit, out)?;
        pos += 4 + len;
    }
    Ok(())
}

/// The decompressed size the stream announces, if any (gzip's ISIZE
/// trailer, zstd's frame content size): only a capacity hint, capped by the
/// limit, never trusted for correctness.
fn size_hint(codec: KafkaCodec, input: &[u8]) -> Option<usize> {
    match codec {
        KafkaCodec::Gzip if input.len() >= 18 => {
            let isize = u32::from_le_bytes(input[input.len() - 4..].try_into().unwrap());
            Some(isize as usize)
        }
        KafkaCodec::Zstd => zstd::zstd_safe::get_frame_content_size(input)
            .ok()
            .flatten()
            .and_then(|n| usize::try_from(n).ok()),
        _ => None,
    }
}

/// Decompresses a batch's records section, appending to `out` (cleared first).
pub fn decompress(
    codec: KafkaCodec,
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecompressError> {
    out.clear();
    if let Some(n) = size_hint(codec, input) {
        // The hint is a claim (gzip ISIZE, zstd frame content size): reserve
        // at most a modest multiple of the input; the bounded read grows the
        // buffer as the stream proves its size. One byte more lets it see
        // its end without regrowing.
        let evidence = input.len().saturating_mul(8).max(64 << 10);
        out.reserve(n.min(limit).min(evidence).saturating_add(1));
    }
    match codec {
        KafkaCodec::None => {
            if input.len() > limit {
                return Err(DecompressError::TooLarge);
            }
            out.extend_from_slice(input);
            Ok(())
        }
        KafkaCodec::Gzip => read_bounded(flate2::bufread::MultiGzDecoder::new(input), limit, out),
        KafkaCodec::Snappy => snappy(input, limit, out),
        KafkaCodec::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(input), limit, out),
        KafkaCodec::Zstd => {
            let decoder = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
            read_bounded(decoder, limit, out)
        }
    }
}

/// Compresses a records section the way Kafka's producer frames it.
pub fn compress(codec: KafkaCodec, input: &[u8]) -> Vec<u8> {
    match codec {
        KafkaCodec::None => input.to_vec(),
        KafkaCodec::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(input).expect("Vec grows");
            enc.finish().expect("Vec grows")
        }
        KafkaCodec::Snappy => {
            let mut out = Vec::with_capacity(input.len() / 2 + 32);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut enc = snap::raw::Encoder::new();
            for chunk in input.chunks(XERIAL_BLOCK) {
                let block = enc.compress_vec(chunk).expect("chunks are small");
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            out
        }
        KafkaCodec::Lz4 => {
            // Kafka's reader decodes each block on its own: independent blocks.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(input).expect("Vec grows");
            enc.finish().expect("Vec grows")
        }
        KafkaCodec::Zstd => zstd::bulk::compress(input, 3).expect("zstd on a Vec cannot fail"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_by_name() {
        assert_eq!("GZIP".parse::<KafkaCodec>().unwrap(), KafkaCodec::Gzip);
        let e = "zlib".parse::<KafkaCodec>().unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Options);
        assert!(e.to_string().contains("unknown Kafka compression"), "{e}");
    }

    #[test]
    fn every_codec_round_trips_and_respects_the_limit() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for codec in KafkaCodec::ALL {
            let packed = compress(codec, &text);
            let mut out = Vec::new();
            decompress(codec, &packed, text.len(), &mut out).unwrap();
            assert_eq!(out, text, "{codec}");
            assert!(
                matches!(
                    decompress(codec, &packed, text.len() - 1, &mut out),
                    Err(DecompressError::TooLarge)
                ),
                "{codec}"
            );
            let mut out = Vec::new();
            decompress(codec, &compress(codec, b""), 10, &mut out).unwrap();
            assert!(out.is_empty(), "{codec}");
        }
    }

    #[test]
    fn snappy_accepts_xerial_streams_and_raw_blocks() {
        let packed = compress(KafkaCodec::Snappy, b"hello hello hello");
        assert!(packed.starts_with(&XERIAL_MAGIC));
        let raw = snap::raw::Encoder::new().compress_vec(b"hello").unwrap();
        let mut out = Vec::new();
        decompress(KafkaCodec::Snappy, &raw, 100, &mut out).unwrap();
        assert_eq!(out, b"hello");
        // A chunk length running past the end is corrupt, not a panic.
        let mut bad = packed.clone();
        bad[XERIAL_HEADER_LEN + 3] = 0xff;
        assert!(matches!(
            decompress(KafkaCodec::Snappy, &bad, 100, &mut out),
            Err(DecompressError::Corrupt(_))
        ));
    }

    #[test]
    fn garbage_is_an_error_for_every_codec() {
        for codec in [
            KafkaCodec::Gzip,
            KafkaCodec::Lz4,
            KafkaCodec::Zstd,
            KafkaCodec::Snappy,
        ] {
            let mut out = Vec::new();
            assert!(
                decompress(codec, b"\x01\x02\x03\x04garbage", 1 << 20, &mut out).is_err(),
                "{codec}"
            );
        }
    }
}
