"""Compaction benchmarks from Python: throughput, growth with input size and
peak memory of the in-process compactor, the same on Spark, and the cost of
`last_message_position` (fast path vs scan, 1 KB vs 1 MB entries).

    python benches/bench_compaction.py                      # 1M, 4M, 16M in-process; last position
    python benches/bench_compaction.py --spark --spark-sizes 1,4
    python benches/bench_compaction.py --sizes 1 --no-last-position

Topics: batches of 1,000 messages (LZ4), keys drawn uniformly from 100,000,
3 % tombstones, ~90-byte JSON values; cached as Parquet under --dir. Each
measurement runs in a fresh process so that its peak RSS (ru_maxrss) is its
own. Figures are printed as Markdown rows for benches/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PER_ENTRY = 1_000
KEYS = 100_000


def corpus(path: Path, messages: int, seed: int = 7) -> Path:
    """Writes (once) a topic of `messages` messages to `path`."""
    if path.exists():
        return path
    import pulsar_entries as pe

    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("ledger_id", pa.int64()), ("entry_id", pa.int64()), ("data", pa.binary())])
    with pq.ParquetWriter(tmp, schema) as writer:
        entries = messages // PER_ENTRY
        for start in range(0, entries, 1_000):
            data = []
            for e in range(start, min(entries, start + 1_000)):
                msgs = []
                for _ in range(PER_ENTRY):
                    r = rng.getrandbits(48)
                    key = f"key-{r % KEYS}"
                    if r % 100 < 3:
                        msgs.append({"key": key, "value": None})
                    else:
                        msgs.append(
                            {
                                "key": key,
                                "value": b'{"user":%d,"amount":%d.%02d,"tags":["web","promo"],"seq":%d}'
                                % (r % 997, (r >> 20) % 500, (r >> 30) % 100, e),
                            }
                        )
                data.append(pe.encode_entry(msgs, compression="lz4", publish_time=1_700_000_000_000 + e))
            n = len(data)
            writer.write_table(
                pa.table(
                    {
                        "ledger_id": pa.array([1] * n, pa.int64()),
                        "entry_id": pa.array(range(start, start + n), pa.int64()),
                        "data": pa.array(data, pa.binary()),
                    },
                    schema=schema,
                )
            )
    tmp.rename(path)
    return path


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------ children


def child_table(path: str) -> dict:
    """Whole topic in memory, then compact."""
    import pulsar_entries as pe

    table = pq.read_table(path)
    input_mb = table.nbytes / 2**20
    started = time.perf_counter()
    c = pe.Compactor()
    c.observe(table)
    out = c.write(table)
    took = time.perf_counter() - started
    s = c.stats()
    return {
        "seconds": took,
        "messages": s["messages_read"],
        "keys": s["keys"],
        "out_entries": out.num_rows,
        "input_mb": input_mb,
        "peak_rss_mb": peak_rss_mb(),
    }


def child_stream(path: str) -> dict:
    """Two passes over the Parquet file, batch by batch (the CLI's `compact`)."""
    import pulsar_entries as pe

    started = time.perf_counter()
    c = pe.Compactor()
    # pre_buffer=False: otherwise pyarrow keeps every row group it has read.
    for b in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=1_000):
        c.observe(b)
    written = 0
    for b in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=1_000):
        written += c.write(b).num_rows
    took = time.perf_counter() - started
    s = c.stats()
    return {
        "seconds": took,
        "messages": s["messages_read"],
        "keys": s["keys"],
        "out_entries": written,
        "peak_rss_mb": peak_rss_mb(),
    }


def child_spark(path: str) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from pulsar_entries import spark as pes

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-compaction")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "256")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    df = spark.read.parquet(path)
    df.count()  # warm up the session and the file listing
    started = time.perf_counter()
    out = pes.compact(df)
    rows = out.count()
    took = time.perf_counter() - started
    spark.stop()
    return {"seconds": took, "out_entries": rows, "peak_rss_mb": peak_rss_mb()}


def run_child(kind: str, path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {path} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ last position


def bench_last_position() -> list[str]:
    import timeit

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
    import entrygen

    import pulsar_entries as pe

    rows = []
    rng = random.Random(1)
    for label, size in (("~1 KB", 200), ("~1 MB", 200_000)):
        # Incompressible values, so the stored entry really is that large.
        slots = [None if i % 2 else (f"k{i}", rng.randbytes(size)) for i in range(10)]
        results = {}
        for mode, indexes in (("fast path (field 31)", True), ("scan (no field 31)", False)):
            entry = entrygen.legacy_compacted_batch(slots, codec="zstd", indexes=indexes)
            table = pe.entries_table([entry])
            expected = pe.last_message_position(table)
            assert expected.batch_index == 8
            n = 2_000 if size < 1_000 or indexes else 200
            t = min(timeit.repeat(lambda: pe.last_message_position(table), number=n, repeat=5)) / n
            results[mode] = t
            rows.append(f"| {label} ({len(entry):,} B stored) | {mode} | {t * 1e6:,.1f} µs |")
    return rows


# ------------------------------------------------------------------ main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,4,16", help="millions of messages, in-process (default 1,4,16)")
    p.add_argument("--spark", action="store_true", help="also run pulsar_entries.spark.compact on local[2]")
    p.add_argument("--spark-sizes", default="1,4", help="millions of messages on Spark (default 1,4)")
    p.add_argument("--no-last-position", action="store_true")
    p.add_argument("--dir", default="/tmp/pulsar-entries-bench", help="corpus cache directory")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        kind, path = args.child
        print(json.dumps({"table": child_table, "stream": child_stream, "spark": child_spark}[kind](path)))
        return

    base = Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print()
    print("| messages | mode | time | messages/s | ns/message | peak RSS | output entries |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    spark_sizes = [int(s) for s in args.spark_sizes.split(",") if s] if args.spark else []
    for millions in sorted(set(sizes) | set(spark_sizes)):
        path = corpus(base / f"topic-{millions}M.parquet", millions * 1_000_000)
        kinds = (["table", "stream"] if millions in sizes else []) + (["spark"] if millions in spark_sizes else [])
        for kind in kinds:
            r = run_child(kind, path)
            m = millions * 1_000_000
            label = {
                "table": "in-process, table in memory",
                "stream": "in-process, 2 passes over Parquet",
                "spark": "Spark local[2]",
            }[kind]
            print(
                f"| {millions}M | {label} | {r['seconds']:.2f} s | {m / r['seconds']:,.0f} | "
                f"{r['seconds'] / m * 1e9:,.0f} | {r['peak_rss_mb']:,.0f} MB | {r['out_entries']:,} |",
                flush=True,
            )
    if not args.no_last_position:
        print()
        print("| compacted entry | path | time per call |")
        print("|---|---|---:|")
        for row in bench_last_position():
            print(row)


if __name__ == "__main__":
    main()
