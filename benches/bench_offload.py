"""Offload-object read benchmark: pulsar_entries.offload vs Parquet vs a plain copy.

    . .venv/bin/activate && python benches/bench_offload.py [--repeats 7] [--entries 20000]

Corpus (fixed seed): ``--entries`` entries of 500 B-8 KB (random bytes, so no codec helps
Parquet), ~85 MB in total for 20 000 entries, of one ledger. Written once as:

* an offload data object + v1 index (64 MiB blocks, Pulsar's default) with
  ``offload.write_offloaded_ledger``;
* a Parquet file of the same entry table (pyarrow defaults: snappy, dictionary off for binary).

Timed, each ``--repeats`` times after one warm-up (files in the page cache), with time.perf_counter:

* ours: ``offload.read_offloaded_ledger(data_path)`` -> Arrow table (memory-map, walk every
  block, check the index's entry ranges, copy entries into a binary column);
* ours, split: the same object read block range by block range with ``read_blocks``
  (what a Spark task does), bytes fetched with ``pyarrow`` file reads;
* Parquet: ``pyarrow.parquet.read_table(path)`` of the same entries;
* copy floor: ``pa.memory_map(path).read_buffer()`` then one copy of every byte into a
  new buffer -- the least any reader that materialises the entries pays.

Throughput is MB/s of entry bytes (1 MB = 1e6 bytes). Ratios use the median.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

import pulsar_entries
from pulsar_entries import offload


def timed(fn, repeats: int) -> float:
    fn()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--entries", type=int, default=20_000)
    args = ap.parse_args()
    rng = random.Random(42)
    data = [rng.randbytes(rng.randrange(500, 8192)) for _ in range(args.entries)]
    total = sum(map(len, data))
    table = pulsar_entries.entries_table(data, ledger_id=7)
    with tempfile.TemporaryDirectory() as d:
        obj = offload.write_offloaded_ledger(table, d, ctime=0)
        parquet = os.path.join(d, "entries.parquet")
        pq.write_table(table, parquet)
        blocks = offload.list_blocks(obj.index_path)
        splits = offload.split_blocks(blocks, target_bytes=16 * 1024 * 1024)
        check = offload.read_offloaded_ledger(obj.data_path)
        assert check["error"].null_count == check.num_rows == args.entries

        def split_read():
            with pa.OSFile(obj.data_path) as f:
                for s in splits:
                    start, end = s[0].offset, s[-1].offset + s[-1].length
                    f.seek(start)
                    offload.read_blocks(f.read_buffer(end - start), s)

        def copy_floor():
            buf = pa.memory_map(obj.data_path).read_buffer()
            pa.py_buffer(bytearray(buf))

        results = {
            "offload read_offloaded_ledger": timed(lambda: offload.read_offloaded_ledger(obj.data_path), args.repeats),
            "offload read_blocks, 16 MiB splits": timed(split_read, args.repeats),
            "parquet read_table": timed(lambda: pq.read_table(parquet), args.repeats),
            "copy floor (mmap + one copy)": timed(copy_floor, args.repeats),
        }
        sizes = (os.path.getsize(obj.data_path), os.path.getsize(parquet))
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}, pyarrow {pa.__version__}"
    )
    print(
        f"{args.entries} entries, {total / 1e6:.1f} MB of entry bytes; offload object {sizes[0] / 1e6:.1f} MB "
        f"in {len(blocks)} blocks, Parquet {sizes[1] / 1e6:.1f} MB; median of {args.repeats}"
    )
    base = results["parquet read_table"]
    print(f"{'reader':40} {'ms':>8} {'MB/s':>8} {'vs parquet':>11}")
    for name, t in results.items():
        print(f"{name:40} {t * 1e3:8.1f} {total / t / 1e6:8.0f} {base / t:10.2f}x")


if __name__ == "__main__":
    main()
