//! Our Pulsar-compatible Snappy encoder (`pulsar_entries_core::format::snappy`) on
//! arbitrary bytes: it never panics, stays within `max_compressed_len`, and
//! the `snap` decoder (through `Decompressor`) gives the input back.
//!
//! Input layout: `[mode u8][rest…]`. Mode bit 0 clear: `rest` is encoded as
//! is. Set: `rest` is tiled `mode >> 1` times with the tile number mixed into
//! each copy, so short fuzz inputs also reach the multi-block (> 64 KiB) and
//! long-copy paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::{format::snappy, Codec};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let tiled;
    let input = if mode & 1 == 0 {
        rest
    } else {
        let tiles = usize::from(mode >> 1);
        tiled = (0..tiles)
            .flat_map(|t| {
                rest.iter().enumerate().map(move |(i, &b)| {
                    if i == t % rest.len().max(1) {
                        b ^ t as u8
                    } else {
                        b
                    }
                })
            })
            .collect::<Vec<u8>>();
        &tiled[..]
    };
    let compressed = snappy::compress(input).expect("inputs under 4 GiB always encode");
    assert!(compressed.len() <= snappy::max_compressed_len(input.len()));
    let mut d = Decompressor::default();
    let back = d
        .decompress(
            Codec::Snappy,
            &compressed,
            input.len() as u32,
            usize::MAX,
            0,
        )
        .expect("snap decodes what we encode");
    assert_eq!(back, input);
});
