"""A topic's layout from the metadata store, resolved in one native call over a store written in Python."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pulsar_entries import _native
from pulsar_entries._cluster import layout
from pulsar_entries._cluster.layout import Ledger, Partition, TopicLayout, resolve_topic

from support.protobuf_wire import pb_bytes, pb_int

TOPIC = "persistent://t/ns/x"
ML = "/managed-ledgers/t/ns/persistent/x"


def ledger_text(bookie: str) -> str:
    return (
        "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, "
        f"length=10, lastEntryId=1, digestType=CRC32C, password=OMITTED, ensembles={{0=[{bookie}]}}, customMetadata={{}}}}"
    )


def managed_ledger(*ids: int) -> bytes:
    def info(lid: int) -> bytes:
        body = pb_int(1, lid) + pb_int(2, 2) + pb_int(3, 10)
        if lid == 1:  # offloaded: uidMsb 7, complete
            body += pb_bytes(5, pb_int(1, 7) + pb_int(3, 1))
        return pb_bytes(1, body)

    return b"".join(info(i) for i in ids)


class Store:
    """Nodes in a dict; counts the calls the walk makes."""

    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = nodes
        self.calls = 0

    def get(self, path: str) -> bytes | None:
        self.calls += 1
        return self.nodes.get(path)

    def children(self, path: str) -> list[str]:
        self.calls += 1
        prefix = path.rstrip("/") + "/"
        return sorted({k[len(prefix) :].split("/")[0] for k in self.nodes if k.startswith(prefix)})

    def close(self) -> None:
        pass


def cluster() -> Store:
    cursor = pb_int(1, -1 & (1 << 64) - 1) + pb_int(2, 2) + pb_int(3, 1)
    cursor += pb_bytes(5, pb_bytes(1, "CompactedTopicLedger") + pb_int(2, 9))
    nodes = {
        "/admin/partitioned-topics/t/ns/persistent/x": json.dumps({"partitions": 2}).encode(),
        f"{ML}-partition-0": managed_ledger(2, 1),
        f"{ML}-partition-1": managed_ledger(3),
        f"{ML}-partition-1/__compaction": cursor,
        "/ledgers/available/bk1": b"",
    }
    for lid, bookie in ((2, "bk1"), (3, "bk2"), (9, "bk1")):
        nodes[f"/ledgers/00/0000/L{lid:04d}"] = _native.ledger_node_from_text(lid, ledger_text(bookie))
    return Store(nodes)


class Counting:
    """``_native`` seen through a counter of the functions called on it."""

    def __init__(self) -> None:
        self.called: list[str] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(_native, name)
        if not callable(target) or isinstance(target, type):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self.called.append(name)
            return target(*args, **kwargs)

        return call


def test_a_partitioned_topic_is_one_native_call(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting()
    monkeypatch.setattr(layout, "_native", counting)
    store = cluster()
    got = resolve_topic(TOPIC, store)
    assert counting.called == ["resolve_topic"]
    # Each node read once: the partition count, 2 managed ledgers, 3 ledgers, 2 cursors, the compacted
    # ledger, bk1's registration, bk2's two (writable, then read-only).
    assert store.calls == 12
    nodes = store.nodes
    info = {lid: _native.ledger_metadata(lid, nodes[f"/ledgers/00/0000/L{lid:04d}"]) for lid in (2, 3, 9)}
    offload = {"uid_msb": 7, "uid_lsb": 0, "bookkeeper_deleted": False, "driver": "", "driver_properties": {}}

    def led(lid: int, entries: int = 2, size: int = 10) -> Ledger:
        return Ledger(lid, entries, size, nodes[f"/ledgers/00/0000/L{lid:04d}"], info[lid])

    want = TopicLayout(
        TOPIC,
        [
            Partition(f"{TOPIC}-partition-0", 0, [Ledger(1, 2, 10, None, {}, offload), led(2)]),
            Partition(f"{TOPIC}-partition-1", 1, [led(3)], led(9, 0, 0), (2, 1)),
        ],
        {"bk1": "bk1", "bk2": "bk2"},
    )
    assert got == want
    assert resolve_topic(TOPIC, cluster(), partitions=[1]).partitions == want.partitions[1:]
    assert resolve_topic(f"{TOPIC}-partition-0", cluster()).partitions == want.partitions[:1]


def test_missing_and_bad_nodes_and_store_errors() -> None:
    with pytest.raises(
        LookupError, match=r"^unknown topic persistent://t/ns/y: no managed ledger at /managed-ledgers/"
    ):
        resolve_topic("t/ns/y", cluster())
    with pytest.raises(ValueError, match=r"^topic persistent://t/ns/x has no partition \[5\]$"):
        resolve_topic(TOPIC, cluster(), partitions=[5, 1])
    bad = cluster()
    bad.nodes["/ledgers/00/0000/L0003"] = b"\xff\xff"
    with pytest.raises(_native.DataError, match=r"^node /ledgers/00/0000/L0003: "):
        resolve_topic(TOPIC, bad)

    class Broken(Store):
        def get(self, path: str) -> bytes | None:
            if path.startswith("/ledgers/"):
                raise ConnectionResetError("the store hung up")
            return super().get(path)

    with pytest.raises(ConnectionResetError, match=r"^the store hung up$"):
        resolve_topic(TOPIC, Broken(cluster().nodes))
