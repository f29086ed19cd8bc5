"""Seek cost against topic size: find_position_by_time / _by_offset vs decoding the topic.

    . .venv/bin/activate && python benches/bench_seek.py [--sizes 1000,10000,100000,1000000] [--seeks 50]

For each size n: n broker-stamped single-message entries (``pulsar_entries.stamp``
with a broker clock of +1 ms per entry), then ``--seeks`` random target times and
offsets. Reported per size: median time per seek, entries read by the binary search
(grows with log2 n), and the baseline a user has without seek: decode the whole
table and search the ``broker_timestamp`` column with Arrow (median of 3).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import statistics
import time

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries as pe

START = 1_700_000_000_000


def topic(n: int) -> pa.Table:
    entry = pe.encode_entry([{"value": b'{"event":"click","user":42}'}], publish_time=START)
    table = pa.table(
        {
            "ledger_id": pa.array([i // 50_000 for i in range(n)], pa.int64()),
            "entry_id": pa.array([i % 50_000 for i in range(n)], pa.int64()),
            "data": pa.array([entry] * n, pa.binary()),
        }
    )
    return pe.stamp(table, timestamps=list(range(START, START + n)))


def decode_and_search(table: pa.Table, t: int) -> int:
    ts = pc.cast(pe.decode(table)["broker_timestamp"], pa.int64())
    before = pc.less(ts, t)
    return pc.sum(before).as_py() or 0  # ordered timestamps: count = row after the newest match


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--seeks", type=int, default=50)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, Python {platform.python_version()}"
    )
    print(
        f"{'entries':>9} {'log2 n':>7} {'by time':>10} {'read':>5} {'by offset':>10} {'read':>5} "
        f"{'decode+search':>14} {'speed-up':>9}"
    )
    rng = random.Random(3)
    for n in (int(s) for s in args.sizes.split(",")):
        table = topic(n)
        targets = [rng.randrange(START, START + n) for _ in range(args.seeks)]
        offsets = [rng.randrange(n) for _ in range(args.seeks)]
        t_time, r_time, t_off, r_off = [], [], [], []
        for t, o in zip(targets, offsets):
            s = time.perf_counter()
            p = pe.find_position_by_time(table, t)
            t_time.append(time.perf_counter() - s)
            assert p.row == t - START
            r_time.append(p.entries_read)
            s = time.perf_counter()
            q = pe.find_position_by_offset(table, o)
            t_off.append(time.perf_counter() - s)
            assert (q.row, q.batch_index) == (o, 0)
            r_off.append(q.entries_read)
        base = []
        for t in targets[:3]:
            s = time.perf_counter()
            assert decode_and_search(table, t) == t - START
            base.append(time.perf_counter() - s)
        bt, bo, bl = statistics.median(t_time), statistics.median(t_off), statistics.median(base)
        print(
            f"{n:>9,} {math.log2(n):>7.1f} {bt * 1e6:>8.1f}us {max(r_time):>5} {bo * 1e6:>8.1f}us {max(r_off):>5} "
            f"{bl * 1e3:>12.1f}ms {bl / bt:>8,.0f}x"
        )


if __name__ == "__main__":
    main()
