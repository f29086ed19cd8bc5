"""Spark benchmarks: decode overhead against an identity mapInArrow, and scaling.

    .venv/bin/python benches/bench_spark.py [--base-entries 2000] [--scales 1,4,16] [--repeat 3]
                                            [--java-options '-D...']

1. Scaling and memory, run first so that the Python workers carry nothing over
   from part 2's larger partitions: entry files of 1x, 4x, 16x (...) the
   sample, one Parquet file per copy of the topic read back with ``spark.read.parquet``
   (a file per partition, nothing cached). Decode and compact times are fitted
   to ``fixed + per_entry * entries``; linear growth shows as small residuals.
   Peak executor memory during decode comes from Spark's own executor metrics
   (``spark.executor.processTreeMetrics.enabled``, polled every 50 ms, read
   per stage from the status REST API): the Python workers' RSS and the JVM
   heap. Part 2 adds the same figures for its 4 cached partitions,
   whose size grows with the scale.

2. Overhead: on the same cached entries and session, ``pulsar_entries.spark.decode``
   versus an identity ``mapInArrow`` that passes the entries through unchanged.
   Both end in Spark's ``noop`` sink, so every row is produced but nothing is
   written. Target: decode costs at most 1.5x the identity pass.

   A third pass bounds what any decoder can reach: each task drains its input
   and yields decode's output for that partition, precomputed and
   memory-mapped from a local Arrow file, so it does no decoding at all and
   only hands the rows back to the JVM. A fourth keeps 7 columns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import urllib.request

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

NOOP = {"format": "noop", "mode": "overwrite"}


def scaled_entries(base: pa.Table, k: int) -> list[pa.Table]:
    """k copies of the sample topic, each copy on its own ledgers."""
    return [
        base.set_column(0, "ledger_id", pa.compute.add(base.column("ledger_id"), pa.scalar(i * 100_000, pa.int64())))
        for i in range(k)
    ]


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares ``y = a + b x``; returns a, b and the largest residual relative to y."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    return a, b, max(abs(y - (a + b * x)) / y for x, y in zip(xs, ys))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-entries", type=int, default=2000)
    ap.add_argument("--scales", default="1,4,16")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--java-options", default="", help="extra JVM options for the driver (local mode: the executor)")
    args = ap.parse_args()
    scales = [int(s) for s in args.scales.split(",")]

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import TaskContext
    from pyspark.sql import SparkSession

    import pulsar_entries.spark as ps
    from pulsar_entries._sample import generate_topic
    from pulsar_entries.spark._arrow import spark_arrow_schema

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.ui.showConsoleProgress", "false")
        # Executor metrics for the memory figures, read back per stage.
        .config("spark.executor.processTreeMetrics.enabled", "true")
        .config("spark.executor.metrics.pollingInterval", "50ms")
        # One partition per entry file in the scaling part.
        .config("spark.sql.files.maxPartitionBytes", str(8 << 20))
        .config("spark.sql.files.openCostInBytes", str(8 << 20))
    )
    if args.java_options:
        builder = builder.config("spark.driver.extraJavaOptions", args.java_options)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    base = generate_topic(args.base_entries, seed=7, corrupt=0, markers=0).entries
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Spark {spark.version}, "
        f"local[2], driver memory {args.driver_memory}, JVM options {args.java_options or '(none)'}"
    )
    work = tempfile.mkdtemp(prefix="bench-spark-")

    def run(action, group: str) -> float:
        sc.setJobGroup(group, group)
        t = time.perf_counter()
        action()
        elapsed = time.perf_counter() - t
        sc.setJobGroup("bench", "bench")
        return elapsed

    def timed(action, group: str, repeat: int) -> float:
        return min(run(action, group) for _ in range(repeat))

    def peak_memory(group: str) -> tuple[float, float]:
        """Peak Python-worker RSS and JVM heap (MiB) over the stages of a job group's jobs."""
        tracker = sc.statusTracker()
        python = heap = 0
        for job in tracker.getJobIdsForGroup(group):
            for stage in tracker.getJobInfo(job).stageIds:
                url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages/{stage}"
                for attempt in json.load(urllib.request.urlopen(url)):
                    metrics = attempt.get("peakExecutorMetrics") or {}
                    python = max(python, metrics.get("ProcessTreePythonRSSMemory", 0))
                    heap = max(heap, metrics.get("JVMHeapMemory", 0))
        return python / 2**20, heap / 2**20

    def identity(batches):
        yield from batches

    def dump(batches):
        # Decode's output for this partition, in Spark's Arrow types, to a local file.
        from pulsar_entries import _native as native

        path = os.path.join(work, f"out-{TaskContext.get().partitionId()}.arrow")
        rows = 0
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, spark_arrow_schema(schema_arrow, False)) as w:
            for batch in batches:
                for part in ps.slices(batch):
                    for out in native.decode(part).to_batches():
                        w.write_batch(ps.conform(out, False))
                        rows += out.num_rows
        yield pa.record_batch({"rows": pa.array([rows], pa.int64())})

    def precomputed(batches):
        for _ in batches:
            pass
        reader = pa.ipc.open_file(pa.memory_map(os.path.join(work, f"out-{TaskContext.get().partitionId()}.arrow")))
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)

    from pulsar_entries import _native

    schema_arrow = _native.decode(
        pa.table(
            {
                "ledger_id": pa.array([], pa.int64()),
                "entry_id": pa.array([], pa.int64()),
                "data": pa.array([], pa.binary()),
            }
        )
    ).schema
    schema = ps.message_schema()
    projection = ["ledger_id", "entry_id", "batch_index", "key", "value", "publish_time", "error"]

    # Warm-up (JIT, Python workers, code generation) before anything is timed.
    warm = spark.createDataFrame(base).repartition(args.partitions)
    warm.mapInArrow(identity, warm.schema).write.save(**NOOP)
    ps.decode(warm).write.save(**NOOP)
    ps.compact(warm).write.save(**NOOP)

    print("\n1. Scaling: one Parquet file per copy of the topic, a partition per file, nothing cached")
    print("scale  entries  partitions  decode s  µs/entry  compact s  µs/entry  peak Python RSS  peak JVM heap")
    rows = []
    for k in scales:
        folder = os.path.join(work, f"x{k}")
        os.makedirs(folder)
        for i, t in enumerate(scaled_entries(base, k)):
            pq.write_table(t, os.path.join(folder, f"part-{i:04d}.parquet"))
        df = spark.read.parquet(folder)
        n = df.count()
        parts = df.rdd.getNumPartitions()
        t_dec = timed(lambda: ps.decode(df).write.save(**NOOP), f"scale-decode-{k}", args.repeat)
        t_cmp = timed(lambda: ps.compact(df).write.save(**NOOP), f"scale-compact-{k}", 1)
        py, heap = peak_memory(f"scale-decode-{k}")
        rows.append((k, n, t_dec, t_cmp, py, heap))
        print(
            f"{k:>5}  {n:>7,}  {parts:>10}  {t_dec:>8.2f}  {t_dec / n * 1e6:>8.1f}  {t_cmp:>9.2f}  "
            f"{t_cmp / n * 1e6:>8.1f}  {py:>11.0f} MiB  {heap:>9.0f} MiB",
            flush=True,
        )
        shutil.rmtree(folder)
    if len(rows) >= 2:
        ns = [r[1] for r in rows]
        for name, col in (("decode", 2), ("compact", 3)):
            a, b, worst = fit(ns, [r[col] for r in rows])
            print(
                f"{name}: fixed {a:.2f} s + {b * 1e6:.1f} µs per entry; largest residual {worst:.0%} of the measured time"
            )
        pys = [r[4] for r in rows]
        print(
            f"peak Python RSS {min(pys):.0f}-{max(pys):.0f} MiB (spread {max(pys) / min(pys):.2f}x); "
            f"peak JVM heap {min(r[5] for r in rows):.0f}-{max(r[5] for r in rows):.0f} MiB"
        )
    print("\n2. Overhead: cached entries in", args.partitions, "partitions, best of", args.repeat)
    print(
        "scale  entries   messages  input MB  identity s  decode s  decode/identity  "
        "precomputed output s  that/identity  decode 7 columns s  that/identity  peak Python RSS  peak JVM heap"
    )
    overhead = []
    for k in scales:
        table = pa.concat_tables(scaled_entries(base, k))
        df = spark.createDataFrame(table).repartition(args.partitions).cache()
        n = df.count()
        mb = table.column("data").nbytes / 1e6
        messages = sum(r["rows"] for r in df.mapInArrow(dump, "rows long").collect())
        t_id = timed(lambda: df.mapInArrow(identity, df.schema).write.save(**NOOP), f"identity-{k}", args.repeat)
        t_dec = timed(lambda: ps.decode(df).write.save(**NOOP), f"decode-{k}", args.repeat)
        t_pre = timed(lambda: df.mapInArrow(precomputed, schema).write.save(**NOOP), f"pre-{k}", args.repeat)
        t_proj = timed(lambda: ps.decode(df, columns=projection).write.save(**NOOP), f"proj-{k}", args.repeat)
        py, heap = peak_memory(f"decode-{k}")
        overhead.append((k, t_id, t_dec, t_pre))
        print(
            f"{k:>5}  {n:>7,}  {messages:>9,}  {mb:>8.1f}  {t_id:>10.2f}  {t_dec:>8.2f}  {t_dec / t_id:>15.2f}  "
            f"{t_pre:>20.2f}  {t_pre / t_id:>13.2f}  {t_proj:>18.2f}  {t_proj / t_id:>13.2f}  {py:>11.0f} MiB  "
            f"{heap:>9.0f} MiB",
            flush=True,
        )
        df.unpersist()
        for name in os.listdir(work):
            os.remove(os.path.join(work, name))
    print(
        "decode beyond the precomputed bound (the decoding itself), as a share of the identity pass: "
        + ", ".join(f"{k}x {(d - p) / i:.2f}" for k, i, d, p in overhead)
    )

    shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
