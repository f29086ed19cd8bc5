"""The command line with a topic as ``IN``, read from a real Pulsar 4.2.4 standalone's storage
(``--metadata-url`` the ZooKeeper store or the admin REST API, ``--offload-uri`` the loopback S3), in
subprocesses: the same results as the Python API on the same topic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster

from .conftest import BUCKET, NS
from support.cli import run_cli

pytestmark = pytest.mark.real_pulsar


def zk(rp: Any) -> list[str]:
    return ["--metadata-url", f"zk:127.0.0.1:{rp.standalone.zookeeper_port}", "--offload-uri", offload_uri(rp)]


def offload_uri(rp: Any) -> str:
    return f"s3://{BUCKET}?endpoint_override=127.0.0.1:{rp.moto.port}&scheme=http"


def rest(rp: Any) -> list[str]:
    store = _cluster.open_store(f"zk:127.0.0.1:{rp.standalone.zookeeper_port}")
    try:
        bookies = _cluster.resolve_topic(NS + "java-mixed", store).bookies
    finally:
        store.close()
    addresses = [f"--bookie-address={b}={a}" for b, a in bookies.items()]
    return ["--metadata-url", rp.standalone.web_url, "--offload-uri", offload_uri(rp), *addresses]


def entries(rp: Any, topic: str, **kw: Any) -> Any:
    t = pe.read_topic(
        NS + topic,
        metadata_url=f"zk:127.0.0.1:{rp.standalone.zookeeper_port}",
        offload_filesystem=rp.s3(),
        offload_prefix=BUCKET,
        **kw,
    )
    return t.drop_columns(["error"])


def test_decode_a_topic_from_the_store_and_from_the_admin_api(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    expected = pe.decode(entries(rp, "java-mixed"))
    run_cli("decode", NS + "java-mixed", str(tmp_path / "zk.parquet"), *zk(rp))
    run_cli("decode", NS + "java-mixed", str(tmp_path / "rest.parquet"), *rest(rp))
    for name in ("zk.parquet", "rest.parquet"):
        got = pq.read_table(tmp_path / name)
        assert got.num_rows == expected.num_rows == 200
        assert got.to_pylist() == expected.to_pylist()
    compacted = pe.decode(entries(rp, "java-mixed", read_compacted=True))
    run_cli("decode", NS + "java-mixed", str(tmp_path / "view.parquet"), "--read-compacted", *rest(rp))
    assert pq.read_table(tmp_path / "view.parquet").to_pylist() == compacted.to_pylist()


@pytest.mark.spark
def test_decode_a_partitioned_topic_on_spark(real_pulsar_zk: Any, tmp_path: Path) -> None:
    """The Spark engine reads the topic on the driver, then decodes on Spark."""
    rp = real_pulsar_zk
    run = run_cli("decode", NS + "java-partitioned", str(tmp_path / "out"), *zk(rp), engine="spark")
    expected = pe.decode(entries(rp, "java-partitioned"))
    got = pq.read_table(tmp_path / "out")
    assert "(0 error rows)" in run.stdout and got.num_rows == expected.num_rows > 0
    key = ["partition", "ledger_id", "entry_id", "batch_index"]
    assert got.sort_by([(k, "ascending") for k in key]).select([*key, "key", "value"]).to_pylist() == (
        expected.sort_by([(k, "ascending") for k in key]).select([*key, "key", "value"]).to_pylist()
    )


def test_compact_seek_last_id_and_inspect_a_topic(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    run_cli("compact", NS + "java-txn", str(tmp_path / "c"), *zk(rp))
    got = pq.read_table(tmp_path / "c" / "compacted" / "part-0.parquet")
    assert got.to_pylist() == pe.compact(entries(rp, "java-txn")).to_pylist()
    assert got.num_rows == rp.truth["java-txn"]["internal_stats"]["compactedLedger"]["entries"]

    for topic in ("java-mixed", "java-tombstoned"):
        (java,) = rp.truth[topic]["compacted_last_message_ids"]
        out = run_cli("last-id", NS + topic, *rest(rp)).stdout
        if java["ledger_id"] < 0:
            assert out.startswith("(-1, -1, 0, 0) (EARLIEST"), out
        else:
            batch = java["batch_index"]
            assert out.startswith(f"{java['ledger_id']}:{java['entry_id']}:{batch if batch > 0 else -1} "), out

    seeks = rp.truth["java-partitioned-partition-1"]["seeks"]
    t = next(s for s in seeks if s["first"] is not None)
    out = run_cli("seek", NS + "java-partitioned", "--time", str(t["timestamp"]), *zk(rp)).stdout.splitlines()
    assert len(out) == 3 and out[1].startswith(f"partition 1: {t['first']['ledger_id']}:{t['first']['entry_id']} ")

    report = run_cli("inspect", NS + "java-txn", *zk(rp)).stdout
    expected_entries = len(entries(rp, "java-txn"))
    assert re.search(rf"^entries\s+{expected_entries}$", report, re.M), report
    assert re.search(r"^entries with error\s+0$", report, re.M), report


def test_cli_topic_errors(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    run = run_cli("decode", NS + "java-mixed", str(tmp_path / "x.parquet"), ok=False)
    assert run.stderr.strip() == (
        f"pulsar-entries: error: IN {NS}java-mixed is a topic: give --metadata-url "
        "(zk:host:2181, rocksdb:/path or http://broker:8080)"
    )
    run = run_cli("decode", str(tmp_path), str(tmp_path / "x.parquet"), *zk(rp), ok=False)
    assert "--metadata-url reads a topic from a cluster" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    run = run_cli("decode", NS + "no-such-topic", str(tmp_path / "x.parquet"), *rest(rp), ok=False)
    assert run.stderr.strip().startswith(f"pulsar-entries: error: unknown topic {NS}no-such-topic: the broker at ")
    run = run_cli("last-id", NS + "java-partitioned", *zk(rp), ok=False)
    assert "has 3 partitions: name one" in run.stderr
