"""Spark benchmarks: decode overhead against an identity mapInArrow, and scaling.

    .venv/bin/python benches/bench_spark.py [--base-entries 2000] [--scales 1,4,16] [--repeat 3]

1. Overhead: on the same entries and session, ``pulsar_entries.spark.decode``
   versus an identity ``mapInArrow`` that passes entries through unchanged.
   Both end in Spark's ``noop`` sink, so every row is produced but nothing is
   written. Target: decode costs at most 1.5x the identity pass. Two more
   columns say where the rest goes: the same identity pass over decode's own
   output (precomputed and cached), and decode keeping 7 columns.
2. Scaling: decode and compact at 1x, 4x and 16x the sample size. Time per
   entry should stay flat, so cost grows linearly. The Python workers' peak
   RSS while decoding (``ru_maxrss`` of a worker that decodes its partition
   slice by slice, as ``spark.decode`` does) must not grow with the input,
   because a task holds one Arrow batch and one slice's output at a time.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))


def scaled_entries(base: pa.Table, k: int) -> pa.Table:
    """k copies of the sample topic, each copy on its own ledgers."""
    parts = []
    for i in range(k):
        ledgers = pa.compute.add(base.column("ledger_id"), pa.scalar(i * 100_000, pa.int64()))
        parts.append(base.set_column(0, "ledger_id", ledgers))
    return pa.concat_tables(parts)


def timed(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        action()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-entries", type=int, default=2000)
    ap.add_argument("--scales", default="1,4,16")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import pulsar_entries.spark as ps
    from pulsar_entries.sample import generate_topic

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    base = generate_topic(args.base_entries, seed=7, corrupt=0, markers=0).entries
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Spark {spark.version}, local[2]")

    def frame(table: pa.Table):
        return spark.createDataFrame(table).repartition(args.partitions).cache()

    def identity(batches):
        yield from batches

    def worker_peak(batches):
        # Decode slice by slice, exactly as spark.decode does, then report this worker's peak RSS.
        for batch in batches:
            for part in ps.slices(batch):
                ps._native.decode(part)
        yield pa.record_batch({"rss_kib": pa.array([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss], pa.int64())})

    print("\nscale  entries   messages   MB     identity s  decode s  decode/identity  decode entries/s  µs/entry  "
          "compact s  compact µs/entry  peak worker RSS")
    rows = []
    extra = []
    for k in [int(s) for s in args.scales.split(",")]:
        table = scaled_entries(base, k)
        df = frame(table)
        n = df.count()  # materialise the cache before timing
        mb = sum(len(x) for x in table.column("data").to_pylist()) / 1e6
        t_id = timed(lambda: df.mapInArrow(identity, df.schema).write.format("noop").mode("overwrite").save(), args.repeat)
        t_dec = timed(lambda: ps.decode(df).write.format("noop").mode("overwrite").save(), args.repeat)
        # What decode costs beyond moving its output: its output, precomputed,
        # passed through Spark the same way; and decode keeping a typical
        # analytics projection (Spark cannot prune a mapInArrow's output).
        decoded = ps.decode(df).cache()
        decoded.count()
        t_out = timed(lambda: decoded.mapInArrow(identity, decoded.schema).write.format("noop").mode("overwrite").save(), args.repeat)
        decoded.unpersist()
        projection = ["ledger_id", "entry_id", "batch_index", "key", "value", "publish_time", "error"]
        t_proj = timed(lambda: ps.decode(df, columns=projection).write.format("noop").mode("overwrite").save(), args.repeat)
        t_cmp = timed(lambda: ps.compact(df).write.format("noop").mode("overwrite").save(), 1)
        messages = ps.decode(df).count()
        peaks = [r["rss_kib"] for r in df.mapInArrow(worker_peak, "rss_kib long").collect()]
        peak = max(peaks) / 1024
        rows.append((k, n, t_dec / n * 1e6, peak, t_cmp / n * 1e6, t_dec, t_cmp))
        extra.append((k, t_id, t_dec, t_out, t_proj))
        print(
            f"{k:>5}  {n:>7,}  {messages:>9,}  {mb:>6.1f}  {t_id:>10.2f}  {t_dec:>8.2f}  {t_dec / t_id:>15.2f}  "
            f"{n / t_dec:>16,.0f}  {t_dec / n * 1e6:>8.1f}  {t_cmp:>9.2f}  {t_cmp / n * 1e6:>16.1f}  {peak:>10.0f} MiB"
        )
        df.unpersist()
    print("\nscale  decode s  identity on entries s  identity on decode's output s  decode/identity  "
          "decode/(identity on its output)  decode with 7 columns s  that / identity")
    for k, t_id, t_dec, t_out, t_proj in extra:
        print(f"{k:>5}  {t_dec:>8.2f}  {t_id:>21.2f}  {t_out:>30.2f}  {t_dec / t_id:>15.2f}  {t_dec / t_out:>31.2f}  "
              f"{t_proj:>22.2f}  {t_proj / t_id:>15.2f}")
    # A job has a fixed cost (scheduling, shuffles, worker start) that dominates
    # small inputs; linear growth shows as a constant marginal cost per entry.
    print("\nmarginal cost between scales (µs per added entry):")
    for a, b in zip(rows, rows[1:]):
        dn = b[1] - a[1]
        print(f"  {a[0]}x -> {b[0]}x: decode {(b[5] - a[5]) / dn * 1e6:.1f}, compact {(b[6] - a[6]) / dn * 1e6:.1f}")
    per_entry = [r[2] for r in rows]
    print(
        f"\nlinearity: µs/entry from {per_entry[0]:.1f} (1x) to {per_entry[-1]:.1f} ({rows[-1][0]}x); "
        f"spread {max(per_entry) / min(per_entry):.2f}x. Compact µs/entry from {rows[0][4]:.1f} to {rows[-1][4]:.1f}; "
        f"spread {max(r[4] for r in rows) / min(r[4] for r in rows):.2f}x. Peak worker RSS spread "
        f"{max(r[3] for r in rows) / min(r[3] for r in rows):.2f}x (median {statistics.median(r[3] for r in rows):.0f} MiB)."
    )
    spark.stop()


if __name__ == "__main__":
    main()
