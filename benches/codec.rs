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
//! The binary's modules (`benches/codec/`): `corpus` (the seeded entries),
//! `registry` (what each benchmark processes, criterion's estimates read
//! back), `groups` (the four criterion groups), `summary` (the table printed
//! at the end) and `count` (the instruction-count mode). One binary over one
//! corpus: the summary reads every group's estimates to print the ratios.

#[path = "codec/corpus.rs"]
mod corpus;
#[path = "codec/count.rs"]
mod count;
#[path = "codec/groups.rs"]
mod groups;
#[path = "codec/registry.rs"]
mod registry;
#[path = "codec/summary.rs"]
mod summary;

use std::time::Duration;

use criterion::Criterion;

use count::count_mode;
use groups::{bench_batch_split, bench_decode_to_arrow, bench_decompress, bench_metadata_parse};
use registry::Registry;
use summary::summary;

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
