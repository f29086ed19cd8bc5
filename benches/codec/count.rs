//! Instruction-count mode (for callgrind on a busy machine).

use std::hint::black_box;

use prost::Message as _;
use rand::rngs::StdRng;
use rand::SeedableRng;

use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::format::batch::{split_batch, BatchRecord};
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::format::metadata::{MessageMetadataView, SingleMessageMetadataView};
use pulsar_entries_core::{proto, Codec, DecodeOptions, EntryView, DEFAULT_MAX_UNCOMPRESSED_SIZE};

use super::corpus::*;
use super::groups::*;

/// The loop callgrind collects (`--toggle-collect='*measured*'`).
#[inline(never)]
pub(crate) fn measured(n: usize, f: &mut dyn FnMut() -> usize) -> usize {
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
pub(crate) fn count_mode(spec: &str) {
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
