//! Seek cost against topic size (criterion). Run from the repo root:
//!
//!     cargo bench -p pulsar-entries-core --bench seek
//!
//! Topics of 1k to 1M broker-stamped entries (one message each, broker clock
//! +1 ms per entry). For each size: `find_position_by_time` and
//! `find_position_by_offset` (binary searches over the `0e 02` prefix and,
//! without a broker timestamp, the metadata), against a linear scan of the
//! same predicate as the baseline. The summary prints time per seek, entries
//! read and the speed-up; entries read grow with log2(n).

use std::hint::black_box;
use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use criterion::{BenchmarkId, Criterion};

use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::seek::{
    entry_timestamp, find_position_by_offset, find_position_by_time, EntryTable,
};
use pulsar_entries_core::{encode_entry, EncodeOptions, MessageInput};

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
const START: u64 = 1_700_000_000_000;

fn topic(n: usize) -> EntryTable {
    let entry = encode_entry(
        &[MessageInput {
            value: Some(b"{\"event\":\"click\",\"user\":42}".to_vec()),
            ..Default::default()
        }],
        &EncodeOptions {
            publish_time: START,
            ..Default::default()
        },
    )
    .unwrap();
    let mut stamper = Stamper::new(-1, Interceptors::default()).unwrap();
    let data: Vec<Vec<u8>> = (0..n)
        .map(|i| stamper.stamp(&entry, START + i as u64).unwrap())
        .collect();
    let batch = RecordBatch::try_from_iter(vec![
        (
            "ledger_id",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i / 50_000) as i64),
            )) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i % 50_000) as i64),
            )) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter_values(
                data.iter().map(Vec::as_slice),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    EntryTable::new(&[batch]).unwrap()
}

/// The baseline: scan every entry for the newest one before `t`.
fn linear_by_time(t: &EntryTable, time: i64) -> usize {
    let mut newest = None;
    for row in 0..t.len() {
        if t.data(row)
            .and_then(|d| entry_timestamp(d).ok())
            .is_some_and(|ts| (ts as i64) < time)
        {
            newest = Some(row);
        }
    }
    newest.map_or(0, |r| r + 1)
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
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .without_plots()
        .configure_from_args();
    let mut reads = Vec::new();
    {
        let mut g = c.benchmark_group("seek");
        for n in SIZES {
            let t = topic(n);
            let time = (START + (n as u64 * 3 / 5)) as i64;
            let by_time = find_position_by_time(&t, time).unwrap();
            assert_eq!(by_time.row, linear_by_time(&t, time));
            let by_offset = find_position_by_offset(&t, (n * 3 / 5) as i64).unwrap();
            assert_eq!((by_offset.row, by_offset.batch_index), (n * 3 / 5, Some(0)));
            reads.push((n, by_time.entries_read, by_offset.entries_read));
            g.bench_with_input(BenchmarkId::new("by_time", n), &t, |b, t| {
                b.iter(|| black_box(find_position_by_time(t, time).unwrap()))
            });
            g.bench_with_input(BenchmarkId::new("by_offset", n), &t, |b, t| {
                b.iter(|| black_box(find_position_by_offset(t, (n * 3 / 5) as i64).unwrap()))
            });
            if n <= 100_000 {
                g.bench_with_input(BenchmarkId::new("linear_scan", n), &t, |b, t| {
                    b.iter(|| black_box(linear_by_time(t, time)))
                });
            }
        }
        g.finish();
    }
    c.final_summary();
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    println!("\nSeek cost vs topic size (medians; linear scan = baseline, up to 100k entries)");
    println!(
        "{:>9} {:>12} {:>10} {:>14} {:>10} {:>16} {:>10}",
        "entries", "by time", "read", "by offset", "read", "linear scan", "speed-up"
    );
    for (n, rt, ro) in reads {
        let bt = median_ns(&format!("seek/by_time/{n}")).unwrap_or(f64::NAN);
        let bo = median_ns(&format!("seek/by_offset/{n}")).unwrap_or(f64::NAN);
        let lin = median_ns(&format!("seek/linear_scan/{n}"));
        println!(
            "{:>9} {:>10.2}us {:>10} {:>12.2}us {:>10} {:>16} {:>10}",
            n,
            bt / 1e3,
            rt,
            bo / 1e3,
            ro,
            lin.map_or("-".into(), |l| format!("{:.1}us", l / 1e3)),
            lin.map_or("-".into(), |l| format!("{:.0}x", l / bt)),
        );
    }
}
