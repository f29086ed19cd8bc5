//! One fuzz input = a serialized `MessageIdData` (what
//! `MessageId.toByteArray` writes). `AnyMessageId::deserialize` never panics;
//! what it accepts serializes to bytes that deserialize to the same position
//! and seek position (a negative partition reads back as -1, as in Java, which
//! does not write it), and serialization is a fixed point from the second
//! round trip on. Not from the first: as in Java, an id whose batch index is
//! present but -1 reads as a batch id and writes its batch size, then reads
//! back as a plain id, which writes batch size 0 (`MessageIdImpl.toByteArray`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::AnyMessageId;

fuzz_target!(|data: &[u8]| {
    let Ok(id) = AnyMessageId::deserialize(data) else {
        return;
    };
    let bytes = id.serialize();
    let back = AnyMessageId::deserialize(&bytes).expect("our own serialization parses");
    // As Java's toByteArray, a negative partition is not written: it reads back as -1.
    let norm = |k: (i64, i64, i32, i32)| (k.0, k.1, k.2.max(-1), k.3);
    assert_eq!(norm(back.position().key()), norm(id.position().key()));
    assert_eq!(
        norm(back.seek_position().key()),
        norm(id.seek_position().key())
    );
    let again = back.serialize();
    let third = AnyMessageId::deserialize(&again).expect("our own serialization parses");
    assert_eq!(
        third.serialize(),
        again,
        "serialize is a fixed point from the second round trip on"
    );
    let _ = id.to_string();
});
