//! Snappy compression throughput: our Pulsar-compatible encoder
//! (`pulsar_entries_core::format::snappy`, aircompressor's algorithm) against the
//! `snap` crate's raw encoder (Google's current algorithm), same inputs, same
//! run. Run from the repo root:
//!
//!     cargo bench -p pulsar-entries-core --bench snappy
//!
//! Inputs (fixed seed): JSON-like records (compressible about 2x), random
//! bytes (incompressible), and a batch-sized 4 KiB JSON payload. Both encoders
//! allocate their output per call. After criterion's output a summary prints
//! MB/s and the ours / snap ratio (medians from criterion's estimates.json)
//! plus each encoder's compressed size.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use pulsar_entries_core::format::snappy;

fn json_like(len: usize, rng: &mut StdRng) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 200);
    while out.len() < len {
        let line = format!(
            "{{\"id\":{},\"user\":\"user-{}\",\"ts\":{},\"score\":{:.3},\"tags\":[\"t{}\",\"t{}\"]}}\n",
            rng.random_range(0..1_000_000_000u64),
            rng.random_range(0..5000u32),
            1_700_000_000_000u64 + rng.random_range(0..100_000_000u64),
            rng.random::<f64>() * 100.0,
            rng.random_range(0..20u32),
            rng.random_range(0..20u32),
        );
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(len);
    out
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = StdRng::seed_from_u64(7);
    let json_4k = json_like(4096, &mut rng);
    let json_1m = json_like(1 << 20, &mut rng);
    let mut random = vec![0u8; 1 << 20];
    rng.fill(&mut random[..]);
    vec![
        ("json_4KiB", json_4k),
        ("json_1MiB", json_1m),
        ("random_1MiB", random),
    ]
}

fn criterion_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(p).join("criterion");
    }
    // <target>/<profile>/deps/snappy-<hash>
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|t| t.join("criterion")))
        .unwrap_or_else(|| "target/criterion".into())
}

fn median_ns(group: &str, id: &str) -> Option<f64> {
    let file = criterion_dir()
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn main() {
    let mut c = Criterion::default().sample_size(30).configure_from_args();
    let inputs = inputs();
    let mut group = c.benchmark_group("snappy_compress");
    for (name, data) in &inputs {
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_with_input(BenchmarkId::new("ours", name), data, |b, d| {
            b.iter(|| snappy::compress(black_box(d)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("snap", name), data, |b, d| {
            let mut enc = snap::raw::Encoder::new();
            b.iter(|| enc.compress_vec(black_box(d)).unwrap())
        });
    }
    group.finish();
    c.final_summary();

    println!("\n==== snappy compress summary (median) ====");
    println!(
        "{:<12} {:>11} {:>11} {:>11} {:>12} {:>12}",
        "input", "ours MB/s", "snap MB/s", "ours/snap", "ours bytes", "snap bytes"
    );
    for (name, data) in &inputs {
        let rate = |who: &str| {
            median_ns("snappy_compress", &format!("{who}/{name}"))
                .map(|ns| data.len() as f64 / ns * 1e3)
        };
        let ours_len = snappy::compress(data).unwrap().len();
        let snap_len = snap::raw::Encoder::new().compress_vec(data).unwrap().len();
        match (rate("ours"), rate("snap")) {
            (Some(o), Some(s)) => println!(
                "{name:<12} {o:>11.0} {s:>11.0} {:>11.2} {ours_len:>12} {snap_len:>12}",
                o / s
            ),
            _ => println!(
                "{name:<12} (no estimates found under {:?})",
                criterion_dir()
            ),
        }
    }
}
