//! The criterion groups: metadata_parse, decompress, batch_split, decode_to_arrow.

use std::hint::black_box;

use arrow_array::{BinaryArray, RecordBatch};
use criterion::{Criterion, Throughput};
use flate2::{Decompress, FlushDecompress};
use prost::Message as _;
use rand::rngs::StdRng;
use rand::SeedableRng;

use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::format::batch::{split_batch, BatchRecord};
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::format::metadata::{MessageMetadataView, SingleMessageMetadataView};
use pulsar_entries_core::{proto, Codec, DecodeOptions, EntryView, DEFAULT_MAX_UNCOMPRESSED_SIZE};

use super::corpus::*;
use super::registry::*;

pub(crate) fn rich_metadata() -> Vec<u8> {
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
pub(crate) fn single_metadatas() -> (Vec<u8>, Vec<u8>) {
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

pub(crate) fn bench_metadata_parse(c: &mut Criterion, reg: &mut Registry) {
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

pub(crate) fn raw_decompress(p: &Payload) -> usize {
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

pub(crate) fn bench_decompress(c: &mut Criterion, reg: &mut Registry) {
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

pub(crate) fn bench_batch_split(c: &mut Criterion, reg: &mut Registry) {
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

pub(crate) struct DecodeCase {
    pub(crate) name: String,
    pub(crate) codec: Codec,
    pub(crate) input: RecordBatch,
    pub(crate) payloads: Vec<Payload>,
    pub(crate) messages: u64,
    pub(crate) bytes: u64,
}

pub(crate) fn decode_cases() -> Vec<DecodeCase> {
    decode_cases_matching(None)
}

/// The decode corpus; with `only`, just that case (each case has its own seed).
pub(crate) fn decode_cases_matching(only: Option<&str>) -> Vec<DecodeCase> {
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
pub(crate) fn entry_data(input: &RecordBatch) -> BinaryArray {
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
pub(crate) fn parse_decompress_lz4(
    d: &mut Decompressor,
    data: &BinaryArray,
    mut each: impl FnMut(&[u8]),
) {
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

pub(crate) fn bench_decode_to_arrow(c: &mut Criterion, reg: &mut Registry) {
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
