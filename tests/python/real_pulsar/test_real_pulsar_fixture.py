"""The real-Pulsar fixture itself: loopback only, both metadata modes, the broker settings we decode."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from pulsar_entries._standalone import MotoServer

pytestmark = pytest.mark.real_pulsar


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on, from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:  # 0A = LISTEN
                    continue
                addr_hex, port_hex = local.split(":")
                raw = bytes.fromhex(addr_hex)
                # /proc prints each 32-bit word in host (little-endian) order.
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add((socket.inet_ntop(family, raw), int(port_hex, 16)))
    return found


def is_loopback(address: str) -> bool:
    return address in ("127.0.0.1", "::1", "::ffff:127.0.0.1")


def test_rocksdb_mode_listens_on_loopback_only(real_pulsar: Any) -> None:
    sa = real_pulsar.standalone
    listening = listening_addresses(sa.pid)
    ports = {port for _, port in listening}
    assert {sa.broker_port, sa.web_port} <= ports, listening
    assert len(listening) >= 3, listening  # broker, web, bookie at least
    assert all(is_loopback(address) for address, _ in listening), listening
    assert all(is_loopback(address) for address, _ in listening_addresses(real_pulsar.moto.proc.pid))
    # The default metadata store is RocksDB, under the temp directory; no ZooKeeper.
    assert any(sa.metadata_dir.rglob("*.sst")) or any(sa.metadata_dir.rglob("CURRENT"))
    assert sa.zookeeper_port is None and not sa.zookeeper_dir.exists()


def test_zookeeper_mode_only_zookeeper_binds_all_interfaces(real_pulsar_zk: Any) -> None:
    sa = real_pulsar_zk.standalone
    listening = listening_addresses(sa.pid)
    assert sa.zookeeper_port in {port for _, port in listening}, listening
    # ZooKeeper has no bind option: it alone may listen beyond loopback, on its unusual free port.
    others = {(a, p) for a, p in listening if p != sa.zookeeper_port}
    assert {sa.broker_port, sa.web_port, sa.bookie_port} <= {p for _, p in others}, listening
    assert all(is_loopback(address) for address, _ in others), listening
    assert any(sa.zookeeper_dir.iterdir())


def test_broker_config_has_what_we_decode(real_pulsar: Any) -> None:
    conf = real_pulsar.standalone.broker_config()
    assert conf["brokerEntryMetadataInterceptors"].count("Interceptor") == 2
    assert conf["exposingBrokerEntryMetadataToClientEnabled"] == "true"
    assert conf["transactionCoordinatorEnabled"] == "true"
    assert conf["managedLedgerOffloadDriver"] == "S3"  # never aws-s3
    assert conf["managedLedgerOffloadServiceEndpoint"].startswith("http://127.0.0.1:")
    hosts = Path(real_pulsar.standalone.hosts_path).read_text().split()
    assert {w for w in hosts if w[0].isdigit() or ":" in w} == {"127.0.0.1", "::1"}
    # Topics span several ledgers (small ledgers) and PIP-70 reached the clients.
    stats = real_pulsar.truth["java-mixed"]["internal_stats"]
    assert len(stats["ledgers"]) > 5
    assert all(m["index"] is not None and m["broker_publish_time"] for m in real_pulsar.truth["java-mixed"]["messages"])


def test_moto_stops_by_pid(tmp_path: Path) -> None:
    moto = MotoServer(tmp_path).start()
    moto.create_bucket("stop-test")
    pid = moto.proc.pid
    moto.stop()
    assert moto.proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(OSError):  # nothing answers on its port any more
        moto.create_bucket("after-stop")
