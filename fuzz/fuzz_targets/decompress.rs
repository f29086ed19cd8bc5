//! Input layout: `[codec selector: u8][uncompressed size: u32 BE][compressed bytes…]`.
//! The selector picks one of the five codecs (modulo 5); the size is folded
//! into 0..=1 MiB. `Decompressor::decompress` must never panic, must return
//! exactly `size` bytes when it succeeds, must give the same answer when the
//! same decompressor is reused, and every codec must round-trip the rest of
//! the input through `compress`.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::format::compression::{compress, Decompressor};
use pulsar_entries_core::Codec;

const LIMIT: usize = 1 << 20;

thread_local! {
    static D: RefCell<Decompressor> = RefCell::new(Decompressor::default());
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let codec = Codec::ALL[data[0] as usize % Codec::ALL.len()];
    let size = u32::from_be_bytes(data[1..5].try_into().unwrap()) % (LIMIT as u32 + 1);
    let input = &data[5..];

    D.with(|d| check(&mut d.borrow_mut(), data[0], codec, size, input));
});

fn check(d: &mut Decompressor, selector: u8, codec: Codec, size: u32, input: &[u8]) {
    let first = d
        .decompress(codec, input, size, LIMIT, 0)
        .map(<[u8]>::to_vec);
    if let Ok(out) = &first {
        if codec == Codec::None {
            assert_eq!(out.as_slice(), input);
        } else {
            assert_eq!(out.len(), size as usize);
        }
    }
    // Reuse: state left by the first call must not change the result.
    let again = d
        .decompress(codec, input, size, LIMIT, 0)
        .map(<[u8]>::to_vec);
    assert_eq!(first, again);

    // Over the limit is refused up front.
    if codec != Codec::None && size > 0 {
        assert!(d
            .decompress(codec, input, size, size as usize - 1, 0)
            .is_err());
    }

    // Whatever the bytes, compressing them must decompress back to them.
    if selector & 0x80 != 0 && input.len() <= 64 << 10 {
        let packed = compress(codec, input).expect("compression cannot fail");
        let back = d
            .decompress(codec, &packed, input.len() as u32, LIMIT, 0)
            .unwrap_or_else(|e| panic!("{codec} round trip of {} bytes failed: {e}", input.len()));
        assert_eq!(back, input, "{codec} round trip");
    }
}
