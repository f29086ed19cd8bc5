"""Peak memory of ``iter_topic`` against ``read_topic`` on topics larger than the budget (issue 26).

A fake bookie and admin REST API on 127.0.0.1 (tests/python/support/fake_bookie.py) serve a topic of
64 KiB entries in ledgers of 1,000 entries (DUMMY digest); each reader runs in a fresh interpreter,
which reports its peak RSS (VmHWM) and the RSS after its imports.

    .venv/bin/python benches/bench_iter_topic.py [--sizes-mib 256,512,2048] [--budgets-mib 32,64,256]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from support.admin_server import FakeAdmin
from support.fake_bookie import FakeBookie, metadata_text, topic_routes

CHILD = """
import sys, time
import pyarrow as pa, pyarrow.compute as pc
import pulsar_entries as pe

def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) * 1024

base = hwm()
topic, url, mode, budget = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
start = time.monotonic()
rows = size = 0
if mode == "iter":
    for b in pe.iter_topic(topic, admin_url=url, memory_budget=budget):
        rows += b.num_rows
        size += pc.sum(pc.binary_length(b.column(3))).as_py() or 0
else:
    t = pe.read_topic(topic, admin_url=url)
    rows, size = t.num_rows, pc.sum(pc.binary_length(t["data"])).as_py()
print(rows, size, base, hwm(), time.monotonic() - start)
"""


def run(total: int, budget: int, mode: str, entry: int = 64 << 10) -> tuple[int, int, int, int, float]:
    n = total // entry
    per_ledger = 1000
    blob = bytes(range(256)) * (entry // 256)
    with FakeBookie(lambda _l, e: blob if e < per_ledger else None) as bk:
        ledgers = []
        for i in range((n + per_ledger - 1) // per_ledger):
            count = min(per_ledger, n - i * per_ledger)
            meta = metadata_text(bk.address, state="CLOSED", last_entry_id=count - 1, length=count * entry)
            ledgers.append({"ledgerId": i + 1, "entries": count, "size": count * entry, "metadata": meta})
        with FakeAdmin(topic_routes("public/default/big", ledgers)) as admin:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, "persistent://public/default/big", admin.url, mode, str(budget)],
                capture_output=True,
                text=True,
                timeout=1800,
                env=dict(os.environ),
                check=True,
            )
    rows, size, base, peak, took = out.stdout.split()
    return int(rows), int(size), int(base), int(peak), float(took)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mib", default="256,512,2048")
    ap.add_argument("--budgets-mib", default="32,64,256")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("| topic | reader | budget | entries | peak RSS | RSS after imports | peak - budget | seconds | MiB/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size_mib, budget_mib in zip(map(int, args.sizes_mib.split(",")), map(int, args.budgets_mib.split(","))):
        for mode in ("iter", "read"):
            rows, size, base, peak, took = run(size_mib << 20, budget_mib << 20, mode)
            assert size == size_mib << 20, (size, size_mib)
            name = "iter_topic" if mode == "iter" else "read_topic"
            budget = f"{budget_mib} MiB" if mode == "iter" else "-"
            over = f"{(peak >> 20) - budget_mib} MiB" if mode == "iter" else "-"
            print(
                f"| {size_mib} MiB | {name} | {budget} | {rows:,} | {peak >> 20} MiB | {base >> 20} MiB | {over} "
                f"| {took:.2f} | {size_mib / took:,.0f} |"
            )


if __name__ == "__main__":
    main()
