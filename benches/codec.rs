//! Codec benchmarks for `pulsar-entries-core` (criterion). Run from the repo root:
//!
//!     cargo bench -p pulsar-entries-core --bench codec
//!
//! The corpus is generated with a fixed seed: JSON-like messages with random
//! numbers (LZ4 compresses them ~2x), encoded with `encode_entry` exactly as
//! Pulsar's Java producer would. Groups:
//! - `metadata_parse`: `EntryView::parse` (framing + CRC32C + metadata), and
//!   prost vs our zero-copy views for MessageMetadata / SingleMessageMetadata;
//! - `decompress`: `Decompressor::decompress` vs the raw library call;
//! - `batch_split`: `split_batch` on uncompressed batches of 100-byte messages;
//! - `decode_to_arrow`: `Decoder::decode_record_batch` + `finish` per codec,
//!   and LZ4 decompression alone over the same entries.
//!
//! After criterion's own output, a summary table prints throughputs and the
//! ratios that `benches/README.md` tracks (read back from criterion's
//! `estimates.json`, median of the samples).
//!
//! One file on purpose (about 900 lines): one criterion binary over one seeded
//! corpus, and the summary table at the end reads every group's estimates to
//! print the ratios between them, so the groups cannot live apart.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use criterion::{BenchmarkId, Criterion, Throughput};
use flate2::{Decompress, FlushDecompress};
use prost::Message as _;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::format::batch::{split_batch, BatchRecord};
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::format::metadata::{MessageMetadataView, SingleMessageMetadataView};
use pulsar_entries_core::{
    encode_entry, proto, Codec, DecodeOptions, EncodeOptions, EntryView, Key, MessageInput,
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
};

const SEED: u64 = 0x5eed_2024;
const WORDS: &[&str] = &[
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
fn json_message(rng: &mut StdRng, len: usize) -> Vec<u8> {
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
fn messages(rng: &mut StdRng, n: usize, len: usize, keyed: bool) -> Vec<MessageInput> {
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

fn entry(
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

struct Payload {
    codec: Codec,
    compressed: Vec<u8>,
    size: u32,
}

fn payload_of(e: &[u8]) -> Payload {
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

fn entries_batch(entries: &[Vec<u8>]) -> RecordBatch {
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

fn codec_name(c: Codec) -> &'static str {
    c.name()
}

// ---------------------------------------------------------------------------
// Summary bookkeeping
// ---------------------------------------------------------------------------

/// What one benchmark processes per iteration, for the summary table.
struct Work {
    path: String,
    messages: u64,
    /// Uncompressed message/payload bytes.
    bytes: u64,
}

#[derive(Default)]
struct Registry(Vec<Work>);

impl Registry {
    fn add(&mut self, path: String, messages: u64, bytes: u64) {
        self.0.push(Work {
            path,
            messages,
            bytes,
        });
    }
}

fn id(
    func: &str,
    param: &str,
    reg: &mut Registry,
    group: &str,
    messages: u64,
    bytes: u64,
) -> BenchmarkId {
    reg.add(format!("{group}/{func}/{param}"), messages, bytes);
    BenchmarkId::new(func, param)
}

fn criterion_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(p).join("criterion");
    }
    // <target>/<profile>/deps/codec-<hash>
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .map(|t| t.join("criterion"))
        .unwrap_or_else(|| "target/criterion".into())
}

/// Median time per iteration in ns, from criterion's estimates.json.
fn median_ns(path: &str) -> Option<f64> {
    let file = criterion_dir().join(path).join("new/estimates.json");
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let at = text.find("\"median\"")?;
    let rest = &text[at..];
    let at = rest.find("\"point_estimate\":")? + "\"point_estimate\":".len();
    let rest = &rest[at..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}

// ---------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------

fn rich_metadata() -> Vec<u8> {
    proto::MessageMetadata {
        producer_name: "standalone-0-42".into(),
        sequence_id: 123_456_789,
        publish_time: 1_700_000_000_000,
        properties: (0..4)
            .map(|i| proto::KeyValue {
                key: format!("header-{i}"),
                value: format!("value-{i}-{}", "x".repeat(10)),
            })
            .collect(),
        replicated_from: Some("us-east".into()),
        partition_key: Some("user-1234".into()),
        replicate_to: vec!["eu-west".into(), "ap-south".into()],
        compression: Some(1),
        uncompressed_size: Some(100_000),
        num_messages_in_batch: Some(100),
        event_time: Some(1_700_000_000_001),
        schema_version: Some(vec![0, 0, 0, 0, 0, 0, 0, 3]),
        partition_key_b64_encoded: Some(false),
        highest_sequence_id: Some(123_456_888),
        ..Default::default()
    }
    .encode_to_vec()
}

/// SingleMessageMetadata: plain (payload_size + sequence_id) and keyed.
fn single_metadatas() -> (Vec<u8>, Vec<u8>) {
    let plain = proto::SingleMessageMetadata {
        payload_size: 100,
        sequence_id: Some(4_242),
        ..Default::default()
    }
    .encode_to_vec();
    let keyed = proto::SingleMessageMetadata {
        properties: vec![
            proto::KeyValue {
                key: "type".into(),
                value: "event".into(),
            },
            proto::KeyValue {
                key: "trace-id".into(),
                value: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            },
        ],
        partition_key: Some("user-1234".into()),
        payload_size: 100,
        event_time: Some(1_700_000_000_001),
        partition_key_b64_encoded: Some(false),
        sequence_id: Some(4_242),
        ..Default::default()
    }
    .encode_to_vec();
    (plain, keyed)
}

fn bench_metadata_parse(c: &mut Criterion, reg: &mut Registry) {
    const G: &str = "metadata_parse";
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut group = c.benchmark_group(G);

    // Framing + CRC32C over the whole entry + MessageMetadata.
    for codec in [Codec::None, Codec::Lz4] {
        for n in [1usize, 10, 100, 1000] {
            let e = entry(&mut rng, codec, n, 1000, true, n > 1);
            let param = format!("{}_b{n}", codec_name(codec));
            group.throughput(Throughput::Bytes(e.len() as u64));
            let bid = id("entry_view", &param, reg, G, 1, e.len() as u64);
            group.bench_function(bid, |b| {
                b.iter(|| EntryView::parse(black_box(&e), true).unwrap().payload.len())
            });
        }
    }

    // MessageMetadata: a typical LZ4 batch header, and a rich one.
    let batch_entry = entry(&mut rng, Codec::Lz4, 100, 1000, true, true);
    let v = EntryView::parse(&batch_entry, true).unwrap();
    let typical = batch_entry[v.metadata_offset..v.payload_offset].to_vec();
    let rich = rich_metadata();
    for (name, md) in [("typical", &typical), ("rich", &rich)] {
        group.throughput(Throughput::Elements(1));
        let bid = id("message_metadata_prost", name, reg, G, 1, md.len() as u64);
        group.bench_function(bid, |b| {
            b.iter(|| proto::MessageMetadata::decode(black_box(&md[..])).unwrap())
        });
        let bid = id("message_metadata_view", name, reg, G, 1, md.len() as u64);
        group.bench_function(bid, |b| {
            b.iter(|| MessageMetadataView::parse(black_box(&md[..]), 0).unwrap())
        });
    }

    // SingleMessageMetadata: plain (payload_size + sequence_id) and keyed.
    let (plain, keyed) = single_metadatas();
    for (name, smm) in [("plain", &plain), ("keyed", &keyed)] {
        group.throughput(Throughput::Elements(1));
        let bid = id("single_metadata_prost", name, reg, G, 1, smm.len() as u64);
        group.bench_function(bid, |b| {
            b.iter(|| proto::SingleMessageMetadata::decode(black_box(&smm[..])).unwrap())
        });
        let bid = id("single_metadata_view", name, reg, G, 1, smm.len() as u64);
        group.bench_function(bid, |b| {
            b.iter(|| SingleMessageMetadataView::parse(black_box(&smm[..]), 0).unwrap())
        });
    }
    group.finish();
}

fn raw_decompress(p: &Payload) -> usize {
    let size = p.size as usize;
    let input = &p.compressed[..];
    match p.codec {
        Codec::None => input.len(),
        Codec::Lz4 => lz4_flex::block::decompress(input, size).unwrap().len(),
        Codec::Zstd => zstd::bulk::decompress(input, size).unwrap().len(),
        Codec::Snappy => snap::raw::Decoder::new()
            .decompress_vec(input)
            .unwrap()
            .len(),
        Codec::Zlib => {
            let mut z = Decompress::new(true);
            let mut out = Vec::with_capacity(size);
            z.decompress_vec(input, &mut out, FlushDecompress::Sync)
                .unwrap();
            assert_eq!(out.len(), size);
            out.len()
        }
    }
}

fn bench_decompress(c: &mut Criterion, reg: &mut Registry) {
    const G: &str = "decompress";
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let mut group = c.benchmark_group(G);
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Snappy, Codec::Zlib] {
        for n in [10usize, 1000] {
            let p = payload_of(&entry(&mut rng, codec, n, 1000, true, true));
            let param = format!("{}_{}k", codec_name(codec), p.size / 1000);
            group.throughput(Throughput::Bytes(u64::from(p.size)));
            let mut d = Decompressor::default();
            let bid = id("ours", &param, reg, G, n as u64, u64::from(p.size));
            group.bench_function(bid, |b| {
                b.iter(|| {
                    d.decompress(
                        p.codec,
                        black_box(&p.compressed),
                        p.size,
                        DEFAULT_MAX_UNCOMPRESSED_SIZE,
                        0,
                    )
                    .unwrap()
                    .len()
                })
            });
            let bid = id("raw", &param, reg, G, n as u64, u64::from(p.size));
            group.bench_function(bid, |b| b.iter(|| raw_decompress(black_box(&p))));
            if codec == Codec::Lz4 {
                // The floor: the same call ours makes, into a warm buffer.
                let mut out = vec![0u8; p.size as usize];
                let bid = id("raw_into", &param, reg, G, n as u64, u64::from(p.size));
                group.bench_function(bid, |b| {
                    b.iter(|| {
                        lz4_flex::block::decompress_into(black_box(&p.compressed), &mut out)
                            .unwrap()
                    })
                });
            }
        }
    }
    group.finish();
}

fn bench_batch_split(c: &mut Criterion, reg: &mut Registry) {
    const G: &str = "batch_split";
    let mut rng = StdRng::seed_from_u64(SEED + 2);
    let mut group = c.benchmark_group(G);
    for keyed in [false, true] {
        for n in [10usize, 100, 1000] {
            let e = entry(&mut rng, Codec::None, n, 100, keyed, true);
            let v = EntryView::parse(&e, true).unwrap();
            let md = v.metadata;
            let buf = v.payload;
            let param = format!("{}_b{n}", if keyed { "keyed" } else { "plain" });
            group.throughput(Throughput::Elements(n as u64));
            let bid = id("split", &param, reg, G, n as u64, buf.len() as u64);
            let mut out: Vec<BatchRecord<'_>> = Vec::with_capacity(n);
            group.bench_function(bid, |b| {
                b.iter(|| {
                    out.clear();
                    split_batch(black_box(buf), &md, &mut out).unwrap();
                    out.len()
                })
            });
        }
    }
    group.finish();
}

struct DecodeCase {
    name: String,
    codec: Codec,
    input: RecordBatch,
    payloads: Vec<Payload>,
    messages: u64,
    bytes: u64,
}

fn decode_cases() -> Vec<DecodeCase> {
    decode_cases_matching(None)
}

/// The decode corpus; with `only`, just that case (each case has its own seed).
fn decode_cases_matching(only: Option<&str>) -> Vec<DecodeCase> {
    // (batch size, entries): ~2–4 MB of messages per record batch.
    let shapes = [(1usize, 2000usize), (10, 300), (100, 32), (1000, 4)];
    let mut cases = vec![];
    for codec in Codec::ALL {
        for (n, count) in shapes {
            // Every shape for NONE and LZ4; batches of 100 for the others.
            if !matches!(codec, Codec::None | Codec::Lz4) && n != 100 {
                continue;
            }
            let name = format!("{}_b{n}", codec_name(codec));
            if only.is_some_and(|o| o != name) {
                continue;
            }
            let mut rng =
                StdRng::seed_from_u64(SEED + 3 + (codec.to_proto() as u64) * 10 + n as u64);
            let entries: Vec<Vec<u8>> = (0..count)
                .map(|_| entry(&mut rng, codec, n, 1000, true, n > 1))
                .collect();
            let payloads: Vec<Payload> = entries.iter().map(|e| payload_of(e)).collect();
            let bytes = payloads.iter().map(|p| u64::from(p.size)).sum();
            cases.push(DecodeCase {
                name,
                codec,
                input: entries_batch(&entries),
                payloads,
                messages: (n * count) as u64,
                bytes,
            });
        }
    }
    cases
}

/// The `data` column of an entries batch.
fn entry_data(input: &RecordBatch) -> BinaryArray {
    input
        .column_by_name("data")
        .unwrap()
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap()
        .clone()
}

/// Framing, CRC and metadata of each LZ4 entry, then its payload decompressed
/// into `d`'s warm buffer and handed to `each`.
fn parse_decompress_lz4(d: &mut Decompressor, data: &BinaryArray, mut each: impl FnMut(&[u8])) {
    for e in data.iter().flatten() {
        let v = EntryView::parse(black_box(e), true).unwrap();
        let size = v.metadata.uncompressed_size.unwrap();
        each(
            d.decompress(
                Codec::Lz4,
                v.payload,
                size,
                DEFAULT_MAX_UNCOMPRESSED_SIZE,
                0,
            )
            .unwrap(),
        );
    }
}

fn bench_decode_to_arrow(c: &mut Criterion, reg: &mut Registry) {
    const G: &str = "decode_to_arrow";
    let cases = decode_cases();
    let mut group = c.benchmark_group(G);
    for case in &cases {
        // Sanity: every entry decodes without error rows.
        let out = decode_record_batch(&case.input, DecodeOptions::default()).unwrap();
        assert_eq!(
            out.iter().map(RecordBatch::num_rows).sum::<usize>() as u64,
            case.messages
        );
        assert!(out
            .iter()
            .all(|b| b.column_by_name("error").unwrap().null_count() == b.num_rows()));

        group.throughput(Throughput::Elements(case.messages));
        let bid = id("decode", &case.name, reg, G, case.messages, case.bytes);
        group.bench_function(bid, |b| {
            b.iter(|| {
                let batches =
                    decode_record_batch(black_box(&case.input), DecodeOptions::default()).unwrap();
                batches.len()
            })
        });
        if case.codec == Codec::Lz4 {
            // LZ4 decompression alone over the same entries (warm buffer).
            let mut d = Decompressor::default();
            let bid = id(
                "lz4_decompress_only",
                &case.name,
                reg,
                G,
                case.messages,
                case.bytes,
            );
            group.bench_function(bid, |b| {
                b.iter(|| {
                    let mut total = 0;
                    for p in &case.payloads {
                        total += d
                            .decompress(
                                p.codec,
                                black_box(&p.compressed),
                                p.size,
                                DEFAULT_MAX_UNCOMPRESSED_SIZE,
                                0,
                            )
                            .unwrap()
                            .len();
                    }
                    total
                })
            });
            // Framing + CRC + metadata + decompression: everything but the rows.
            let data = entry_data(&case.input);
            let mut d = Decompressor::default();
            let bid = id(
                "lz4_parse_decompress",
                &case.name,
                reg,
                G,
                case.messages,
                case.bytes,
            );
            group.bench_function(bid, |b| {
                b.iter(|| {
                    let mut total = 0;
                    parse_decompress_lz4(&mut d, &data, |bytes| total += bytes.len());
                    total
                })
            });
            // The floor of any decoder that returns values as an Arrow `binary`
            // column: framing + CRC + decompression (warm buffer) + writing every
            // decompressed byte once more into a new contiguous buffer, as the
            // values must end up contiguous and the record headers sit between
            // them. No per-message work at all.
            let mut d = Decompressor::default();
            let bid = id("lz4_floor", &case.name, reg, G, case.messages, case.bytes);
            // Reserved exactly, so that the output is written once, never regrown.
            let reserve: usize = case.payloads.iter().map(|p| p.size as usize).sum();
            group.bench_function(bid, |b| {
                b.iter(|| {
                    let mut out: Vec<u8> = Vec::with_capacity(reserve);
                    parse_decompress_lz4(&mut d, &data, |bytes| out.extend_from_slice(bytes));
                    black_box(&out);
                    out.len()
                })
            });
        }
    }
    group.finish();
}

// ---------------------------------------------------------------------------
// Summary
// ---------------------------------------------------------------------------

fn fmt_rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.2} k", x / 1e3)
    } else {
        format!("{x:.1} ")
    }
}

fn summary(reg: &Registry) {
    let time = |path: &str| median_ns(path);
    println!("\n==== summary (median time per iteration; rates from it) ====");
    println!(
        "{:<58} {:>12} {:>14} {:>12}",
        "benchmark", "time", "msg/s", "MB/s"
    );
    for w in &reg.0 {
        let Some(ns) = time(&w.path) else {
            println!("{:<58} {:>12}", w.path, "(not run)");
            continue;
        };
        let secs = ns / 1e9;
        println!(
            "{:<58} {:>10.0}ns {:>14} {:>12.1}",
            w.path,
            ns,
            fmt_rate(w.messages as f64 / secs),
            w.bytes as f64 / secs / 1e6
        );
    }
    let ratio = |a: &str, b: &str| Some(time(a)? / time(b)?);
    let show = |label: String, r: Option<f64>, target: Option<(f64, bool)>| match r {
        None => println!("{label:<66} n/a"),
        Some(r) => {
            let verdict = match target {
                Some((t, higher_is_better)) => {
                    let met = if higher_is_better { r >= t } else { r <= t };
                    format!(
                        "  target {} {t:.2}: {}",
                        if higher_is_better { ">=" } else { "<=" },
                        if met { "MET" } else { "MISSED" }
                    )
                }
                None => String::new(),
            };
            println!("{label:<66} {r:>6.2}{verdict}");
        }
    };
    println!("\n-- prost decode time / view parse time (>1: the view is faster)");
    for (kind, names) in [
        ("message_metadata", ["typical", "rich"]),
        ("single_metadata", ["plain", "keyed"]),
    ] {
        for n in names {
            show(
                format!("{kind} {n}"),
                ratio(
                    &format!("metadata_parse/{kind}_prost/{n}"),
                    &format!("metadata_parse/{kind}_view/{n}"),
                ),
                None,
            );
        }
    }
    println!("\n-- decompress: ours time / raw library time (1.00 = no overhead)");
    for codec in ["lz4", "zstd", "snappy", "zlib"] {
        for w in reg
            .0
            .iter()
            .filter(|w| w.path.starts_with(&format!("decompress/ours/{codec}_")))
        {
            let param = w.path.rsplit('/').next().unwrap();
            show(
                format!("{param} vs raw"),
                ratio(&w.path, &format!("decompress/raw/{param}")),
                None,
            );
            if codec == "lz4" {
                show(
                    format!("{param} vs raw_into (same call, warm buffer)"),
                    ratio(&w.path, &format!("decompress/raw_into/{param}")),
                    None,
                );
            }
        }
    }
    println!("\n-- batch_split messages/s (target >= 20 M/s)");
    for w in reg.0.iter().filter(|w| w.path.starts_with("batch_split/")) {
        if let Some(ns) = time(&w.path) {
            let rate = w.messages as f64 / (ns / 1e9);
            show(
                format!("{} ({} msg/s)", w.path, fmt_rate(rate)),
                Some(rate / 20e6),
                Some((1.0, true)),
            );
        }
    }
    println!("\n-- LZ4 decode throughput / LZ4 decompression-alone throughput (target >= 0.80)");
    for w in reg
        .0
        .iter()
        .filter(|w| w.path.starts_with("decode_to_arrow/decode/lz4_"))
    {
        let param = w.path.rsplit('/').next().unwrap();
        show(
            format!("{param}: decode vs decompress only"),
            ratio(
                &format!("decode_to_arrow/lz4_decompress_only/{param}"),
                &w.path,
            ),
            Some((0.80, true)),
        );
        show(
            format!("{param}: floor (parse+CRC+decompress+one copy) vs decompress only"),
            ratio(
                &format!("decode_to_arrow/lz4_decompress_only/{param}"),
                &format!("decode_to_arrow/lz4_floor/{param}"),
            ),
            None,
        );
        show(
            format!("{param}: decode vs parse+CRC+decompress"),
            ratio(
                &format!("decode_to_arrow/lz4_parse_decompress/{param}"),
                &w.path,
            ),
            None,
        );
    }
}

// ---------------------------------------------------------------------------
// Instruction-count mode (for callgrind on a busy machine)
// ---------------------------------------------------------------------------

/// The loop callgrind collects (`--toggle-collect='*measured*'`).
#[inline(never)]
fn measured(n: usize, f: &mut dyn FnMut() -> usize) -> usize {
    let mut total = 0;
    for _ in 0..n {
        total += f();
    }
    total
}

/// `CODEC_BENCH_COUNT=<op>:<n>`: runs one operation `n` times and exits, so
/// that `valgrind --tool=callgrind --toggle-collect='*measured*'` gives its
/// exact instruction count per call, whatever else the machine is doing.
/// Ops: `mm_{prost,view}_{typical,rich}`, `smm_{prost,view}_{plain,keyed}`,
/// `split_{plain,keyed}_b{10,100,1000}`, `decode_<codec>_b<n>`,
/// `lz4_decompress_only_b<n>` and `lz4_parse_decompress_b<n>` (the
/// `decode_to_arrow` cases).
fn count_mode(spec: &str) {
    let (op, n) = spec.split_once(':').expect("CODEC_BENCH_COUNT=<op>:<n>");
    let n: usize = n.parse().expect("iteration count");
    let mut rng = StdRng::seed_from_u64(SEED);
    let total = if let Some(rest) = op.strip_prefix("mm_") {
        let md = if rest.ends_with("typical") {
            let e = entry(&mut rng, Codec::Lz4, 100, 1000, true, true);
            let v = EntryView::parse(&e, true).unwrap();
            e[v.metadata_offset..v.payload_offset].to_vec()
        } else {
            rich_metadata()
        };
        if rest.starts_with("prost") {
            measured(n, &mut || {
                proto::MessageMetadata::decode(black_box(&md[..]))
                    .unwrap()
                    .producer_name
                    .len()
            })
        } else {
            measured(n, &mut || {
                MessageMetadataView::parse(black_box(&md[..]), 0)
                    .unwrap()
                    .producer_name
                    .len()
            })
        }
    } else if let Some(rest) = op.strip_prefix("smm_") {
        let (plain, keyed) = single_metadatas();
        let smm = if rest.ends_with("plain") {
            plain
        } else {
            keyed
        };
        if rest.starts_with("prost") {
            measured(n, &mut || {
                proto::SingleMessageMetadata::decode(black_box(&smm[..]))
                    .unwrap()
                    .payload_size as usize
            })
        } else {
            measured(n, &mut || {
                SingleMessageMetadataView::parse(black_box(&smm[..]), 0)
                    .unwrap()
                    .payload_size as usize
            })
        }
    } else if let Some(rest) = op.strip_prefix("split_") {
        let (kind, size) = rest.split_once("_b").expect("split_<plain|keyed>_b<n>");
        let e = entry(
            &mut rng,
            Codec::None,
            size.parse().unwrap(),
            100,
            kind == "keyed",
            true,
        );
        let v = EntryView::parse(&e, true).unwrap();
        let mut out: Vec<BatchRecord<'_>> = Vec::new();
        measured(n, &mut || {
            out.clear();
            split_batch(black_box(v.payload), &v.metadata, &mut out).unwrap();
            out.len()
        })
    } else {
        let (kind, name) = if let Some(name) = op.strip_prefix("lz4_decompress_only_") {
            ("decompress", format!("lz4_{name}"))
        } else if let Some(name) = op.strip_prefix("lz4_parse_decompress_") {
            ("parse_decompress", format!("lz4_{name}"))
        } else {
            (
                "decode",
                op.strip_prefix("decode_").expect("unknown op").to_string(),
            )
        };
        let case = decode_cases_matching(Some(&name))
            .pop()
            .expect("unknown decode case");
        let mut d = Decompressor::default();
        if kind == "decode" {
            measured(n, &mut || {
                decode_record_batch(black_box(&case.input), DecodeOptions::default())
                    .unwrap()
                    .len()
            })
        } else if kind == "parse_decompress" {
            let data = entry_data(&case.input);
            measured(n, &mut || {
                let mut total = 0;
                parse_decompress_lz4(&mut d, &data, |bytes| total += bytes.len());
                total
            })
        } else {
            measured(n, &mut || {
                let mut total = 0;
                for p in &case.payloads {
                    total += d
                        .decompress(
                            p.codec,
                            black_box(&p.compressed),
                            p.size,
                            DEFAULT_MAX_UNCOMPRESSED_SIZE,
                            0,
                        )
                        .unwrap()
                        .len();
                }
                total
            })
        }
    };
    println!("{op} x{n} done ({total})");
}

fn main() {
    if let Ok(spec) = std::env::var("CODEC_BENCH_COUNT") {
        count_mode(&spec);
        return;
    }
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args();
    let mut reg = Registry::default();
    bench_metadata_parse(&mut c, &mut reg);
    bench_decompress(&mut c, &mut reg);
    bench_batch_split(&mut c, &mut reg);
    bench_decode_to_arrow(&mut c, &mut reg);
    c.final_summary();
    // `cargo test --benches` runs this binary in test mode: nothing measured.
    if !std::env::args().any(|a| a == "--test" || a == "--list") {
        summary(&reg);
    }
}
