//! The summary table of throughputs and ratios printed after criterion's output.

use super::registry::*;

pub(crate) fn fmt_rate(x: f64) -> String {
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

pub(crate) fn summary(reg: &Registry) {
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
