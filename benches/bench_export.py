"""``export_topic`` (a topic kept as a Delta table) beside the work before the table write, on one
real topic, in one run (issue 25).

    . .venv/bin/activate && python benches/bench_export.py [--messages 1000000] [--rounds 3]

Starts one real Apache Pulsar 4.2.4 standalone (ZooKeeper metadata store, one bookie, all on
127.0.0.1), writes a topic with Pulsar's Java producer (``ReaderBench produce``: JSON-like values of
``--value-bytes``, batches of up to ``--batch`` messages, LZ4, ``--keys`` distinct keys) and unloads
it. Then, each round in a rotated order, every side in a fresh Python process (so its peak RSS is
its own):

* ``read_topic + decode``: ``iter_topic`` batch by batch, decoded (chunks reassembled): the work
  an export does before it writes;
* ``export append``: ``export_topic(mode="append")`` into a new Delta table;
* ``export upsert``: ``export_topic(mode="upsert")`` into a new Delta table (MERGE per commit);
* with ``--spark``, ``spark append`` and ``spark upsert``: ``pulsar_entries.spark.export_topic`` on
  an embedded ``local[2]`` session with Delta's jars (resolved by Maven), micro-batches of
  ``--spark-entries`` entries; timed from the call (the session's start is not counted);
  ``spark iceberg append`` and ``spark iceberg upsert`` the same into an Iceberg table (SQL catalog on
  SQLite), committed by the driver through pyiceberg.

Then the same for a topic 8x as large (``--messages`` x 8 with ``--big``) for the RSS: an export
streams, so its peak RSS must not grow with the topic.

Servers are stopped by PID at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_read_topic as brt
from bench_spark_topic import NS, produce

from pulsar_entries._standalone import Standalone

CHILD = r"""
import json, sys, time
import pulsar_entries as pe
from pulsar_entries.export import export_topic
side, topic, url, out = sys.argv[1:5]
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) * 1024
t = time.perf_counter()
rows = 0
if side == "decode":
    from pulsar_entries._cluster.read import entries_to_messages
    import pyarrow as pa
    for b in pe.iter_topic(topic, metadata_url=url):
        rows += entries_to_messages(pa.Table.from_batches([b])).num_rows
elif side.startswith("spark-"):
    import os
    from pyspark.sql import SparkSession
    from pulsar_entries.spark import DELTA_CONF, export_topic as spark_export
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").config(map=DELTA_CONF).config("spark.jars", sys.argv[5])
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    t = time.perf_counter()
    if side.startswith("spark-iceberg-"):
        table, mode, where = "iceberg:bench.pulsar.t", side[14:], {"warehouse": out}
    else:
        table, mode, where = "delta:" + out, side[6:], {}
    s = spark_export(spark, topic, table, mode=mode,
                     options={"metadataUrl": url, "maxEntriesPerTrigger": sys.argv[6]}, **where)
    rows = s.rows + s.deleted
else:
    s = export_topic(topic, "delta:" + out, metadata_url=url, mode=side)
    rows = s.rows + s.deleted
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows, "peak": hwm()}))
"""


def run(side: str, topic: str, url: str, out: Path, jars: str = "", spark_entries: int = 0) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, side, topic, url, str(out), jars, str(spark_entries)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{side} failed: {proc.stderr[-2000:]}")
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--value-bytes", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--big", action="store_true", help="also a topic 8x as large, for the peak RSS")
    ap.add_argument(
        "--spark", action="store_true", help="also the export on Spark (Delta and Iceberg), append and upsert"
    )
    ap.add_argument("--spark-entries", type=int, default=2_000, help="entries per micro-batch on Spark")
    ap.add_argument(
        "--sides",
        help="only these sides, comma-separated (decode, append, upsert, spark-append, spark-upsert, "
        "spark-iceberg-append, spark-iceberg-upsert)",
    )
    args = ap.parse_args()
    jars = ""
    if args.spark:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
        from support.delta_jars import delta_jars

        jars = ",".join(delta_jars())

    lib, classes = brt.build()
    workdir = Path(tempfile.mkdtemp(prefix="bench-export-"))
    sa = Standalone(lib, workdir / "pulsar", metadata="zookeeper", max_message_size=5 * 1024 * 1024)
    try:
        sa.start()
        url = f"zk:127.0.0.1:{sa.zookeeper_port}"
        sizes = [("1x", args.messages)] + ([("8x", 8 * args.messages)] if args.big else [])
        for label, messages in sizes:
            topic = NS + f"export-bench-{label}"
            t = time.perf_counter()
            produce(lib, classes, sa, topic, args, messages, workdir / "java.log", keys=args.keys)
            print(f"topic {label}: {messages:,} messages written in {time.perf_counter() - t:.0f} s", flush=True)
            spark_sides = ["spark-append", "spark-upsert", "spark-iceberg-append", "spark-iceberg-upsert"]
            sides = ["decode", "append", "upsert"] + (spark_sides if args.spark else [])
            if args.sides:
                sides = [s for s in sides if s in args.sides.split(",")]
            results: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
            rounds = args.rounds if label == "1x" else 1
            for r in range(rounds):
                for side in sides[r % len(sides) :] + sides[: r % len(sides)]:
                    got = run(side, topic, url, workdir / f"{label}-{side}-{r}", jars, args.spark_entries)
                    results[side].append(got)
                    print(
                        f"  round {r + 1}: {side}: {got['seconds']:.2f} s, {got['rows']:,} rows, "
                        f"peak RSS {got['peak'] >> 20} MiB",
                        flush=True,
                    )
            base = statistics.median(g["seconds"] for g in results["decode"]) if results.get("decode") else float("nan")
            print(
                f"\n| {label}: side | median s | messages/s | vs read+decode | peak RSS MiB |\n|---|---:|---:|---:|---:|"
            )
            for side in sides:
                m = statistics.median(g["seconds"] for g in results[side])
                peak = max(g["peak"] for g in results[side]) >> 20
                print(f"| {side} | {m:.2f} | {messages / m:,.0f} | {base / m:.2f}x | {peak} |")
            print(flush=True)
    finally:
        sa.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
