//! The seeded corpus: JSON-like messages encoded as Pulsar entries.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use rand::rngs::StdRng;
use rand::Rng;

use pulsar_entries_core::{encode_entry, Codec, EncodeOptions, EntryView, Key, MessageInput};

pub(crate) const SEED: u64 = 0x5eed_2024;
pub(crate) const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "sensor",
    "temperature",
    "humidity",
    "ok",
    "warn",
    "error",
    "user",
    "order",
    "payment",
    "refund",
    "eu-west-1",
    "us-east-2",
    "ap-south-1",
    "true",
    "false",
    "null",
    "checkout",
];

// ---------------------------------------------------------------------------
// Corpus
// ---------------------------------------------------------------------------

/// A JSON-like message of exactly `len` bytes: field names and words repeat,
/// numbers are random, so it compresses like typical event payloads.
pub(crate) fn json_message(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut s = String::with_capacity(len + 64);
    write!(
        s,
        "{{\"id\":{},\"ts\":{},\"user\":\"u{}\",\"amount\":{}.{:02},\"region\":\"{}\",\"events\":[",
        rng.random_range(0..1_000_000_000u64),
        1_700_000_000_000u64 + rng.random_range(0..100_000_000u64),
        rng.random_range(0..100_000u32),
        rng.random_range(0..10_000u32),
        rng.random_range(0..100u32),
        WORDS[rng.random_range(0..WORDS.len())],
    )
    .unwrap();
    while s.len() < len {
        write!(
            s,
            "{{\"k\":\"{}\",\"v\":{},\"s\":\"{}\"}},",
            WORDS[rng.random_range(0..WORDS.len())],
            rng.random_range(0..1_000_000u32),
            WORDS[rng.random_range(0..WORDS.len())],
        )
        .unwrap();
    }
    s.truncate(len);
    s.into_bytes()
}

/// `n` messages of `len ± 20%` bytes; with `keyed`, a key and one property each.
pub(crate) fn messages(rng: &mut StdRng, n: usize, len: usize, keyed: bool) -> Vec<MessageInput> {
    (0..n)
        .map(|_| {
            let l = if len >= 10 {
                rng.random_range(len * 4 / 5..=len * 6 / 5)
            } else {
                len
            };
            MessageInput {
                value: Some(json_message(rng, l)),
                key: keyed.then(|| Key::Text(format!("user-{}", rng.random_range(0..10_000u32)))),
                properties: if keyed {
                    vec![("type".into(), "event".into())]
                } else {
                    vec![]
                },
                ..Default::default()
            }
        })
        .collect()
}

pub(crate) fn entry(
    rng: &mut StdRng,
    codec: Codec,
    n: usize,
    len: usize,
    keyed: bool,
    batch: bool,
) -> Vec<u8> {
    let opts = EncodeOptions {
        batch: Some(batch),
        compression: codec,
        producer_name: "bench-producer-0".into(),
        sequence_id: rng.random_range(0..1_000_000),
        publish_time: 1_700_000_000_000,
        ..Default::default()
    };
    encode_entry(&messages(rng, n, len, keyed), &opts).unwrap()
}

pub(crate) struct Payload {
    pub(crate) codec: Codec,
    pub(crate) compressed: Vec<u8>,
    pub(crate) size: u32,
}

pub(crate) fn payload_of(e: &[u8]) -> Payload {
    let v = EntryView::parse(e, true).unwrap();
    let codec = Codec::from_proto(v.metadata.compression.unwrap_or(0)).unwrap();
    Payload {
        codec,
        compressed: v.payload.to_vec(),
        size: v
            .metadata
            .uncompressed_size
            .unwrap_or(v.payload.len() as u32),
    }
}

pub(crate) fn entries_batch(entries: &[Vec<u8>]) -> RecordBatch {
    let n = entries.len() as i64;
    let data = BinaryArray::from_iter_values(entries.iter());
    RecordBatch::try_from_iter([
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![42; n as usize])) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        ("data", Arc::new(data) as ArrayRef),
    ])
    .unwrap()
}

pub(crate) fn codec_name(c: Codec) -> &'static str {
    c.name()
}
