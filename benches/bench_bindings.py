"""The cost of crossing into the extension: small calls, and resolving a topic's layout.

    .venv/bin/python benches/bench_bindings.py [--repeats 7] [--calls 20000]

Timed with time.perf_counter (median of ``--repeats`` runs after one warm-up), through the public or the
package-internal Python API only, so the same script runs on any checkout whose ``pulsar_entries`` is first on
``sys.path`` (``PYTHONPATH=<checkout>/python``):

* per call, ``--calls`` times: ``parse_entry`` of a 3-message batch entry, ``encode_entry`` of one message,
  ``decode`` of a one-entry table, ``reassemble_chunks`` of a 3-row table, ``MessageId.deserialize``;
* ``resolve_topic`` over an in-memory metadata store holding a topic of 4 partitions of 10 ledgers each (a
  Python object with ``get`` and ``children``, as the ZooKeeper and RocksDB stores are), and the number of
  calls the walk makes into the extension (every ``_native`` attribute called).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

import pulsar_entries as pe
from pulsar_entries import _native
from pulsar_entries._cluster import layout

from support.protobuf_wire import pb_bytes, pb_int

ML = "/managed-ledgers/t/ns/persistent/x"


class Store:
    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = nodes

    def get(self, path: str) -> bytes | None:
        return self.nodes.get(path)

    def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({k[len(prefix) :].split("/")[0] for k in self.nodes if k.startswith(prefix)})

    def close(self) -> None:
        pass


def topic_store(partitions: int = 4, ledgers: int = 10) -> Store:
    text = (
        "LedgerMetadata{{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, "
        "length=10, lastEntryId=9, digestType=CRC32C, password=OMITTED, ensembles={{0=[bk{}:3181]}}, customMetadata={{}}}}"
    )
    nodes = {"/admin/partitioned-topics/t/ns/persistent/x": json.dumps({"partitions": partitions}).encode()}
    lid = 1
    for p in range(partitions):
        info = b""
        for _ in range(ledgers):
            info += pb_bytes(1, pb_int(1, lid) + pb_int(2, 10) + pb_int(3, 100))
            nodes[f"/ledgers/00/0000/L{lid:04d}"] = _native.ledger_node_from_text(lid, text.format(lid % 3))
            lid += 1
        nodes[f"{ML}-partition-{p}"] = info
    return Store(nodes)


class Counting:
    """``_native`` with a count of the calls made through it."""

    def __init__(self) -> None:
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        target = getattr(_native, name)
        if not callable(target):
            return target

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return target(*args, **kwargs)

        return counted


def timed(f: Any, repeats: int) -> float:
    f()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20_000)
    a = ap.parse_args()
    n = a.calls

    entry = pe.encode_entry([{"value": b"v%d" % i, "key": "k"} for i in range(3)], publish_time=1)
    one = pe.entries_table([entry])
    chunks = pe.decode(pe.entries_table(pe.encode_chunked({"value": b"x" * 300}, chunk_size=100, publish_time=1)))
    id_bytes = pe.MessageId(7, 3).serialize()
    cases = {
        "parse_entry": lambda: [pe.parse_entry(entry) for _ in range(n)],
        "encode_entry": lambda: [pe.encode_entry([{"value": b"v"}], publish_time=1) for _ in range(n)],
        "decode (1 entry)": lambda: [pe.decode(one) for _ in range(n)],
        "reassemble_chunks (3 rows)": lambda: [pe.reassemble_chunks(chunks) for _ in range(n)],
        "MessageId.deserialize": lambda: [pe.MessageId.deserialize(id_bytes) for _ in range(n)],
    }
    print(f"python {sys.version.split()[0]}, pulsar_entries from {Path(pe.__file__).parent}")
    for name, f in cases.items():
        print(f"{name:32s} {timed(f, a.repeats) / n * 1e6:8.2f} µs/call")

    store = topic_store()
    counting = Counting()
    real = layout._native  # type: ignore[attr-defined]
    layout._native = counting  # type: ignore[attr-defined]
    try:
        resolved = layout.resolve_topic("persistent://t/ns/x", store)
    finally:
        layout._native = real  # type: ignore[attr-defined]
    ledgers = sum(len(p.ledgers) for p in resolved.partitions)
    took = timed(lambda: [layout.resolve_topic("persistent://t/ns/x", store) for _ in range(100)], a.repeats) / 100
    print(
        f"{'resolve_topic (4 x 10 ledgers)':32s} {took * 1e6:8.1f} µs/call, "
        f"{counting.calls} call(s) into the extension, {ledgers} ledgers"
    )


if __name__ == "__main__":
    main()
