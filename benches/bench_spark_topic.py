"""``spark.read.format("pulsar")`` (one hop) against today's two-hop Spark path and a Java Reader,
on the same topic, in one run; then the memory of a task at 1x, 4x and 16x topic sizes.

    . .venv/bin/activate && python benches/bench_spark_topic.py [--messages 100000] [--rounds 3]

Starts one real Apache Pulsar 4.2.4 standalone (ZooKeeper metadata store, one bookie, all on
127.0.0.1; the jars of ``tests/real_pulsar``), writes a topic with Pulsar's Java producer
(``ReaderBench produce``, as ``bench_read_topic.py``: JSON-like values of ``--value-bytes``, batches of
up to ``--batch`` messages, LZ4), unloads it, then times, each round in a rotated order:

* ``one hop``: ``spark.read.format("pulsar")`` (layout from ZooKeeper, every task reads its range
  from the bookie and decodes it in its Python worker) written to Spark's ``noop`` sink;
* ``two hops``: today's path, ``ps.read_entries`` of the topic's entries (exported to Parquet before
  the rounds, untimed: one file per range, so both sides have the same partitions) then
  ``ps.decode`` (``mapInArrow``) into the ``noop`` sink;
* ``two hops with the export``: the same, timed from the cluster: the entries read in process
  (``read_topic``) and written as Parquet first, as a live topic needed before the source existed;
* ``one hop, the same columns``: ``format("pulsar")`` with ``reassembleChunks=false``, the rows and
  columns ``ps.decode`` gives (the default also reassembles chunks and adds their columns);
* ``floor``: a Python data source whose tasks only hand over the already-decoded rows from Arrow
  IPC files: what Spark's taking over of these rows from Python workers costs by itself, the least
  any Python source giving them pays;
* ``java reader``: a Java ``Reader`` from the earliest position through the broker (``ReaderBench
  serve``, one warm JVM, one reading thread), every value copied out.

Spark runs ``local[2]``. Rows/s use the producer's message count (each side's count is checked).
Memory: for topics of ``--memory-messages`` x 1, 4 and 16, a fresh ``local[1]`` session reads the
whole topic as ONE range (``entriesPerPartition`` larger than the topic) into ``noop``; the figure is
the largest peak RSS (``VmHWM``) among the Python processes Spark started (its daemon and the
worker that ran the task), read from ``/proc`` after the job (Spark's process-tree executor
metrics stayed at 0 for these jobs in local mode).

Servers are stopped by PID at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_read_topic as brt

import pulsar_entries as pe
from pulsar_entries._standalone import Standalone

NS = "persistent://public/default/"


def produce(
    lib: Path,
    classes: Path,
    sa: Standalone,
    topic: str,
    args: Any,
    messages: int,
    log: Path,
    keys: int = 0,
    txn_size: int = 0,
) -> dict[str, Any]:
    """``ReaderBench produce`` into ``topic`` (``keys`` > 0: that many distinct keys; ``txn_size`` > 0:
    in committed transactions of that many messages), then an unload."""
    raw = subprocess.run(
        brt.java_cmd(
            lib,
            classes,
            sa,
            "produce",
            sa.service_url,
            topic,
            str(messages),
            str(args.value_bytes),
            str(args.batch),
            str(args.seed),
            *([str(keys)] if keys or txn_size else []),
            *([str(txn_size)] if txn_size else []),
        ),
        stdout=subprocess.PIPE,
        stderr=open(log, "ab"),  # noqa: SIM115 - the child holds it
        text=True,
        timeout=3600,
        check=True,
    ).stdout
    got: dict[str, Any] = json.loads(raw.strip().splitlines()[-1])
    sa.admin("PUT", f"/persistent/{topic.removeprefix('persistent://')}/unload")
    return got


def session(master: str) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    b = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import pulsar_entries.spark as ps

    ps.register(spark)
    return spark


class DecodedFilesSource:
    """The floor of any Python data source giving these rows: a source whose tasks only
    read already-decoded Arrow IPC files (one per partition) and yield their batches,
    so what is timed is Spark taking the rows over from the Python workers."""

    @staticmethod
    def make(directory: str, schema: pa.Schema) -> Any:
        from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

        from pulsar_entries.spark._arrow import conform, spark_schema

        class Reader(DataSourceReader):
            def partitions(self) -> list[InputPartition]:
                return [InputPartition(str(f)) for f in sorted(Path(directory).glob("*.arrow"))]

            def read(self, partition: InputPartition) -> Any:
                import pyarrow.ipc as ipc

                with pa.memory_map(partition.value) as src:
                    for batch in ipc.open_file(src).read_all().to_batches():
                        yield conform(batch, large=False)

        class Source(DataSource):
            @classmethod
            def name(cls) -> str:
                return "decoded-files"

            def schema(self) -> Any:
                return spark_schema(schema)

            def reader(self, schema: Any) -> DataSourceReader:
                return Reader()

        return Source


def python_workers_peak_rss() -> tuple[int, int]:
    """``(largest, count)``: the largest peak RSS (``VmHWM``) among the Python processes under this
    one (Spark's JVM, its Python daemon and the workers that ran the tasks; workers are reused, so
    they are still there after the job), and how many there are."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
        names[int(d)] = stat.split("(", 1)[1].rsplit(")", 1)[0]
    todo, found = [os.getpid()], []
    while todo:
        pid = todo.pop()
        for c in children.get(pid, []):
            todo.append(c)
            if names.get(c, "").startswith("python"):
                found.append(c)
    peak = 0
    for pid in found:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            continue
    return peak, len(found)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--value-bytes", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--entries-per-ledger", type=int, default=400)
    ap.add_argument("--partitions", type=int, default=4, help="Spark partitions of both Spark sides")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--memory-messages", type=int, default=20_000, help="the 1x topic of the memory runs (0: none)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    lib, classes = brt.build()
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-topic-"))
    sa = Standalone(
        lib,
        workdir / "pulsar",
        metadata="zookeeper",
        max_entries_per_ledger=args.entries_per_ledger,
        max_message_size=5 * 1024 * 1024,
    )
    java: brt.JavaReader | None = None
    spark: Any = None
    try:
        sa.start()
        url = f"zk:127.0.0.1:{sa.zookeeper_port}"
        log = workdir / "java.log"
        topic = NS + "spark-bench"
        produced = produce(lib, classes, sa, topic, args, args.messages, log)
        entries = pe.read_topic(topic, metadata_url=url)
        assert entries.filter(entries["error"].is_valid()).num_rows == 0
        n_entries = entries.num_rows
        per_partition = -(-n_entries // args.partitions)
        print(
            f"topic: {produced['messages']:,} messages, {n_entries:,} entries, "
            f"{produced['value_bytes'] / 1e6:.1f} MB of values; {args.partitions} Spark partitions",
            flush=True,
        )
        parquet = workdir / "entries"
        parquet.mkdir()
        kept = entries.drop_columns(["error"])
        for i in range(args.partitions):
            pq.write_table(kept.slice(i * per_partition, per_partition), parquet / f"part-{i:03d}.parquet")

        spark = session("local[2]")
        import pulsar_entries.spark as ps

        def one_hop() -> tuple[float, int]:
            df = (
                spark.read.format("pulsar")
                .option("metadataUrl", url)
                .option("topic", topic)
                .option("entriesPerPartition", str(per_partition))
                .load()
            )
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - t
            return seconds, produced["messages"]

        def two_hops() -> tuple[float, int]:
            df = ps.decode(ps.read_entries(spark, str(parquet)))
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - t
            return seconds, produced["messages"]

        exports = [0]

        def two_hops_with_export() -> tuple[float, int]:
            # What today's path costs for a live topic: its entries exported from the cluster
            # (read_topic in process, one Parquet file per Spark partition), then the two hops.
            exports[0] += 1
            out = workdir / f"export-{exports[0]}"
            out.mkdir()
            t = time.perf_counter()
            got = pe.read_topic(topic, metadata_url=url).drop_columns(["error"])
            for i in range(args.partitions):
                pq.write_table(got.slice(i * per_partition, per_partition), out / f"part-{i:03d}.parquet")
            ps.decode(ps.read_entries(spark, str(out))).write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - t
            shutil.rmtree(out, ignore_errors=True)
            return seconds, produced["messages"]

        def one_hop_same_columns() -> tuple[float, int]:
            # The rows and columns ps.decode gives (chunks not reassembled), so both hops do the same work.
            df = (
                spark.read.format("pulsar")
                .option("metadataUrl", url)
                .option("topic", topic)
                .option("entriesPerPartition", str(per_partition))
                .option("reassembleChunks", "false")
                .load()
            )
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t, produced["messages"]

        # The floor: the same decoded rows, already in Arrow IPC files, handed over by a Python source.
        decoded_dir = workdir / "decoded"
        decoded_dir.mkdir()
        decoded_schema = None
        for i in range(args.partitions):
            part = pe.decode(kept.slice(i * per_partition, per_partition))
            decoded_schema = part.schema
            path = str(decoded_dir / f"part-{i:03d}.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, part.schema) as w:
                w.write_table(part, max_chunksize=8192)
        assert decoded_schema is not None
        spark.dataSource.register(DecodedFilesSource.make(str(decoded_dir), decoded_schema))

        def floor() -> tuple[float, int]:
            df = spark.read.format("decoded-files").load()
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t, produced["messages"]

        # Each Spark side's rows, checked once (untimed): the same messages.
        one = (
            spark.read.format("pulsar")
            .option("metadataUrl", url)
            .option("topic", topic)
            .option("entriesPerPartition", str(per_partition))
            .load()
        )
        assert one.rdd.getNumPartitions() == args.partitions, one.rdd.getNumPartitions()
        two = ps.decode(ps.read_entries(spark, str(parquet)))
        assert two.rdd.getNumPartitions() == args.partitions, two.rdd.getNumPartitions()
        same = (
            spark.read.format("pulsar")
            .option("metadataUrl", url)
            .option("topic", topic)
            .option("entriesPerPartition", str(per_partition))
            .option("reassembleChunks", "false")
            .load()
        )
        assert sorted(same.columns) == sorted(two.columns), (same.columns, two.columns)
        files = spark.read.format("decoded-files").load()
        for name, df in (("one hop", one), ("two hops", two), ("one hop, same columns", same), ("floor", files)):
            got = df.filter("error IS NULL").count()
            if got != produced["messages"]:
                raise RuntimeError(f"{name}: {got} messages, produced {produced['messages']}")

        java = brt.JavaReader(
            brt.java_cmd(lib, classes, sa, "serve", sa.service_url, topic, str(produced["messages"])),
            workdir / "java-serve.log",
        )

        def java_reader() -> tuple[float, int]:
            assert java is not None
            got = java.drain()
            if got["messages"] != produced["messages"]:
                raise RuntimeError(f"java reader: {got}")
            return float(got["seconds"]), int(got["messages"])

        sides = {
            'one hop: format("pulsar")': one_hop,
            "two hops: read_entries + ps.decode": two_hops,
            'one hop, the same columns as ps.decode: format("pulsar"), reassembleChunks=false': one_hop_same_columns,
            "floor: a Python source handing over the decoded rows from Arrow files": floor,
            "two hops with the export: read_topic + Parquet + read_entries + ps.decode": two_hops_with_export,
            "java reader (broker)": java_reader,
        }
        for side in sides.values():  # warm-up
            side()
        times: dict[str, list[float]] = {k: [] for k in sides}
        names = list(sides)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                seconds, _ = sides[name]()
                times[name].append(seconds)
        print("\n| side | median s | rows/s | vs two hops |\n|---|---:|---:|---:|")
        base = statistics.median(times[names[1]])
        for name in names:
            m = statistics.median(times[name])
            print(f"| {name} | {m:.2f} | {produced['messages'] / m:,.0f} | {base / m:.2f}x |")
        ratios = [b / a for a, b in zip(times[names[0]], times[names[1]])]
        print(f"one hop / two hops per round: {', '.join(f'{x:.2f}x' for x in ratios)}", flush=True)
        spark.stop()
        spark = None

        if args.memory_messages:
            print(
                "\n| topic | messages | entries | tasks | largest peak RSS of a Python worker |\n|---|---:|---:|---:|---:|"
            )
            for k in (1, 4, 16):
                name = NS + f"spark-memory-{k}x"
                got = produce(lib, classes, sa, name, args, args.memory_messages * k, log)
                spark = session("local[1]")
                df = (
                    spark.read.format("pulsar")
                    .option("metadataUrl", url)
                    .option("topic", name)
                    .option("entriesPerPartition", str(10**9))
                    .load()
                )
                tasks = df.rdd.getNumPartitions()
                df.write.format("noop").mode("overwrite").save()
                peak, procs = python_workers_peak_rss()
                n = pe.read_topic(name, metadata_url=url).num_rows
                print(
                    f"| {k}x | {got['messages']:,} | {n:,} | {tasks} | {peak / 2**20:.0f} MiB ({procs} processes) |",
                    flush=True,
                )
                spark.stop()
                spark = None
    finally:
        if spark is not None:
            spark.stop()
        if java is not None:
            java.close()
        sa.stop()
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    pa.set_cpu_count(max(1, pa.cpu_count()))
    sys.exit(main())
