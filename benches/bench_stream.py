"""``spark.readStream.format("pulsar")`` against the batch source on the same topic, in one run
(catch-up, rows/s), then the end-to-end lag of a stream with a steady producer (issue 24).

    . .venv/bin/activate && python benches/bench_stream.py [--messages 1000000] [--rounds 3]

Starts one real Apache Pulsar 4.2.4 standalone (ZooKeeper metadata store, one bookie, all on
127.0.0.1), writes a topic with Pulsar's Java producer (``ReaderBench produce``, as
``bench_spark_topic.py``: JSON-like values, batches of up to ``--batch`` messages, LZ4) and unloads
it. Then, each round in a rotated order, on ``local[2]`` with the same ranges for both sides
(``entriesPerPartition`` = entries ÷ ``--partitions``), every column into Spark's ``noop`` sink:

* ``batch``: ``spark.read.format("pulsar")``;
* ``stream``: ``spark.readStream.format("pulsar")`` from ``earliest`` with ``Trigger.AvailableNow``
  (what a stream catching up on a topic does), timed from ``start()`` to the query's end.

``--txn-size N`` writes the topic in committed transactions of N messages: the stream then reads
committed (each range reads back for the transactions its commit markers end), the batch source
does not.

Lag: a pulsar-client producer sends ``--rate`` messages/s (batched) for ``--lag-seconds`` to a second
topic while a stream with a 1 s trigger writes each micro-batch as Parquet (``foreachBatch``); a row's
lag is the time its micro-batch's files were written minus its ``publish_time``. p50 and p99 over
every row, the first 5 s left out (the query's start).

Servers are stopped by PID at the end, also on failure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_read_topic as brt
from bench_spark_topic import NS, produce, session

import pulsar_entries as pe
from pulsar_entries._standalone import Standalone


def lag(spark: Any, sa: Standalone, url: str, workdir: Path, rate: int, seconds: float) -> list[float]:
    """Publish-to-visible lags (s) of a steady producer's messages through a 1 s-trigger stream."""
    import pulsar

    topic = NS + "stream-lag"
    client = pulsar.Client(sa.service_url)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=10)
    producer.send(b"first")  # the topic exists before the stream starts
    lags: list[float] = []
    started = time.time()

    def sink(df: Any, batch_id: int) -> None:
        import pyarrow.parquet as pq

        table = df.select("publish_time").toArrow()
        pq.write_table(table, str(workdir / f"lag-{batch_id:06d}.parquet"))
        visible = time.time()
        for t in table["publish_time"].to_pylist():
            if t is not None and t.timestamp() - started > 5:
                lags.append(visible - t.timestamp())

    query = (
        spark.readStream.format("pulsar")
        .option("metadataUrl", url)
        .option("topic", topic)
        .option("startingOffsets", "latest")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(workdir / "lag-ckpt"))
        .trigger(processingTime="1 second")
        .start()
    )
    stop = threading.Event()

    def send() -> None:
        i = 0
        t0 = time.monotonic()
        while not stop.is_set():
            producer.send_async(b"x" * 200, None)
            i += 1
            ahead = i / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    time.sleep(seconds)
    stop.set()
    sender.join()
    producer.flush()
    time.sleep(4)
    query.stop()
    producer.close()
    client.close()
    return lags


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--value-bytes", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--entries-per-ledger", type=int, default=400)
    ap.add_argument("--partitions", type=int, default=4, help="ranges (Spark partitions) of both sides")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rate", type=int, default=2000, help="messages/s of the lag run's producer")
    ap.add_argument("--lag-seconds", type=float, default=40, help="0: no lag run")
    ap.add_argument(
        "--txn-size", type=int, default=0, help="write the topic in committed transactions of this many messages"
    )
    args = ap.parse_args()

    lib, classes = brt.build()
    workdir = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    sa = Standalone(
        lib,
        workdir / "pulsar",
        metadata="zookeeper",
        max_entries_per_ledger=args.entries_per_ledger,
        max_message_size=5 * 1024 * 1024,
    )
    spark: Any = None
    try:
        sa.start()
        url = f"zk:127.0.0.1:{sa.zookeeper_port}"
        topic = NS + "stream-bench"
        t = time.perf_counter()
        produced = produce(lib, classes, sa, topic, args, args.messages, workdir / "java.log", txn_size=args.txn_size)
        print(f"produced in {time.perf_counter() - t:.1f} s", flush=True)
        n_entries = pe.read_topic(topic, metadata_url=url).num_rows
        per = -(-n_entries // args.partitions)
        print(f"topic: {produced['messages']:,} messages, {n_entries:,} entries; ranges of {per:,} entries", flush=True)
        spark = session("local[2]")

        def batch() -> tuple[float, int]:
            # Timed from load(), which resolves the layout, as a stream's start does.
            t = time.perf_counter()
            df = (
                spark.read.format("pulsar")
                .option("metadataUrl", url)
                .option("topic", topic)
                .option("entriesPerPartition", str(per))
                .load()
            )
            df.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t, produced["messages"]

        runs = [0]

        def stream() -> tuple[float, int]:
            runs[0] += 1
            t = time.perf_counter()
            query = (
                spark.readStream.format("pulsar")
                .option("metadataUrl", url)
                .option("topic", topic)
                .option("entriesPerPartition", str(per))
                .load()
                .writeStream.format("noop")
                .option("checkpointLocation", str(workdir / f"ckpt-{runs[0]}"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            seconds = time.perf_counter() - t
            for p in query.recentProgress:
                if p["numInputRows"]:
                    d = p["durationMs"]
                    print(
                        f"   micro-batch {p['batchId']}: {p['numInputRows']:,} rows, "
                        + ", ".join(f"{k} {v} ms" for k, v in sorted(d.items())),
                        flush=True,
                    )
                    micro.append(d["triggerExecution"] / 1000)
            return seconds, sum(p["numInputRows"] for p in query.recentProgress)

        micro: list[float] = []

        sides = {"batch: spark.read.format(pulsar)": batch, "stream: readStream, AvailableNow": stream}
        times: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                seconds, rows = sides[name]()
                assert rows == produced["messages"], (name, rows)
                times[name].append(seconds)
                print(f"round {r + 1}: {name}: {seconds:.2f} s", flush=True)
        base = statistics.median(times[names[0]])
        times["stream: its micro-batch alone (triggerExecution)"] = micro
        print("\n| side | median s | rows/s | vs batch |\n|---|---:|---:|---:|")
        for name in times:
            m = statistics.median(times[name])
            print(f"| {name} | {m:.2f} | {produced['messages'] / m:,.0f} | {base / m:.2f}x |")

        if args.lag_seconds <= 0:
            return 0
        lags = sorted(lag(spark, sa, url, workdir, args.rate, args.lag_seconds))
        if lags:
            p50 = lags[len(lags) // 2]
            p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
            print(
                f"\nlag ({len(lags):,} rows, {args.rate}/s for {args.lag_seconds:.0f} s, 1 s trigger): p50 {p50:.2f} s, p99 {p99:.2f} s"
            )
        else:
            print("\nlag: no rows reached the sink")
            return 1
    finally:
        if spark is not None:
            spark.stop()
        sa.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
