//! Chunk reassembly benchmarks (criterion). Run from the repo root:
//!
//!     cargo bench -p pulsar-entries-core --bench chunks
//!
//! The corpus: 32 messages of 1 MiB (half JSON-like text, half random bytes,
//! so every codec has work to do), each split by `encode_chunked` into
//! 100 KiB chunks (11 chunk entries per message), two producers interleaved,
//! decoded once outside the timing. Throughput is reported in MiB of
//! reassembled (uncompressed) message bytes per second.
//!
//! Each codec group also times, in the same run, the floor reassembly cannot
//! beat: the same work without the state machine and Arrow output (join the
//! chunk payloads of each message with one copy, then decompress once). The
//! ratio of the two is the cost of reassembly itself.

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pulsar_entries_core::chunks::{reassemble, ReassemblyOptions};
use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::{encode_chunked, Codec, DecodeOptions, EncodeOptions, MessageInput};

const MESSAGES: usize = 32;
const MESSAGE_SIZE: usize = 1 << 20;
const CHUNK_SIZE: usize = 100 * 1024;

fn message(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let words: [&[u8]; 6] = [
        b"\"user\":",
        b"\"amount\":",
        b"12.5,",
        b"\"eu\",",
        b"true,",
        b"{\"id\":",
    ];
    let mut out = Vec::with_capacity(MESSAGE_SIZE);
    while out.len() < MESSAGE_SIZE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (x >> 40) & 1 == 0 {
            out.extend_from_slice(words[(x % 6) as usize]);
        } else {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out.truncate(MESSAGE_SIZE);
    out
}

/// Decoded chunk rows of the corpus (two producers interleaved) and its messages.
fn corpus(codec: Codec) -> (Vec<RecordBatch>, Vec<Vec<u8>>) {
    let mut per_message = Vec::new();
    let mut values = Vec::new();
    for m in 0..MESSAGES {
        let value = message(m as u64);
        let opts = EncodeOptions {
            compression: codec,
            producer_name: format!("producer-{}", m % 2),
            sequence_id: m as u64,
            publish_time: 1_700_000_000_000 + m as u64,
            ..Default::default()
        };
        let input = MessageInput {
            value: Some(value.clone()),
            ..Default::default()
        };
        per_message.push(encode_chunked(&input, &opts, CHUNK_SIZE).unwrap());
        values.push(value);
    }
    // Interleave pairs of messages chunk by chunk, as two producers would.
    let mut entries = Vec::new();
    for pair in per_message.chunks(2) {
        let longest = pair.iter().map(Vec::len).max().unwrap();
        for k in 0..longest {
            for m in pair {
                if let Some(e) = m.get(k) {
                    entries.push(e.clone());
                }
            }
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("data", DataType::Binary, true),
    ]));
    let input = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1; entries.len()])),
            Arc::new(Int64Array::from_iter_values(0..entries.len() as i64)),
            Arc::new(BinaryArray::from_iter_values(entries.iter())),
        ],
    )
    .unwrap();
    let decoded = decode_record_batch(&input, DecodeOptions::default()).unwrap();
    (decoded, values)
}

/// The floor: each message's chunk payloads joined with one copy, then
/// decompressed once (rows are already grouped: no state machine, no Arrow).
fn join_and_decompress(decoded: &[RecordBatch], codec: Codec, d: &mut Decompressor) -> usize {
    let mut produced = 0;
    for batch in decoded {
        let uuid = batch.column_by_name("uuid").unwrap().as_string::<i32>();
        let value = batch.column_by_name("value").unwrap().as_binary::<i32>();
        let total = batch
            .column_by_name("total_chunk_size")
            .unwrap()
            .as_primitive::<arrow_array::types::Int32Type>();
        let mut groups: std::collections::HashMap<&str, Vec<u8>> = Default::default();
        for i in 0..batch.num_rows() {
            let buf = groups
                .entry(uuid.value(i))
                .or_insert_with(|| Vec::with_capacity(total.value(i) as usize));
            buf.extend_from_slice(value.value(i));
        }
        for buf in groups.values() {
            let out = d
                .decompress(codec, buf, MESSAGE_SIZE as u32, usize::MAX, 0)
                .unwrap();
            produced += black_box(out).len();
        }
    }
    produced
}

fn bench(c: &mut Criterion) {
    for codec in [
        Codec::None,
        Codec::Lz4,
        Codec::Zstd,
        Codec::Snappy,
        Codec::Zlib,
    ] {
        let (decoded, values) = corpus(codec);
        // The corpus reassembles whole before it is timed.
        let out = reassemble(&decoded, ReassemblyOptions::default()).unwrap();
        let rebuilt: Vec<Vec<u8>> = out
            .iter()
            .flat_map(|b| {
                let v = b
                    .column_by_name("value")
                    .unwrap()
                    .as_binary::<i32>()
                    .clone();
                (0..v.len())
                    .map(move |i| v.value(i).to_vec())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut expected = values.clone();
        let mut got = rebuilt.clone();
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "{codec}: corpus reassembles byte-identical");

        let mut group = c.benchmark_group(format!("chunks/{codec}"));
        group.throughput(Throughput::Bytes((MESSAGES * MESSAGE_SIZE) as u64));
        group.sample_size(20);
        group.bench_function(BenchmarkId::new("reassemble", "1MiB/100KiB"), |b| {
            b.iter(|| reassemble(black_box(&decoded), ReassemblyOptions::default()).unwrap())
        });
        let mut d = Decompressor::default();
        group.bench_function(
            BenchmarkId::new("floor_join_decompress", "1MiB/100KiB"),
            |b| b.iter(|| join_and_decompress(black_box(&decoded), codec, &mut d)),
        );
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
