"""Chunk reassembly throughput from Python: 1 MiB messages in 100 KiB chunks.

    .venv/bin/python benches/bench_chunks.py [--messages 64] [--codecs none,lz4,zstd] [--partitions 8]

For each codec it times, in one run, on the same decoded table (two producers' chunks interleaved):

* ``reassemble_chunks``: the in-process path;
* the Spark-shaped path in one process: the table cut into ``--partitions`` contiguous partitions,
  ``chunks.reassemble_partition`` on each, ``chunks.finish_leftovers`` on the leftovers (what
  ``spark.reassemble_chunks`` runs per task, without Spark's scheduling and shuffle costs);
* the baseline: ``b"".join`` of each message's chunk values grouped by uuid in Python, then
  ``pyarrow.decompress`` (no state machine, no accounting, no Arrow output rows).

Throughput is MiB of reassembled (uncompressed) message bytes per second, best of ``--repeat`` runs;
the last column is the ratio to the baseline. Results must be identical across paths (checked).

With ``--spark`` it also runs ``pulsar_entries.spark.reassemble_chunks`` on Spark ``local[2]``: the
decoded table is written as ``--partitions`` Parquet files (one Spark partition each, cut in the
middle of messages), and the job is timed from reading the files to Spark's ``noop`` sink, against
an identity ``mapInArrow`` over the same files (Spark's own cost of moving the rows through Python).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import pyarrow as pa

import pulsar_entries as pe
from pulsar_entries import chunks

MIB = 1 << 20
ARROW_CODEC = {"lz4": "lz4_raw", "zstd": "zstd", "snappy": "snappy"}


def corpus(messages: int, codec: str, size: int, chunk: int) -> tuple[pa.Table, list[bytes]]:
    values, per_message = [], []
    for m in range(messages):
        # Half JSON-like text, half random: every codec has work to do.
        text = (b'{"user":%d,"amount":12.5,"tags":["eu","web"]},' % m) * (size // 90 + 1)
        value = bytearray(size)
        value[0::2] = text[: size // 2]
        value[1::2] = os.urandom(size // 2)
        value = bytes(value)
        values.append(value)
        per_message.append(
            pe.encode_chunked(
                {"value": value},
                chunk_size=chunk,
                compression=codec,
                producer_name=f"producer-{m % 2}",
                sequence_id=m,
                publish_time=1_700_000_000_000 + m,
            )
        )
    entries = []
    for a, b in zip(per_message[::2], [*per_message[1::2], []]):
        for k in range(max(len(a), len(b))):
            entries += a[k : k + 1] + b[k : k + 1]
    return pe.decode(pe.entries_table(entries, ledger_id=1)), values


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


def in_process(decoded: pa.Table) -> pa.Table:
    return pe.reassemble_chunks(decoded)


def partitioned(decoded: pa.Table, partitions: int) -> pa.Table:
    n = decoded.num_rows
    bounds = [n * i // partitions for i in range(partitions + 1)]
    publish = decoded["publish_time"].cast(pa.int64())
    done, leftovers, seed = [], [], None
    for lo, hi in zip(bounds, bounds[1:]):
        part = decoded.slice(lo, hi - lo)
        d, left = chunks.reassemble_partition(part, seeds={} if seed is None else {-1: seed})
        done.append(d)
        leftovers.append(left)
        top = publish.slice(lo, hi - lo).to_pylist()
        seed = max([t for t in top if t is not None] + ([seed] if seed is not None else []))
    finished = chunks.finish_leftovers(pa.concat_tables(leftovers), final_watermarks={-1: seed})
    return pa.concat_tables([*done, finished])


def baseline(decoded: pa.Table, codec: str) -> list[bytes]:
    groups: dict[str, list[bytes]] = {}
    sizes: dict[str, int] = {}
    for uuid, value, size in zip(
        decoded["uuid"].to_pylist(), decoded["value"].to_pylist(), decoded["uncompressed_size"].to_pylist()
    ):
        groups.setdefault(uuid, []).append(value)
        sizes[uuid] = size
    out = []
    for uuid, parts in groups.items():
        joined = b"".join(parts)
        if codec == "none":
            out.append(joined)
        elif codec == "zlib":
            import zlib

            out.append(zlib.decompressobj().decompress(joined))
        else:
            out.append(pa.decompress(joined, decompressed_size=sizes[uuid], codec=ARROW_CODEC[codec], asbytes=True))
    return out


def spark_session():
    import sys

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def on_spark(spark, decoded: pa.Table, partitions: int, repeat: int, values: list[bytes]) -> tuple[float, float]:
    """(reassembly seconds, identity seconds) on Spark, best of ``repeat``; results checked."""
    import tempfile

    import pyarrow.parquet as pq

    import pulsar_entries.spark as ps

    with tempfile.TemporaryDirectory() as tmp:
        n = decoded.num_rows
        bounds = [n * i // partitions for i in range(partitions + 1)]
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            pq.write_table(decoded.slice(lo, hi - lo), f"{tmp}/part-{i:03d}.parquet")
        df = spark.read.parquet(tmp)

        def identity(batches):
            yield from batches

        run = lambda frame: frame.write.format("noop").mode("overwrite").save()  # noqa: E731
        t_id, _ = best(lambda: run(df.mapInArrow(identity, df.schema)), repeat)
        t_sp, _ = best(lambda: run(ps.reassemble_chunks(df)), repeat)
        got = ps.reassemble_chunks(df).filter("status = 'complete'").select("value").toArrow()
        assert sorted(got["value"].to_pylist()) == sorted(values)
    return t_sp, t_id


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=64)
    p.add_argument("--codecs", default="none,lz4,zlib,zstd,snappy")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--spark", action="store_true", help="also time spark.reassemble_chunks on local[2]")
    args = p.parse_args()
    spark = spark_session() if args.spark else None
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"pyarrow {pa.__version__}, pulsar-entries {pe.__version__}"
    )
    print(f"{args.messages} messages of 1 MiB in 100 KiB chunks, two producers interleaved, best of {args.repeat}\n")
    header = "| codec | reassemble_chunks MiB/s | partitioned (%d parts) MiB/s | Python baseline MiB/s | in-process vs baseline |"
    if spark is not None:
        header += " Spark local[2] MiB/s | Spark identity MiB/s | Spark / identity time |"
    print(header % args.partitions)
    print("|---" * (header.count("|") - 1) + "|")
    for codec in args.codecs.split(","):
        decoded, values = corpus(args.messages, codec, MIB, 100 * 1024)
        total = args.messages * MIB / MIB
        t_in, whole = best(lambda: in_process(decoded), args.repeat)
        t_part, parts = best(lambda: partitioned(decoded, args.partitions), args.repeat)
        t_base, joined = best(lambda: baseline(decoded, codec), args.repeat)
        assert sorted(whole["value"].to_pylist()) == sorted(values) == sorted(joined)
        assert sorted(parts["value"].to_pylist()) == sorted(values)
        line = (
            f"| {codec} | {total / t_in:,.0f} | {total / t_part:,.0f} | {total / t_base:,.0f} | {t_base / t_in:.2f}x |"
        )
        if spark is not None:
            t_sp, t_id = on_spark(spark, decoded, args.partitions, min(args.repeat, 3), values)
            line += f" {total / t_sp:,.0f} | {total / t_id:,.0f} | {t_sp / t_id:.2f}x |"
        print(line)


if __name__ == "__main__":
    main()
