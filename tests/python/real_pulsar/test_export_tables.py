"""A topic exported to Delta Lake and Iceberg tables (``pulsar_entries.export``), against a real
Apache Pulsar 4.2.4: a topic with two AVRO schema versions, keys, a chunked message, committed and
aborted transactions and a message no schema version reads, across offloaded and live ledgers.

The tables are read back by DuckDB (over the data files each table's current snapshot names) and
compared with what Java Readers receive: plain, ``AUTO_CONSUME`` (typed) and ``readCompacted``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries.export import ExportError, export_topic

from .conftest import BUCKET, NS, S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY, _compact, _java, _offload
from support.cli import s3_env

pytestmark = [pytest.mark.real_pulsar]

NAME = "export-orders"
TOPIC = NS + NAME


@pytest.fixture(scope="module")
def orders(real_pulsar: Any, tmp_path_factory: Any) -> dict[str, Any]:
    """The export topic, written in two phases (the first offloaded), compacted, with its truth."""
    rp = real_pulsar
    sa = rp.standalone
    work = tmp_path_factory.mktemp("export-topic")
    log = work / "java.log"
    produced = {}
    _java(
        ["corpus", "export", sa.service_url, sa.web_url, str(work / "v0.json"), TOPIC, "v0"], log, hosts=sa.hosts_path
    )
    produced["v0"] = json.loads((work / "v0.json").read_text())
    offloaded = _offload(sa, (NAME,))[NAME]
    _java(
        ["corpus", "export", sa.service_url, sa.web_url, str(work / "v1.json"), TOPIC, "v1"], log, hosts=sa.hosts_path
    )
    produced["v1"] = json.loads((work / "v1.json").read_text())
    _compact(sa, (NAME,))
    _java(
        ["corpus", "truth", sa.service_url, sa.web_url, str(work / "truth.json"), f"{NAME}:compacted:typed"],
        log,
        hosts=sa.hosts_path,
    )
    truth = json.loads((work / "truth.json").read_text())[NAME]
    return {"rp": rp, "offloaded": offloaded, "produced": produced, "truth": truth}


def cluster_args(rp: Any) -> list[str]:
    """The CLI's options for the fixture's cluster: its metadata store and its offload bucket (``where``'s)."""
    return [
        "--metadata-url",
        f"rocksdb:{rp.standalone.metadata_dir}",
        "--offload-uri",
        f"s3://{BUCKET}?endpoint_override=127.0.0.1:{rp.moto.port}&scheme=http",
    ]


def where(rp: Any) -> dict[str, Any]:
    return {
        "metadata_url": f"rocksdb:{rp.standalone.metadata_dir}",
        "offload_filesystem": rp.s3(),
        "offload_prefix": BUCKET,
    }


def target(fmt: str, tmp: Path, name: str) -> tuple[str, dict[str, Any]]:
    if fmt == "delta":
        return f"delta:{tmp / name}", {}
    return f"iceberg:lake.pulsar.{name.replace('-', '_')}", {"warehouse": str(tmp / "warehouse")}


def files_of(table: str, opts: dict[str, Any]) -> list[str]:
    """The Parquet files the table's current snapshot is made of, by its own library's reading."""
    kind, _, rest = table.partition(":")
    if kind == "delta":
        from deltalake import DeltaTable

        return [u.removeprefix("file://") for u in DeltaTable(rest).file_uris()]
    from pyiceberg.catalog.sql import SqlCatalog

    wh = opts["warehouse"]
    cat = SqlCatalog("lake", uri=f"sqlite:///{wh}/lake.db", warehouse=f"file://{wh}")
    parts = rest.split(".")
    tbl = cat.load_table((parts[1], parts[2]))
    return [t.file.file_path.removeprefix("file://") for t in tbl.scan().plan_files()]


def duck(table: str, opts: dict[str, Any], sql: str = "SELECT * FROM t") -> list[dict[str, Any]]:
    """The table's rows as DuckDB reads its data files (``t`` in ``sql``)."""
    import duckdb

    files = files_of(table, opts)
    con = duckdb.connect()
    if not files:
        return []
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({files!r}, union_by_name=true)")
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def java_ids(messages: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    return [(m["ledger_id"], m["entry_id"], m["batch_index"]) for m in messages if not m.get("stalled")]


def row_id(r: dict[str, Any]) -> tuple[int, int, int]:
    return (r["ledger_id"], r["entry_id"], r["batch_index"])


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_append_holds_every_committed_message_once_typed(orders: dict[str, Any], tmp_path: Path, fmt: str) -> None:
    rp, truth = orders["rp"], orders["truth"]
    table, opts = target(fmt, tmp_path, "orders")
    got = export_topic(TOPIC, table, max_entries_per_commit=7, **opts, **where(rp))
    assert got.commits > 3
    rows = duck(table, opts)
    dead = duck(table + "_dead_letters", opts)
    # What a Java Reader receives (committed transactions only, chunked messages whole), once each:
    # the undecodable message in the dead-letter table, every other in the table.
    want = java_ids(truth["messages"])
    mine = sorted(row_id(r) for r in rows)
    assert len(mine) == len(set(mine))
    assert sorted(mine + [row_id(r) for r in dead]) == sorted(want)
    assert [r["key"] for r in dead] == ["bad"] and "Avro" in dead[0]["error"]
    assert dead[0]["value"] == b"\xff\xff\xffx"
    # No aborted transaction's message; the committed ones are there.
    for ids in orders["produced"]["v0"]["aborted"]:
        for s in ids:
            ledger, entry, _, index = (int(x) for x in s.split(":"))
            assert (ledger, entry, index) not in mine
    assert got.rows == len(rows) and got.dead_letters == 1
    # Offloaded and live ledgers both.
    ledgers = {r["ledger_id"] for r in rows}
    assert ledgers & set(orders["offloaded"]) and ledgers - set(orders["offloaded"])
    # Typed as the AUTO_CONSUME Reader types them; version 0's messages read with the latest
    # version (qty takes its default), and the table has version 1's column.
    typed = {(m["ledger_id"], m["entry_id"], m["batch_index"]): m for m in truth["typed_messages"]}
    assert "qty" in rows[0]
    checked = 0
    for r in rows:
        v = typed[row_id(r)].get("value")
        if v is None:
            assert r["id"] is None  # a tombstone
            continue
        assert (r["id"], r["item"], r["price"], list(r["tags"])) == (v["id"], v["item"], v["price"], v["tags"])
        assert r["qty"] == v.get("qty", 7)
        assert r["key"] == typed[row_id(r)]["key"]
        checked += 1
    assert checked >= 50
    # A second run finds nothing new and commits nothing.
    again = export_topic(TOPIC, table, **opts, **where(rp))
    assert again.commits == 0
    assert len(duck(table, opts)) == len(rows)


def latest_per_key(messages: list[dict[str, Any]], dead_keys: set[str]) -> dict[str, Any]:
    """A compacted view's keys and their last message's id (tombstones delete)."""
    out: dict[str, Any] = {}
    for m in messages:
        if m.get("stalled") or m["key"] is None or m["key"] in dead_keys:
            continue
        if m["value"] is None or m["value"] == "":
            out.pop(m["key"], None)
        else:
            out[m["key"]] = (m["ledger_id"], m["entry_id"], m["batch_index"])
    return out


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_upsert_equals_compact_and_the_compacted_reader(orders: dict[str, Any], tmp_path: Path, fmt: str) -> None:
    rp, truth = orders["rp"], orders["truth"]
    table, opts = target(fmt, tmp_path, "latest")
    # Small commits: keys are rewritten and deleted across commits, not only within one.
    got = export_topic(TOPIC, table, mode="upsert", max_entries_per_commit=5, **opts, **where(rp))
    assert got.commits > 5
    rows = duck(table, opts)
    table_view = {r["key"]: row_id(r) for r in rows}
    assert len(table_view) == len(rows)
    # The broker's compacted view, as a readCompacted Reader receives it. The one difference: a
    # chunked message. The broker's compaction keeps only its last chunk, which no reader can
    # deliver, so the key drops out of that view; the table keeps the message whole.
    broker = latest_per_key(truth["compacted_messages"], {"bad"})
    assert "big" not in broker
    assert {k: v for k, v in table_view.items() if k != "big"} == broker
    big = [r for r in rows if r["key"] == "big"]
    assert len(big) == 1 and big[0]["item"] == "x" * 70_000
    # Our compact of the same topic (which keeps the chunked message whole too).
    entries = pe.read_topic(TOPIC, **where(orders["rp"]))
    compacted = pe.reassemble_chunks(pe.decode(pe.compact(entries.drop_columns(["error"]))))
    ours = {
        r["key"]: row_id(r)
        for r in compacted.to_pylist()
        if r["key"] != "bad" and r["value"] and r["marker_type"] is None and r["error"] is None
    }
    assert table_view == ours
    # Tombstoned keys are gone (k1, k2 deleted last in version 1).
    assert {"k1", "k2"}.isdisjoint(table_view) and {"k0", "k3", "big"} <= set(table_view)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_upsert_with_a_strategy_equals_compact_with_it(orders: dict[str, Any], tmp_path: Path, fmt: str) -> None:
    """PIP-215 in upsert mode: with ``FirstWins`` and small commits (so the table's value meets later
    messages of its key), the table equals our ``compact(strategy=FirstWins())`` of the topic, key for key,
    and each kept value's bytes are the message's."""
    from pulsar_entries.strategies import FirstWins

    rp = orders["rp"]
    table, opts = target(fmt, tmp_path, "first")
    got = export_topic(TOPIC, table, mode="upsert", strategy=FirstWins(), max_entries_per_commit=5, **opts, **where(rp))
    assert got.commits > 5
    rows = duck(table, opts)
    # A strategy's compaction rewrites the batches it keeps messages of (the survivors get new batch
    # indexes), so the comparison is by entry and value bytes.
    table_view = {r["key"]: (r["ledger_id"], r["entry_id"], r["value"]) for r in rows}
    assert len(table_view) == len(rows)
    entries = pe.read_topic(TOPIC, **where(rp))
    compacted = pe.reassemble_chunks(pe.decode(pe.compact(entries.drop_columns(["error"]), strategy=FirstWins())))
    ours = {
        r["key"]: (r["ledger_id"], r["entry_id"], r["value"])
        for r in compacted.to_pylist()
        if r["key"] != "bad" and r["value"] and r["marker_type"] is None and r["error"] is None
    }
    assert table_view == ours
    # Not what the latest-wins upsert keeps: the first values stayed.
    latest = export_topic(TOPIC, target(fmt, tmp_path, "latest2")[0], mode="upsert", **opts, **where(rp))
    assert latest.commits >= 1
    latest_rows = duck(target(fmt, tmp_path, "latest2")[0], opts)
    assert {k: v[:2] for k, v in table_view.items()} != {r["key"]: (r["ledger_id"], r["entry_id"]) for r in latest_rows}


# ------------------------------------------------------------------------------ kill and resume

CHILD = r"""
import os, signal, sys, threading
from pulsar_entries.export import _tables, export_topic
from pulsar_entries import _native
import pyarrow.fs as pafs
kind, point, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = __import__("json").loads(sys.argv[4])
n = 0
cls = _tables.DeltaTable if kind == "delta" else _tables.IcebergTable
orig = cls.commit
def commit(self, *a, **k):
    global n
    if not self.target.table.endswith("_dead_letters") and not self.target.location.endswith("_dead_letters"):
        n += 1
        if n == at:
            if point == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            if point == "during":
                threading.Timer(0.002, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
            out = orig(self, *a, **k)
            if point == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return out
    return orig(self, *a, **k)
cls.commit = commit
fs = pafs.S3FileSystem(**args.pop("s3"))
export_topic(args.pop("topic"), args.pop("table"), offload_filesystem=fs, **args)
"""


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_killed_at_three_points_then_resumed_no_duplicate_no_gap(
    orders: dict[str, Any], tmp_path: Path, fmt: str
) -> None:
    rp = orders["rp"]
    table, opts = target(fmt, tmp_path, "killed")
    s3 = {
        "access_key": S3_ACCESS_KEY,
        "secret_key": S3_SECRET_KEY,
        "region": S3_REGION,
        "endpoint_override": f"127.0.0.1:{rp.moto.port}",
        "scheme": "http",
    }
    args = {
        "topic": TOPIC,
        "table": table,
        "metadata_url": f"rocksdb:{rp.standalone.metadata_dir}",
        "offload_prefix": BUCKET,
        "max_entries_per_commit": 4,
        "s3": s3,
        **opts,
    }
    kills = 0
    for point, at in (("before", 2), ("during", 2), ("after", 3)):
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, fmt, point, str(at), json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        kills += 1
    assert kills == 3
    got = export_topic(TOPIC, table, max_entries_per_commit=4, **opts, **where(rp))
    assert got.commits > 0
    rows = duck(table, opts)
    dead = duck(table + "_dead_letters", opts)
    mine = [row_id(r) for r in rows] + [row_id(r) for r in dead]
    assert len(mine) == len(set(mine)), "a duplicate"
    assert sorted(mine) == sorted(java_ids(orders["truth"]["messages"])), "a gap"


# ------------------------------------------------------------------------------ follow, errors


def test_follow_catches_up_with_a_steady_producer(real_pulsar: Any, tmp_path: Path) -> None:
    import pulsar

    rp = real_pulsar
    topic = NS + "export-follow"
    table = f"delta:{tmp_path / 'follow'}"
    client = pulsar.Client(rp.standalone.service_url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=10)
    producer.send(b"first", partition_key="k")
    stop = threading.Event()
    commits: list[Any] = []
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["stats"] = export_topic(
                topic,
                table,
                metadata_url=f"rocksdb:{rp.standalone.metadata_dir}",
                follow=True,
                poll_interval=0.2,
                on_commit=commits.append,
                should_stop=stop.is_set,
            )
        except BaseException as e:  # the test's finding
            result["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    sent = 1
    try:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            producer.send_async(f"m{sent}".encode(), None, partition_key=f"k{sent % 5}")
            sent += 1
            time.sleep(0.005)
        producer.flush()
        stopped = time.monotonic()
        caught_up = None
        while time.monotonic() - stopped < 120:
            if sum(c.rows for c in commits) >= sent:
                caught_up = time.monotonic() - stopped
                break
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(60)
        producer.close()
        client.close()
    assert "error" not in result, result
    assert caught_up is not None, (sent, sum(c.rows for c in commits))
    print(f"export --follow: {sent} messages, caught up {caught_up:.2f} s after the producer stopped")
    from deltalake import DeltaTable

    values = DeltaTable(table.removeprefix("delta:")).to_pyarrow_table(columns=["value"])["value"].to_pylist()
    assert sorted(values) == sorted([b"first"] + [f"m{i}".encode() for i in range(1, sent)])
    assert len(commits) > 3


def test_bad_tables_are_one_line_errors(real_pulsar: Any, tmp_path: Path) -> None:
    rp = real_pulsar
    mu = {"metadata_url": f"rocksdb:{rp.standalone.metadata_dir}"}
    for table, match in (
        ("orders", "expected delta:<path or URI> or iceberg:"),
        ("parquet:/x", "unknown table format 'parquet'"),
        ("iceberg:onlyone", "iceberg: needs <catalog>.<namespace>.<table>"),
        ("delta:", "delta: needs a path"),
    ):
        with pytest.raises(ValueError, match=match) as e:
            export_topic(TOPIC, table, **mu)
        assert "\n" not in str(e.value)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # running as root: a file in the way instead
            (tmp_path / "file").write_text("x")
            with pytest.raises(ExportError, match="is a file, not a table directory"):
                export_topic(TOPIC, f"delta:{tmp_path / 'file'}", **mu)
        else:
            with pytest.raises(ExportError, match="is not writable"):
                export_topic(TOPIC, f"delta:{locked / 't'}", **mu)
    finally:
        locked.chmod(0o700)
    with pytest.raises(ExportError, match="cannot open catalog 'nowhere'") as e:
        export_topic(TOPIC, "iceberg:nowhere.ns.t", catalog_uri="http://127.0.0.1:9/", **mu)
    assert "\n" not in str(e.value)


def test_two_exporters_on_one_table_do_not_duplicate(orders: dict[str, Any], tmp_path: Path) -> None:
    """Of two exporters that read the table at the same version, the second cannot commit."""
    from pulsar_entries.export import ConcurrentExportError, Exporter

    rp = orders["rp"]
    for fmt in ("delta", "iceberg"):
        table, opts = target(fmt, tmp_path, f"race-{fmt}")
        a = Exporter(TOPIC, table, max_entries_per_commit=3, **opts, **where(rp))
        assert a.round() is not None  # creates the table
        b = Exporter(TOPIC, table, max_entries_per_commit=3, **opts, **where(rp))
        assert a.round() is not None
        # b read the table before a's second commit and does not look again.
        b.main.refresh = lambda: None  # type: ignore[method-assign]
        with pytest.raises(ConcurrentExportError, match="another writer committed first"):
            b.round()
        rows = duck(table, opts)
        ids = [row_id(r) for r in rows]
        assert len(ids) == len(set(ids)) and ids
        # a goes on to the end; the table then holds every message once.
        export_topic(TOPIC, table, **opts, **where(rp))
        ids = [row_id(r) for r in duck(table, opts)] + [row_id(r) for r in duck(table + "_dead_letters", opts)]
        assert sorted(ids) == sorted(java_ids(orders["truth"]["messages"]))


def test_cli_export_follows_until_ctrl_c_and_a_rerun_goes_on(orders: dict[str, Any], tmp_path: Path) -> None:
    rp = orders["rp"]
    out = tmp_path / "cli"
    cmd = [
        sys.executable,
        "-m",
        "pulsar_entries",
        "export",
        "--topic",
        NAME,
        "--to",
        f"delta:{out}",
        *cluster_args(rp),
        "--max-entries-per-commit",
        "3",
        "--poll-interval",
        "0.2",
    ]
    env = s3_env()
    proc = subprocess.Popen([*cmd, "--follow"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith("export: 1 commits,"), first
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "export stopped: the table holds what its" in rest, rest
    assert "Traceback" not in rest
    # A rerun goes on from what the table holds, and ends with every message once.
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"exported {TOPIC} to delta:{out}:" in done.stdout
    ids = [row_id(r) for r in duck(f"delta:{out}", {})] + [row_id(r) for r in duck(f"delta:{out}_dead_letters", {})]
    assert sorted(ids) == sorted(java_ids(orders["truth"]["messages"]))


@pytest.mark.parametrize("name", ["java-txn", "java-partitioned"])
def test_zookeeper_cluster_topics_export_as_java_readers_receive_them(
    real_pulsar_zk: Any, tmp_path: Path, name: str
) -> None:
    """Through a ZooKeeper store (kept open across commits): committed and aborted transactions,
    and a partitioned topic, whose partitions each table row names."""
    rp = real_pulsar_zk
    table = f"delta:{tmp_path / name}"
    got = export_topic(
        NS + name,
        table,
        metadata_url=f"zk:127.0.0.1:{rp.standalone.zookeeper_port}",
        offload_filesystem=rp.s3(),
        offload_prefix=BUCKET,
        max_entries_per_commit=4,
    )
    assert got.commits > 2
    rows = duck(table, {})
    mine = sorted((r["partition"], *row_id(r)) for r in rows)
    assert len(mine) == len(set(mine))
    truths = {k: v for k, v in rp.truth.items() if k == name or k.startswith(name + "-partition-")}
    want = sorted(
        (m["partition"], m["ledger_id"], m["entry_id"], m["batch_index"])
        for t in truths.values()
        for m in t["messages"]
    )
    assert mine == want
    if name == "java-partitioned":
        assert {r["partition"] for r in rows} == {0, 1, 2}


# ------------------------------------------------------------------------------ on Spark


#: The tests' strategies (``strategic_examples``), for a child's ``PYTHONPATH``.
SUPPORT = str(Path(__file__).resolve().parents[1] / "support")


def spark_export_command(rp: Any, table: str, *extra: str, path: str | None = None) -> tuple[list[str], dict[str, str]]:
    from support.delta_jars import delta_jars

    cmd = [
        sys.executable, "-m", "pulsar_entries", "--quiet", "--engine", "spark", "--master", "local[2]",
        "export", "--topic", NAME, "--to", table,
        *cluster_args(rp),
        "--spark-conf", "spark.jars=" + ",".join(delta_jars()),
        "--spark-conf", "spark.ui.enabled=false",
        *extra,
    ]  # fmt: skip
    env = s3_env()
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)
    return cmd, env


def spark_export(
    rp: Any, table: str, *extra: str, ok: bool = True, path: str | None = None, quiet: bool = True
) -> subprocess.CompletedProcess[str]:
    """``pulsar-entries export --engine spark`` in a child (its own Spark, with Delta's jars)."""
    cmd, env = spark_export_command(rp, table, *extra, path=path)
    if not quiet:
        cmd.remove("--quiet")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert (done.returncode == 0) == ok, done.stderr[-3000:]
    return done


def test_spark_export_to_delta_equals_the_in_process_export(orders: dict[str, Any], tmp_path: Path) -> None:
    """The same topic exported on Spark (a streaming query into Delta, small micro-batches) and in
    process: the same messages once each, the same typed values, the same dead letters; a rerun
    adds nothing; upsert equals the in-process upsert key for key."""
    rp, truth = orders["rp"], orders["truth"]
    # In process, the reference.
    ref, ref_latest = f"delta:{tmp_path / 'ref'}", f"delta:{tmp_path / 'ref_latest'}"
    export_topic(TOPIC, ref, **where(rp))
    export_topic(TOPIC, ref_latest, mode="upsert", **where(rp))
    table, latest = f"delta:{tmp_path / 'spark'}", f"delta:{tmp_path / 'spark_latest'}"
    first = spark_export(rp, table, "--max-entries-per-commit", "10", "--on-entry-error", "dead-letter")
    assert "micro-batches" in first.stdout and "1 in the dead-letter table" in first.stdout, first.stdout
    rows = duck(table, {})
    mine = sorted(row_id(r) for r in rows)
    assert len(mine) == len(set(mine))
    dead = duck(table + "_dead_letters", {})
    assert sorted(mine + [row_id(r) for r in dead]) == sorted(java_ids(truth["messages"]))
    assert [r["key"] for r in dead] == ["bad"] and "Avro" in dead[0]["error"]
    want = {row_id(r): r for r in duck(ref, {})}
    assert set(mine) == set(want)
    cols = ("key", "id", "item", "price", "qty", "producer_name", "sequence_id", "partition")
    for r in rows:
        assert {c: r[c] for c in cols} == {c: want[row_id(r)][c] for c in cols}, row_id(r)
        assert list(r["tags"] or []) == list(want[row_id(r)]["tags"] or [])
    # The query's checkpoint: a rerun reads nothing new and writes nothing.
    again = spark_export(rp, table)
    assert "nothing new" in again.stdout, again.stdout
    assert len(duck(table, {})) == len(rows)
    # Upsert: each key's latest message, tombstones deleting, as in process.
    spark_export(rp, latest, "--mode", "upsert", "--max-entries-per-commit", "10", "--on-entry-error", "dead-letter")
    got = {r["key"]: (row_id(r), r["item"]) for r in duck(latest, {})}
    ref_rows = {r["key"]: (row_id(r), r["item"]) for r in duck(ref_latest, {})}
    assert got == ref_rows
    assert {"k1", "k2"}.isdisjoint(got) and {"k0", "k3", "big"} <= set(got)
    # A strategy that merges (each value as itself, so the latest wins): every kept value is a merged one,
    # folded on the driver onto the table's values and typed again from its bytes. The table keeps the
    # value bytes, and its typed columns are the latest-wins upsert's.
    merged = f"delta:{tmp_path / 'spark_merged'}"
    strategy = "strategic_examples:MergeKeepsCurrent"
    spark_export(rp, merged, "--mode", "upsert", "--strategy", strategy, "--max-entries-per-commit", "20",
                 "--on-entry-error", "dead-letter", path=SUPPORT)  # fmt: skip
    rows = duck(merged, {})
    assert {r["key"]: (row_id(r), r["item"], r["price"]) for r in rows} == {
        r["key"]: (row_id(r), r["item"], r["price"]) for r in duck(ref_latest, {})
    }
    assert all(r["value"] for r in rows)


def test_a_merged_value_is_typed_again_from_its_bytes(orders: dict[str, Any]) -> None:
    """When a strategy merges, the Spark export types the merged value again (the source typed the
    message's own): a row whose value became another message's gets that message's typed columns,
    one whose value is not the schema's gets an error and null typed columns, the rest stay."""
    from pulsar_entries.schemas import topic_schemas, typed
    from pulsar_entries.spark._export import retype

    rp = orders["rp"]
    schema = topic_schemas(TOPIC, metadata_url=where(rp)["metadata_url"])
    decoded = pe.reassemble_chunks(pe.decode(pe.read_topic(TOPIC, **where(rp)).drop_columns(["error"])))
    rows = typed(decoded, schema, value_column=True)
    rows = rows.filter(pc.is_valid(rows["item"]))
    # Two messages written with one schema version, with different items.
    version = rows["schema_version"][0]
    same = rows.filter(pc.equal(rows["schema_version"], version))
    a, b = same.slice(0, 1), next(same.slice(i, 1) for i in range(same.num_rows) if same["item"][i] != same["item"][0])
    c = same.slice(1, 1)
    columns = [name for name in rows.column_names if name not in decoded.column_names]
    won = pa.concat_tables([a, b, c])
    at = won.schema.get_field_index("value")
    values = won["value"].to_pylist()
    won = won.set_column(at, won.schema.field(at), pa.array([values[1], values[1], b"\xff\xff"], won["value"].type))
    out = retype(won, [True, False, True], columns, schema).to_pylist()
    unmerged, a_now, c_now = out
    assert unmerged["item"] == b["item"][0].as_py() and unmerged["error"] is None
    assert (a_now["ledger_id"], a_now["entry_id"]) == (a["ledger_id"][0].as_py(), a["entry_id"][0].as_py())
    assert {k: a_now[k] for k in columns} == {k: b.to_pylist()[0][k] for k in columns} and a_now["error"] is None
    assert c_now["error"] and all(c_now[k] is None for k in columns), c_now


def test_spark_export_to_iceberg_equals_the_in_process_export(orders: dict[str, Any], tmp_path: Path) -> None:
    """Iceberg on Spark (the executors read and type, the driver commits each micro-batch through
    pyiceberg): the same rows and dead letters as the in-process export, once each; a rerun adds
    nothing; upsert equals the in-process upsert key for key."""
    rp, truth = orders["rp"], orders["truth"]
    wh = {"warehouse": str(tmp_path / "warehouse")}
    ref, ref_latest = "iceberg:lake.pulsar.ref", "iceberg:lake.pulsar.ref_latest"
    export_topic(TOPIC, ref, **wh, **where(rp))
    export_topic(TOPIC, ref_latest, mode="upsert", **wh, **where(rp))
    table, latest = "iceberg:lake.pulsar.spark", "iceberg:lake.pulsar.spark_latest"
    flags = ("--warehouse", wh["warehouse"], "--max-entries-per-commit", "10", "--on-entry-error", "dead-letter")
    first = spark_export(rp, table, *flags, quiet=False)
    assert "micro-batches" in first.stdout and "1 in the dead-letter table" in first.stdout, first.stdout
    rows = duck(table, wh)
    # Without --quiet, a progress line per committed micro-batch; the last has the totals.
    lines = re.findall(r"export: (\d+) micro-batches, ([\d,]+) rows, ([\d,]+) dead letters, backlog", first.stderr)
    assert len(lines) >= 2, first.stderr[-3000:]
    assert [int(n.replace(",", "")) for n in lines[-1][1:]] == [len(rows), 1], lines
    mine = sorted(row_id(r) for r in rows)
    assert len(mine) == len(set(mine))
    dead = duck(table + "_dead_letters", wh)
    assert sorted(mine + [row_id(r) for r in dead]) == sorted(java_ids(truth["messages"]))
    assert [r["key"] for r in dead] == ["bad"] and "Avro" in dead[0]["error"]
    want = {row_id(r): r for r in duck(ref, wh)}
    assert set(mine) == set(want)
    cols = ("key", "id", "item", "price", "qty", "producer_name", "sequence_id", "partition")
    for r in rows:
        assert {c: r[c] for c in cols} == {c: want[row_id(r)][c] for c in cols}, row_id(r)
    again = spark_export(rp, table, "--warehouse", wh["warehouse"])
    assert "nothing new" in again.stdout, again.stdout
    assert len(duck(table, wh)) == len(rows)
    spark_export(rp, latest, "--mode", "upsert", *flags)
    got = {r["key"]: (row_id(r), r["item"]) for r in duck(latest, wh)}
    assert got == {r["key"]: (row_id(r), r["item"]) for r in duck(ref_latest, wh)}
    assert {"k1", "k2"}.isdisjoint(got) and {"k0", "k3", "big"} <= set(got)
    # A PIP-215 strategy on Spark, micro-batches of 5 entries: the table equals the in-process export
    # with the same strategy (which equals compact(strategy=FirstWins()), tested above), value bytes too.
    from pulsar_entries.strategies import FirstWins

    first, ref_first = "iceberg:lake.pulsar.spark_first", "iceberg:lake.pulsar.ref_first"
    export_topic(TOPIC, ref_first, mode="upsert", strategy=FirstWins(), **wh, **where(rp))
    spark_export(rp, first, "--mode", "upsert", "--strategy", "first-wins", *flags[:2],
                 "--max-entries-per-commit", "20", "--on-entry-error", "dead-letter")  # fmt: skip
    view = {r["key"]: (r["ledger_id"], r["entry_id"], r["value"], r["item"]) for r in duck(first, wh)}
    assert view == {r["key"]: (r["ledger_id"], r["entry_id"], r["value"], r["item"]) for r in duck(ref_first, wh)}
    assert {k: v[:2] for k, v in view.items()} != {k: v[0][:2] for k, v in got.items()}  # not latest-wins


def test_spark_export_killed_then_rerun_leaves_no_duplicate_and_no_gap(orders: dict[str, Any], tmp_path: Path) -> None:
    """The Spark export's driver (and its JVM) killed with SIGKILL once micro-batches have committed,
    maybe during one; the rerun, from the same checkpoint, ends with every message once."""
    rp = orders["rp"]
    table = tmp_path / "killed"
    cmd, env = spark_export_command(rp, f"delta:{table}", "--max-entries-per-commit", "2")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len(list((table / "_delta_log").glob("*.json"))) < 4:
            assert proc.poll() is None, "the export ended before it could be killed"
            assert time.monotonic() < deadline, "no micro-batch committed in time"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = len(list((table / "_delta_log").glob("*.json")))
    spark_export(rp, f"delta:{table}")
    rows = duck(f"delta:{table}", {})
    ids = [row_id(r) for r in rows]
    assert len(ids) == len(set(ids))
    dead = [row_id(r) for r in duck(f"delta:{table}_dead_letters", {})]
    assert sorted(ids + dead) == sorted(java_ids(orders["truth"]["messages"]))
    assert len(list((table / "_delta_log").glob("*.json"))) > killed_at


def test_spark_export_follows_until_ctrl_c(orders: dict[str, Any], tmp_path: Path) -> None:
    """``--follow`` on Spark: a micro-batch a second until Ctrl-C, which stops the query (its micro-batch
    lands whole or not at all) and exits 130; by then the table holds the topic."""
    rp = orders["rp"]
    table = tmp_path / "followed"
    cmd, env = spark_export_command(rp, f"delta:{table}", "--follow", "--poll-interval", "1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    want = sorted(java_ids(orders["truth"]["messages"]))
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the table never held the topic"
            committed = [list((Path(f"{t}") / "_delta_log").glob("*.json")) for t in (table, f"{table}_dead_letters")]
            if all(committed):  # both tables have a commit (a log folder comes before its first commit)
                got = [row_id(r) for r in duck(f"delta:{table}", {})]
                dead = [row_id(r) for r in duck(f"delta:{table}_dead_letters", {})]
                if sorted(got + dead) == want:
                    break
            time.sleep(1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "export stopped: the table holds the micro-batches the query committed" in err and "Traceback" not in err
    assert sorted(row_id(r) for r in duck(f"delta:{table}", {})) == sorted(set(want) - set(dead))
