//! Compaction benchmarks (figures in benches/README.md).
//!
//! - `compact/*`: in-process two-phase compaction of topics of batched
//!   entries (1,000 messages per entry, LZ4, 100 k keys, 3 % tombstones) at
//!   growing sizes: throughput per message should stay flat (linear cost).
//! - `distributed/*`: the same topic through the Spark building blocks
//!   (candidates → sort → per-key fold → rebuild), run on one core, against
//!   the in-process compactor.
//! - `last_position/*`: PIP-429's fast path (`compacted_batch_indexes`)
//!   against the fallback scan, for compacted entries of ~1 KB and ~1 MB: the
//!   fast path reads only the metadata, so its cost must not grow with the
//!   payload.

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pulsar_entries_core::compaction::compactor::{aborted_in, compact_batches};
use pulsar_entries_core::compaction::distributed::{candidates, rebuild, SurvivorFolder};
use pulsar_entries_core::compaction::position::last_in_compacted_entry;
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::{encode_entry, Codec, EncodeOptions, Key, MessageInput};

const KEYS: u64 = 100_000;
const PER_ENTRY: usize = 1_000;

/// A deterministic xorshift, so every run compacts the same topic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `messages` messages in batches of 1,000, as RecordBatches of 1,000 entries.
fn topic(messages: usize, seed: u64) -> Vec<RecordBatch> {
    let mut rng = Rng(seed | 1);
    let entries = messages / PER_ENTRY;
    let mut data = Vec::with_capacity(entries);
    for e in 0..entries {
        let msgs: Vec<MessageInput> = (0..PER_ENTRY)
            .map(|_| {
                let r = rng.next();
                let tombstone = r % 100 < 3;
                MessageInput {
                    key: Some(Key::Text(format!("key-{}", (r >> 8) % KEYS))),
                    value: (!tombstone).then(|| {
                        format!(
                            r#"{{"user":{},"amount":{}.{:02},"tags":["web","promo"],"seq":{}}}"#,
                            r % 997,
                            (r >> 20) % 500,
                            (r >> 30) % 100,
                            e
                        )
                        .into_bytes()
                    }),
                    ..Default::default()
                }
            })
            .collect();
        data.push(
            encode_entry(
                &msgs,
                &EncodeOptions {
                    compression: Codec::Lz4,
                    publish_time: 1_700_000_000_000 + e as u64,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("data", DataType::Binary, true),
    ]));
    data.chunks(1_000)
        .enumerate()
        .map(|(c, chunk)| {
            let first = (c * 1_000) as i64;
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![1; chunk.len()])),
                    Arc::new(Int64Array::from_iter_values(
                        first..first + chunk.len() as i64,
                    )),
                    Arc::new(BinaryArray::from_iter_values(chunk.iter())),
                ],
            )
            .unwrap()
        })
        .collect()
}

fn bench_compact(c: &mut Criterion) {
    let mut group = c.benchmark_group("compact");
    group.sample_size(10);
    for millions in [1usize, 4] {
        let input = topic(millions * 1_000_000, 7);
        group.throughput(Throughput::Elements((millions * 1_000_000) as u64));
        for order in [Order::Publish, Order::EventTime] {
            let opts = CompactOptions {
                order,
                ..Default::default()
            };
            group.bench_with_input(
                BenchmarkId::new(format!("{order:?}"), format!("{millions}M")),
                &input,
                |b, input| b.iter(|| black_box(compact_batches(input, opts).unwrap())),
            );
        }
    }
    group.finish();
}

/// The Spark building blocks on one core, without Spark: its shuffle is an
/// in-memory sort of the candidate rows and its join a hash lookup.
fn distributed(input: &[RecordBatch], opts: &CompactOptions) -> usize {
    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use std::collections::HashMap;

    // The aborted transactions first, as an engine collects them before phase one.
    let aborted = aborted_in(input).unwrap();
    let cands: Vec<RecordBatch> = input
        .iter()
        .map(|b| candidates(b, opts, opts.order == Order::Publish, &aborted).unwrap())
        .collect();
    let all = arrow_select::concat::concat_batches(&cands[0].schema(), &cands).unwrap();
    let k = all.column(1).as_string::<i32>();
    let e = all.column(3).as_primitive::<Int64Type>();
    let i = all.column(4).as_primitive::<Int32Type>();
    let mut order: Vec<u32> = (0..all.num_rows() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        (k.value(a), e.value(a), i.value(a)).cmp(&(k.value(b), e.value(b), i.value(b)))
    });
    let sorted =
        arrow_select::take::take_record_batch(&all, &arrow_array::UInt32Array::from(order))
            .unwrap();
    let mut folder = SurvivorFolder::new(opts.order);
    let mut retained: HashMap<i64, Vec<i32>> = HashMap::new();
    for s in [folder.push(&sorted).unwrap(), folder.finish()] {
        let se = s.column(2).as_primitive::<Int64Type>();
        let si = s.column(3).as_primitive::<Int32Type>();
        for r in 0..s.num_rows() {
            retained.entry(se.value(r)).or_default().push(si.value(r));
        }
    }
    let mut written = 0;
    for b in input {
        let ids = b.column(1).as_primitive::<Int64Type>();
        let rows: Vec<u32> = (0..b.num_rows())
            .filter(|&r| retained.contains_key(&ids.value(r)))
            .map(|r| r as u32)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut list = ListBuilder::new(Int32Builder::new());
        for &r in &rows {
            list.append_value(retained[&ids.value(r as usize)].iter().map(|&x| Some(x)));
        }
        let taken = arrow_select::take::take_record_batch(b, &arrow_array::UInt32Array::from(rows))
            .unwrap();
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(
            "retained",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
            true,
        ));
        let mut columns = taken.columns().to_vec();
        columns.push(Arc::new(list.finish()));
        let joined = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        written += rebuild(&joined, opts)
            .unwrap()
            .iter()
            .map(|o| o.num_rows())
            .sum::<usize>();
    }
    written
}

fn bench_distributed(c: &mut Criterion) {
    let mut group = c.benchmark_group("distributed");
    group.sample_size(10);
    let input = topic(1_000_000, 7);
    group.throughput(Throughput::Elements(1_000_000));
    let opts = CompactOptions::default();
    group.bench_function("in_process/1M", |b| {
        b.iter(|| black_box(compact_batches(&input, opts).unwrap()))
    });
    group.bench_function("candidates_sort_fold_rebuild/1M", |b| {
        b.iter(|| black_box(distributed(&input, &opts)))
    });
    group.finish();
}

/// A compacted batch of `n` messages of `size` bytes, every other one
/// retained, with or without field 31 (the scan fallback needs decompression).
fn compacted_entry(n: usize, size: usize, with_indexes: bool, codec: Codec) -> Vec<u8> {
    let value = vec![b'x'; size];
    let msgs: Vec<MessageInput> = (0..n)
        .map(|i| MessageInput {
            key: Some(Key::Text(format!("k{i}"))),
            value: Some(value.clone()),
            ..Default::default()
        })
        .collect();
    let entry = encode_entry(
        &msgs,
        &EncodeOptions {
            compression: codec,
            ..Default::default()
        },
    )
    .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("data", DataType::Binary, true),
    ]));
    // Compact against a later entry that supersedes every odd key.
    let later: Vec<MessageInput> = (1..n)
        .step_by(2)
        .map(|i| MessageInput {
            key: Some(Key::Text(format!("k{i}"))),
            value: Some(b"new".to_vec()),
            ..Default::default()
        })
        .collect();
    let later = encode_entry(&later, &EncodeOptions::default()).unwrap();
    let input = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1, 1])),
            Arc::new(Int64Array::from(vec![0, 1])),
            Arc::new(BinaryArray::from_iter_values([entry, later].iter())),
        ],
    )
    .unwrap();
    let out = compact_batches(&[input], CompactOptions::default()).unwrap();
    let data = out[0]
        .column_by_name("data")
        .unwrap()
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap()
        .value(0)
        .to_vec();
    if with_indexes {
        return data;
    }
    strip_field_31(&data)
}

/// The same entry as a pre-PIP-429 broker wrote it: no field 31.
fn strip_field_31(entry: &[u8]) -> Vec<u8> {
    use prost::Message as _;
    let view = pulsar_entries_core::EntryView::parse(entry, false).unwrap();
    let mut md = pulsar_entries_core::proto::MessageMetadata::decode(view.metadata.raw).unwrap();
    md.compacted_batch_indexes.clear();
    pulsar_entries_core::format::encode::frame_entry(&md, view.payload, true, None)
}

fn bench_last_position(c: &mut Criterion) {
    let mut group = c.benchmark_group("last_position");
    // ~1 KB and ~1 MB entries (10 messages of 100 B / 100 KB), ZSTD.
    for (label, size) in [("1KB", 100usize), ("1MB", 100_000)] {
        let fast = compacted_entry(10, size, true, Codec::Zstd);
        let scan = compacted_entry(10, size, false, Codec::Zstd);
        assert_eq!(
            last_in_compacted_entry(1, 0, &fast, usize::MAX).unwrap().0,
            last_in_compacted_entry(1, 0, &scan, usize::MAX).unwrap().0
        );
        group.bench_function(BenchmarkId::new("fast_path", label), |b| {
            b.iter(|| {
                black_box(last_in_compacted_entry(1, 0, black_box(&fast), usize::MAX).unwrap())
            })
        });
        group.bench_function(BenchmarkId::new("scan", label), |b| {
            b.iter(|| {
                black_box(last_in_compacted_entry(1, 0, black_box(&scan), usize::MAX).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_compact,
    bench_distributed,
    bench_last_position
);
criterion_main!(benches);
