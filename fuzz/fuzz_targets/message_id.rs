//! One fuzz input = a serialized `MessageIdData` (what
//! `MessageId.toByteArray` writes). `AnyMessageId::deserialize` never panics;
//! what it accepts serializes to bytes that deserialize to an equal id with the
//! same position and seek position (a second round trip is a fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::AnyMessageId;

fuzz_target!(|data: &[u8]| {
    let Ok(id) = AnyMessageId::deserialize(data) else {
        return;
    };
    let bytes = id.serialize();
    let back = AnyMessageId::deserialize(&bytes).expect("our own serialization parses");
    assert_eq!(back, id);
    assert_eq!(back.position().key(), id.position().key());
    assert_eq!(back.seek_position().key(), id.seek_position().key());
    assert_eq!(
        back.serialize(),
        bytes,
        "serialize is a fixed point after one round trip"
    );
    let _ = id.to_string();
});
