//! Snappy raw-block encoder whose output is byte-identical to what Apache
//! Pulsar's Java client and broker write for `CompressionType.SNAPPY`.
//!
//! Pulsar 4.2.4's `CompressionCodecSnappy` compresses with airlift
//! aircompressor 2.0.3's pure-Java `SnappyRawCompressor` (both of its code
//! paths, direct and heap buffers, end there). Snappy output is not canonical:
//! the `snap` crate is a faithful port of Google's current C++ encoder, whose
//! match finder, literal splitting and copy encoding differ from that older
//! port, so its (valid) bytes differ from Pulsar's for most inputs, and it does
//! not reproduce Pulsar's own SNAPPY test vector. Compaction must rewrite
//! batches exactly as the broker's `RawBatchConverter` does and our encoder
//! must write what a Java producer writes, which needs this algorithm, not
//! just a Snappy stream. Decoding is left to `snap` (any valid stream works).
//!
//! The algorithm, per 64 KiB block of the input, each block independent:
//! - a hash table of `u16` block positions, sized to the next power of two of
//!   the block length within 256..=16384 entries, cleared per block; the hash
//!   is the little-endian 4 bytes at a position times `0x1e35a7bd`, top bits;
//! - scan from one byte past the last emitted position; after every 32 misses
//!   the stride grows by one byte (incompressible data is skimmed quickly);
//! - a 4-byte hit emits the pending literal, then copies as long as the
//!   position right after a copy hits again (its predecessor is hashed first);
//! - the last 15 bytes of a block are never searched: they end in the final
//!   literal;
//! - copies split into 64-byte pieces while 68 or more remain, then one 60-byte
//!   piece if more than 64 remain; the rest uses the 2-byte form unless it is
//!   shorter than 12 with an offset under 2048 (1-byte form). The 4-byte-offset
//!   form is never needed because offsets stay within a block.
//!
//! The stream starts with the uncompressed length as a varint. Output never
//! exceeds [`max_compressed_len`], which is reserved once up front.

use crate::error::{EntryError, Result};

/// Blocks are compressed independently; offsets always fit in 16 bits.
const BLOCK_SIZE: usize = 1 << 16;
/// Bytes at the end of a block that the match search never starts in.
const INPUT_MARGIN: usize = 15;
const MIN_TABLE_SIZE: usize = 1 << 8;
const MAX_TABLE_SIZE: usize = 1 << 14;
const HASH_MULTIPLIER: u32 = 0x1e35_a7bd;

/// Snappy tag types (low two bits of a tag byte).
const TAG_LITERAL: u8 = 0b00;
const TAG_COPY_1: u8 = 0b01;
const TAG_COPY_2: u8 = 0b10;

/// Upper bound of the encoded size of `len` input bytes (aircompressor's
/// bound: a 1-byte literal followed by a 5-byte copy is the worst ratio).
pub fn max_compressed_len(len: usize) -> usize {
    len.saturating_add(len / 6).saturating_add(32)
}

/// Compresses `input` into one raw Snappy block (varint length + elements),
/// byte for byte as Pulsar's `CompressionCodecSnappy` does.
///
/// Fails only for inputs longer than `u32::MAX` bytes, which no Snappy
/// length header can describe.
pub fn compress(input: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    compress_into(input, &mut out)?;
    Ok(out)
}

/// Like [`compress`], appending to `out`.
pub fn compress_into(input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let len = u32::try_from(input.len()).map_err(|_| {
        EntryError::Encode(format!(
            "snappy: input of {} bytes exceeds the format's 4 GiB limit",
            input.len()
        ))
    })?;
    out.reserve_exact(max_compressed_len(input.len()));
    write_varint(out, len);
    if input.is_empty() {
        return Ok(());
    }
    // The first block is the largest, so its table size serves every block.
    let mut table = vec![0u16; table_size(input.len().min(BLOCK_SIZE))];
    for block in input.chunks(BLOCK_SIZE) {
        compress_block(block, &mut table, out);
    }
    Ok(())
}

/// Hash-table entries for a block of `len` bytes: the next power of two,
/// clamped to 256..=16384.
fn table_size(len: usize) -> usize {
    len.next_power_of_two()
        .clamp(MIN_TABLE_SIZE, MAX_TABLE_SIZE)
}

#[inline(always)]
fn load_u32(block: &[u8], at: usize) -> u32 {
    let b = &block[at..at + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[inline(always)]
fn hash(word: u32, shift: u32) -> usize {
    (word.wrapping_mul(HASH_MULTIPLIER) >> shift) as usize
}

/// Encodes one block (1..=64 KiB) as literal and copy elements.
fn compress_block(block: &[u8], table: &mut [u16], out: &mut Vec<u8>) {
    let len = block.len();
    let size = table_size(len);
    let table = &mut table[..size];
    table.fill(0);
    let shift = 32 - size.trailing_zeros();

    let mut next_emit = 0;
    if len > INPUT_MARGIN {
        // Last position where a 4-byte word may start a search.
        let search_end = len - INPUT_MARGIN;
        let mut pos = 0;
        'blocks: while pos <= search_end {
            // Find a 4-byte match, starting one byte past the last emission.
            let mut misses = 32usize;
            pos += 1;
            let mut candidate;
            loop {
                let stride = misses >> 5;
                if pos + stride > search_end {
                    break 'blocks;
                }
                let word = load_u32(block, pos);
                let slot = hash(word, shift);
                candidate = usize::from(table[slot]);
                table[slot] = pos as u16;
                if word == load_u32(block, candidate) {
                    break;
                }
                pos += stride;
                misses += 1;
            }
            emit_literal(out, &block[next_emit..pos]);

            // Copy, and keep copying while the next position hits again.
            loop {
                let matched = 4 + common_prefix(block, pos + 4, candidate + 4);
                emit_copy(out, pos - candidate, matched);
                pos += matched;
                if pos >= search_end {
                    break;
                }
                table[hash(load_u32(block, pos - 1), shift)] = (pos - 1) as u16;
                let word = load_u32(block, pos);
                let slot = hash(word, shift);
                candidate = usize::from(table[slot]);
                table[slot] = pos as u16;
                if word != load_u32(block, candidate) {
                    break;
                }
            }
            next_emit = pos;
        }
    }
    if next_emit < len {
        emit_literal(out, &block[next_emit..]);
    }
}

/// Length of the common prefix of `block[at..]` and `block[earlier..]`
/// (`earlier < at`), bounded by the block's end.
#[inline(always)]
fn common_prefix(block: &[u8], at: usize, earlier: usize) -> usize {
    let ahead = &block[at..];
    let behind = &block[earlier..];
    let mut n = 0;
    for (a, b) in ahead.chunks_exact(8).zip(behind.chunks_exact(8)) {
        let a = u64::from_le_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]]);
        let b = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let diff = a ^ b;
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + ahead[n..]
        .iter()
        .zip(&behind[n..])
        .take_while(|(a, b)| a == b)
        .count()
}

/// A literal element: tag with `len - 1` inline below 60, else in 1–4
/// little-endian bytes after tags 60..=63.
fn emit_literal(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len() - 1;
    if n < 60 {
        out.push(TAG_LITERAL | (n as u8) << 2);
    } else {
        let width = match n {
            0..=0xff => 1,
            0x100..=0xffff => 2,
            0x1_0000..=0xff_ffff => 3,
            _ => 4,
        };
        out.push(TAG_LITERAL | ((59 + width) << 2));
        out.extend_from_slice(&(n as u32).to_le_bytes()[..usize::from(width)]);
    }
    out.extend_from_slice(bytes);
}

/// Copy elements for a match of `len` (>= 4) bytes at `offset` (< 65536).
fn emit_copy(out: &mut Vec<u8>, offset: usize, mut len: usize) {
    let offset16 = (offset as u16).to_le_bytes();
    let copy_2 = |out: &mut Vec<u8>, n: usize| {
        out.extend_from_slice(&[TAG_COPY_2 | ((n - 1) as u8) << 2, offset16[0], offset16[1]]);
    };
    // Split long matches so at least 4 bytes remain for the final element.
    while len >= 68 {
        copy_2(out, 64);
        len -= 64;
    }
    if len > 64 {
        copy_2(out, 60);
        len -= 60;
    }
    if len < 12 && offset < 2048 {
        out.extend_from_slice(&[
            TAG_COPY_1 | ((len - 4) as u8) << 2 | ((offset >> 8) as u8) << 5,
            offset as u8,
        ]);
    } else {
        copy_2(out, len);
    }
}

fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode(compressed: &[u8]) -> Vec<u8> {
        snap::raw::Decoder::new()
            .decompress_vec(compressed)
            .expect("snap decodes our stream")
    }

    fn check(input: &[u8]) {
        let c = compress(input).unwrap();
        assert!(c.len() <= max_compressed_len(input.len()));
        assert_eq!(decode(&c), input, "len {}", input.len());
    }

    fn noise(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    // Pulsar's CompressorCodecTest input and its SNAPPY vector (spec §12.1).
    const LOREM: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Cras id massa odio. Duis commodo ligula sed efficitur cursus. Aliquam sollicitudin, tellus quis suscipit tincidunt, erat sem efficitur nulla, in feugiat diam ex a dolor. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia Curae; Vestibulum ac volutpat nisl, vel aliquam elit. Maecenas auctor aliquet turpis, id ullamcorper metus. Ut tincidunt et magna non ultrices. Quisque lacinia metus sed egestas tincidunt. Sed congue lacinia maximus.";
    const LOREM_SNAPPY: &str = "8c04f0b44c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c757320717569732073757363697069742074696e636964756e742c20657261742073656d1d516c6e756c6c612c20696e2066657567696174206469616d20657820612005d0442e20566573746962756c756d20616e74652009ed147072696d69730539d861756369627573206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b202e5800586320766f6c7574706174206e69736c2c2076656c20616c09e52931384d616563656e617320617563746f72091e246574207475727069732c214c01cc286d636f72706572206d6574212900553d010195206d61676e61206e6f6e159f402e2051756973717565206c6163696e6961093b002025791c67657374617320743144102e2053656421d900672e3000186178696d75732e";

    #[test]
    fn reproduces_pulsars_test_vector() {
        assert_eq!(
            hex::encode(compress(LOREM.as_bytes()).unwrap()),
            LOREM_SNAPPY
        );
        // `snap` writes different (valid) bytes for the same input.
        let other = snap::raw::Encoder::new()
            .compress_vec(LOREM.as_bytes())
            .unwrap();
        assert_ne!(hex::encode(other), LOREM_SNAPPY);
    }

    #[test]
    fn small_inputs_match_aircompressor() {
        // Spec §12.2 (aircompressor output): empty and `hello`.
        assert_eq!(compress(b"").unwrap(), [0]);
        assert_eq!(hex::encode(compress(b"hello").unwrap()), "051068656c6c6f");
        // 16 bytes is the shortest block the match search runs on at all.
        // 16 bytes: too short for the match search to start, one literal.
        assert_eq!(
            hex::encode(compress(&[b'a'; 16]).unwrap()),
            format!("103c{}", "61".repeat(16))
        );
    }

    #[test]
    fn copy_splitting_and_literal_widths() {
        // Long runs: 64-byte pieces, a 60-byte piece, then the 1-byte form.
        for len in [
            16, 17, 31, 32, 67, 68, 69, 80, 128, 131, 132, 133, 1000, 65_536,
        ] {
            check(&vec![7u8; len]);
        }
        // Literal lengths around the tag boundaries (60, 256, 65536).
        for len in [59, 60, 61, 62, 255, 256, 257, 258, 65_535, 65_536, 65_537] {
            check(&noise(len, len as u64 + 1));
        }
        // 2-byte-offset copies: noise repeating with a 2500-byte period.
        let base = noise(2500, 9);
        let v: Vec<u8> = base.iter().copied().cycle().take(10_000).collect();
        let c = compress(&v).unwrap();
        assert!(c.len() < 2 * 2500, "{}", c.len());
        check(&v);
    }

    #[test]
    fn multi_block_inputs() {
        let text: Vec<u8> = LOREM.bytes().cycle().take(300_000).collect();
        check(&text);
        // Blocks are independent: the second block cannot refer to the first.
        let mut twice = noise(BLOCK_SIZE, 3);
        twice.extend_from_within(..);
        let c = compress(&twice).unwrap();
        assert!(c.len() > 2 * BLOCK_SIZE);
        check(&twice);
        check(&noise(BLOCK_SIZE + 1, 5));
        check(&noise(3 * BLOCK_SIZE + 17, 6));
    }

    #[test]
    fn bounds() {
        assert_eq!(max_compressed_len(0), 32);
        assert_eq!(max_compressed_len(600), 732);
        assert_eq!(table_size(1), 256);
        assert_eq!(table_size(257), 512);
        assert_eq!(table_size(BLOCK_SIZE), MAX_TABLE_SIZE);
    }

    proptest! {
        #[test]
        fn round_trips_random(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            check(&data);
        }

        #[test]
        fn round_trips_repetitive(
            alphabet in proptest::collection::vec(any::<u8>(), 1..6),
            picks in proptest::collection::vec(any::<usize>(), 0..5000),
        ) {
            let data: Vec<u8> = picks.iter().map(|i| alphabet[i % alphabet.len()]).collect();
            check(&data);
        }

        #[test]
        fn round_trips_spliced(
            seed in any::<u64>(),
            pieces in proptest::collection::vec((0usize..400, 1usize..300), 1..40),
        ) {
            // Random text with back-references of every distance and length.
            let mut data = noise(64, seed | 1);
            for (back, n) in pieces {
                let start = data.len().saturating_sub(back + 1);
                for i in 0..n {
                    data.push(data[start + i % (data.len() - start)]);
                }
                data.extend(noise(back % 7, seed ^ back as u64));
            }
            check(&data);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn round_trips_multi_block(len in 60_000usize..200_000, seed in any::<u64>(), period in 1usize..5000) {
            let base = noise(period, seed | 1);
            let data: Vec<u8> = (0..len).map(|i| base[i % period] ^ (i / 9000) as u8).collect();
            check(&data);
        }
    }
}
