//! KoP Kafka entry decoding (criterion). Run from the repo root:
//!
//!     cargo bench -p pulsar-entries-core --bench kafka
//!
//! The corpus (fixed seed): 500 KoP entries of one Kafka RecordBatch v2 with
//! 100 JSON-like records each (keys, a header, ~120-byte values), per Kafka
//! codec. The baseline in the same run is the same messages stored the
//! Pulsar way (a Pulsar batch with the closest Pulsar codec), decoded by the
//! same `Decoder`: the ratio shows what the Kafka path costs per record.
//! A summary table (criterion medians) follows criterion's output.

use std::hint::black_box;
use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use criterion::{BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::processor::kafka::codec::KafkaCodec;
use pulsar_entries_core::processor::kafka::encode::{
    encode_kop_entry, encode_record_batch, KafkaBatchOptions, KafkaRecordInput,
};
use pulsar_entries_core::{encode_entry, Codec, DecodeOptions, EncodeOptions, Key, MessageInput};

const ENTRIES: usize = 500;
const RECORDS: usize = 100;

fn records(rng: &mut StdRng) -> Vec<KafkaRecordInput> {
    (0..RECORDS)
        .map(|i| KafkaRecordInput {
            key: Some(format!("account-{}", rng.random_range(0..1000)).into_bytes()),
            value: Some(
                format!(
                    r#"{{"seq":{i},"user":"user-{}","amount":{:.2},"region":"eu-west-1","tags":["web","promo"]}}"#,
                    rng.random_range(0..100_000),
                    rng.random_range(0.0..500.0)
                )
                .into_bytes(),
            ),
            headers: vec![("trace-id".into(), Some(rng.random::<u64>().to_be_bytes().to_vec()))],
            timestamp: Some(1_700_000_000_000 + i as i64),
            offset_delta: None,
        })
        .collect()
}

fn table(entries: Vec<Vec<u8>>) -> RecordBatch {
    let n = entries.len() as i64;
    RecordBatch::try_from_iter(vec![
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![1; n as usize])) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter_values(
                entries.iter().map(Vec::as_slice),
            )) as ArrayRef,
        ),
    ])
    .unwrap()
}

/// The closest Pulsar codec for the Pulsar-format baseline.
fn pulsar_codec(k: KafkaCodec) -> Codec {
    match k {
        KafkaCodec::None => Codec::None,
        KafkaCodec::Gzip => Codec::Zlib,
        KafkaCodec::Snappy => Codec::Snappy,
        KafkaCodec::Lz4 => Codec::Lz4,
        KafkaCodec::Zstd => Codec::Zstd,
    }
}

fn corpora(codec: KafkaCodec) -> (RecordBatch, RecordBatch) {
    let mut rng = StdRng::seed_from_u64(0x5eed_0005);
    let mut kop = Vec::with_capacity(ENTRIES);
    let mut pulsar = Vec::with_capacity(ENTRIES);
    for _ in 0..ENTRIES {
        let recs = records(&mut rng);
        let batch = encode_record_batch(
            &recs,
            &KafkaBatchOptions {
                compression: codec,
                ..Default::default()
            },
        )
        .unwrap();
        kop.push(encode_kop_entry(&[&batch], 1_700_000_000_000).unwrap());
        let msgs: Vec<MessageInput> = recs
            .iter()
            .map(|r| MessageInput {
                value: r.value.clone(),
                key: r
                    .key
                    .clone()
                    .map(|k| Key::Text(String::from_utf8(k).unwrap())),
                properties: vec![(
                    "trace-id".into(),
                    hex::encode(r.headers[0].1.as_ref().unwrap()),
                )],
                event_time: r.timestamp.map(|t| t as u64),
                ..Default::default()
            })
            .collect();
        pulsar.push(
            encode_entry(
                &msgs,
                &EncodeOptions {
                    compression: pulsar_codec(codec),
                    ..Default::default()
                },
            )
            .unwrap(),
        );
    }
    (table(kop), table(pulsar))
}

fn criterion_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| PathBuf::from(d).join("criterion"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/criterion"))
}

fn median_ns(path: &str) -> Option<f64> {
    let mut text = String::new();
    std::fs::File::open(criterion_dir().join(path).join("new/estimates.json"))
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let rest = &text[text.find("\"median\"")?..];
    let rest = &rest[rest.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    rest[..rest.find([',', '}'])?].trim().parse().ok()
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args();
    let opts = DecodeOptions::default();
    {
        let mut g = c.benchmark_group("kop_decode");
        g.throughput(Throughput::Elements((ENTRIES * RECORDS) as u64));
        for codec in KafkaCodec::ALL {
            let (kop, pulsar) = corpora(codec);
            let rows: usize = decode_record_batch(&kop, opts)
                .unwrap()
                .iter()
                .map(|b| b.num_rows())
                .sum();
            assert_eq!(rows, ENTRIES * RECORDS);
            g.bench_with_input(BenchmarkId::new("kafka", codec.name()), &kop, |b, t| {
                b.iter(|| black_box(decode_record_batch(t, opts).unwrap()))
            });
            g.bench_with_input(
                BenchmarkId::new("pulsar_baseline", pulsar_codec(codec).name()),
                &pulsar,
                |b, t| b.iter(|| black_box(decode_record_batch(t, opts).unwrap())),
            );
        }
        g.finish();
    }
    c.final_summary();
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    println!("\nKoP decode: {ENTRIES} entries x {RECORDS} records (medians)");
    println!(
        "{:<8} {:>14} {:>14} {:>16} {:>10}",
        "codec", "kafka rec/s", "entries/s", "pulsar rec/s", "ratio"
    );
    for codec in KafkaCodec::ALL {
        let k = median_ns(&format!("kop_decode/kafka/{}", codec.name()));
        let p = median_ns(&format!(
            "kop_decode/pulsar_baseline/{}",
            pulsar_codec(codec).name()
        ));
        if let (Some(k), Some(p)) = (k, p) {
            let per_s = |ns: f64, n: usize| n as f64 / (ns / 1e9);
            println!(
                "{:<8} {:>14.0} {:>14.0} {:>16.0} {:>9.2}x",
                codec.name(),
                per_s(k, ENTRIES * RECORDS),
                per_s(k, ENTRIES),
                per_s(p, ENTRIES * RECORDS),
                p / k
            );
        }
    }
}
