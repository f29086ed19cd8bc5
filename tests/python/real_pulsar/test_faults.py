"""Faults while reading a real Apache Pulsar 4.2.4 standalone with 3 bookies and ledgers written at
E=3, W=2, A=2: a bookie that stops in the middle of a read, a corrupt copy of an entry, and a ledger
no replica serves. Each bookie is reached through a proxy on 127.0.0.1 that can stop, corrupt a
response, or swallow one ledger's requests; counts reconcile and nothing is lost.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster, _native
from pulsar_entries._standalone import Standalone

from .conftest import NS, build_classpath

pytestmark = pytest.mark.real_pulsar

MESSAGES = 240


def _recv_exact(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def _frames(s: socket.socket) -> Iterator[bytes]:
    while True:
        head = _recv_exact(s, 4)
        if head is None:
            return
        body = _recv_exact(s, int.from_bytes(head, "big"))
        if body is None:
            return
        yield body


class BookieProxy:
    """A frame-aware TCP proxy in front of one bookie, on 127.0.0.1."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        #: Stop (close everything, accept nothing) after this many read responses.
        self.stop_after: int | None = None
        #: (ledger, entry) whose READENTRY answers get their last byte flipped.
        self.corrupt: set[tuple[int, int]] = set()
        #: Ledgers whose v2 requests are swallowed (never answered).
        self.blackhole: set[int] = set()
        self.responses = 0
        self.corrupted = 0
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [client, server]
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        for body in _frames(src):
            if body[0] == 2 and int.from_bytes(body[4:12], "big", signed=True) in self.blackhole:
                continue
            try:
                dst.sendall(len(body).to_bytes(4, "big") + body)
            except OSError:
                return

    def _responses(self, src: socket.socket, dst: socket.socket) -> None:
        for body in _frames(src):
            if body[0] == 2 and body[1] == 2:  # a v2 READENTRY answer
                key = (int.from_bytes(body[8:16], "big", signed=True), int.from_bytes(body[16:24], "big", signed=True))
                if key in self.corrupt and len(body) > 24:
                    body = body[:-1] + bytes([body[-1] ^ 0xFF])
                    self.corrupted += 1
                with self.lock:
                    self.responses += 1
                    due = self.stop_after is not None and self.responses >= self.stop_after
                if due:
                    self.stop()
                    return
            try:
                dst.sendall(len(body).to_bytes(4, "big") + body)
            except OSError:
                return

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.listener.close()
            for s in self.sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


@pytest.fixture(scope="module")
def three_bookies(real_pulsar_workdir: Path) -> Iterator[dict[str, Any]]:
    lib, _, _ = build_classpath()
    sa = Standalone(
        lib,
        real_pulsar_workdir / "three-bookies",
        metadata="zookeeper",
        num_bookies=3,
        max_entries_per_ledger=60,
        config={
            "managedLedgerDefaultEnsembleSize": 3,
            "managedLedgerDefaultWriteQuorum": 2,
            "managedLedgerDefaultAckQuorum": 2,
        },
    )
    sa.start()
    try:
        import pulsar

        client = pulsar.Client(sa.service_url, operation_timeout_seconds=60)
        producer = client.create_producer(NS + "faults", batching_enabled=False)
        for i in range(MESSAGES):
            producer.send(f"fault-{i:04d};".encode() * 20)
        producer.close()
        client.close()
        url = f"zk:127.0.0.1:{sa.zookeeper_port}"
        store = _cluster.open_store(url)
        try:
            layout = _cluster.resolve_topic(NS + "faults", store)
        finally:
            store.close()
        yield {"standalone": sa, "layout": layout, "healthy": pe.read_topic(NS + "faults", metadata_url=url)}
    finally:
        sa.stop()


def _read(layout: Any, proxies: dict[str, BookieProxy]) -> pa.Table:
    reader = _native.BookieReader(
        {b: p.address for b, p in proxies.items()},
        options=_native.BookieClientOptions(timeout_ms=1500, connect_timeout_ms=1000, pipeline_depth=8),
    )
    return pa.concat_tables(list(_cluster.iter_layout(layout, reader=reader)))


def _proxies(layout: Any) -> dict[str, BookieProxy]:
    return {b: BookieProxy(addr) for b, addr in layout.bookies.items()}


def _values(t: pa.Table) -> list[bytes]:
    return [r["value"] for r in pe.decode(t.drop_columns(["error"])).to_pylist()]


def test_the_topic_is_written_at_e3_w2_a2(three_bookies: dict[str, Any]) -> None:
    layout, healthy = three_bookies["layout"], three_bookies["healthy"]
    assert len(layout.bookies) == 3
    ledgers = [led for led in layout.partitions[0].ledgers if led.info.get("last_entry_id", -1) >= 0]
    assert len(ledgers) >= 3
    for led in ledgers:
        assert (led.info["ensemble_size"], led.info["write_quorum"], led.info["ack_quorum"]) == (3, 2, 2)
    assert healthy.filter(pc.is_valid(healthy["error"])).num_rows == 0
    assert _values(healthy) == [f"fault-{i:04d};".encode() * 20 for i in range(MESSAGES)]


def test_a_bookie_stopping_mid_read_loses_nothing(three_bookies: dict[str, Any]) -> None:
    layout, healthy = three_bookies["layout"], three_bookies["healthy"]
    proxies = _proxies(layout)
    victim = sorted(proxies)[1]
    proxies[victim].stop_after = 25
    try:
        got = _read(layout, proxies)
    finally:
        for p in proxies.values():
            p.stop()
    assert proxies[victim].stopped, "the bookie really stopped during the read"
    assert got.num_rows == healthy.num_rows
    assert got.filter(pc.is_valid(got["error"])).num_rows == 0
    assert got["data"].to_pylist() == healthy["data"].to_pylist()


def test_a_corrupt_copy_is_read_from_the_other_replica(three_bookies: dict[str, Any]) -> None:
    layout, healthy = three_bookies["layout"], three_bookies["healthy"]
    led = layout.partitions[0].ledgers[0]
    (_, ensemble), *_ = led.info["ensembles"]
    entry = 4
    first_replica = ensemble[entry % 3]  # the write set is members (e, e+1) mod E, tried in order
    proxies = _proxies(layout)
    proxies[first_replica].corrupt.add((led.ledger_id, entry))
    try:
        got = _read(layout, proxies)
    finally:
        for p in proxies.values():
            p.stop()
    assert proxies[first_replica].corrupted == 1, "the first replica's copy really was corrupt"
    assert got.filter(pc.is_valid(got["error"])).num_rows == 0
    assert got["data"].to_pylist() == healthy["data"].to_pylist()


def test_a_ledger_no_replica_serves_gives_error_rows_and_the_rest_is_read(three_bookies: dict[str, Any]) -> None:
    layout, healthy = three_bookies["layout"], three_bookies["healthy"]
    lost = layout.partitions[0].ledgers[1]
    proxies = _proxies(layout)
    for p in proxies.values():
        p.blackhole.add(lost.ledger_id)
    try:
        got = _read(layout, proxies)
    finally:
        for p in proxies.values():
            p.stop()
    assert got.num_rows == healthy.num_rows, "one row per entry: counts reconcile"
    bad = got.filter(pc.is_valid(got["error"]))
    assert set(bad["ledger_id"].to_pylist()) == {lost.ledger_id}
    assert bad.num_rows == lost.info["last_entry_id"] + 1
    for e in bad["error"].to_pylist():
        assert "no replica served it" in e and e.count("no answer within") == 2, e
    good = got.filter(pc.is_null(got["error"]))
    keep = pc.invert(pc.equal(healthy["ledger_id"], lost.ledger_id))
    assert good["data"].to_pylist() == healthy.filter(keep)["data"].to_pylist()
