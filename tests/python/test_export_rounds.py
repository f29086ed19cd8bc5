"""The exporter's rounds (``pulsar_entries.export._run``) without a cluster: however a topic's
messages are cut into rounds, every message of a committed transaction or of none is written
exactly once, at its decision point, and no message of an aborted transaction is."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_entries import _native
from pulsar_entries.export._run import TXN_ABORT, TXN_COMMIT, _PartitionPass
from pulsar_entries.export._tables import ExportError, TableTarget

SCHEMA = pa.schema(
    [
        ("ledger_id", pa.int64()),
        ("entry_id", pa.int64()),
        ("partition", pa.int32()),
        ("batch_index", pa.int32()),
        ("key", pa.string()),
        ("value", pa.binary()),
        ("publish_time", pa.timestamp("ms", tz="UTC")),
        ("marker_type", pa.int32()),
        ("txnid_most_bits", pa.int64()),
        ("txnid_least_bits", pa.int64()),
        ("error", pa.string()),
    ]
)


@st.composite
def topics(draw: Any) -> list[dict[str, Any]]:
    """Entries of one partition: plain messages, transactional ones, and their end markers (a
    transaction may stay open)."""
    rows: list[dict[str, Any]] = []
    open_: list[int] = []
    next_txn = 0
    for entry in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["plain", "txn", "end", "bad"]))
        row = {
            "ledger_id": 7 + entry // 10,
            "entry_id": entry % 10,
            "partition": -1,
            "batch_index": -1,
            "key": f"k{entry}",
            "value": b"v%d" % entry,
            "publish_time": 1_000 * entry,
            "marker_type": None,
            "txnid_most_bits": None,
            "txnid_least_bits": None,
            "error": None,
        }
        if kind == "txn":
            if not open_ or draw(st.booleans()):
                open_.append(next_txn)
                next_txn += 1
            row["txnid_most_bits"], row["txnid_least_bits"] = 0, draw(st.sampled_from(open_))
        elif kind == "end" and open_:
            t = draw(st.sampled_from(open_))
            open_.remove(t)
            row.update(value=None, key=None, marker_type=draw(st.sampled_from([TXN_COMMIT, TXN_ABORT])))
            row["txnid_most_bits"], row["txnid_least_bits"] = 0, t
        elif kind == "bad":
            row.update(value=None, error=f"bad entry {entry}")
        rows.append(row)
    return rows


def expected(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(messages written in decision order, entry errors) as a whole-topic pass sees them."""
    held: dict[int, list[str]] = {}
    out: list[str] = []
    for r in rows:
        if r["error"] is not None:
            continue
        if r["marker_type"] is not None:
            done = held.pop(r["txnid_least_bits"], [])
            if r["marker_type"] == TXN_COMMIT:
                out += done
        elif r["txnid_least_bits"] is not None:
            held.setdefault(r["txnid_least_bits"], []).append(r["key"])
        else:
            out.append(r["key"])
    return out, [r["error"] for r in rows if r["error"] is not None]


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@settings(max_examples=300, deadline=None)
@given(topics(), st.lists(st.integers(0, 40), max_size=8), st.integers(1, 5))
def test_any_cut_into_rounds_writes_each_message_once(rows: list[dict[str, Any]], cuts: list[int], slice_: int) -> None:
    positions = [(r["ledger_id"], r["entry_id"]) for r in rows]
    ends = sorted({min(c, len(rows)) for c in cuts} | {len(rows)})
    written: list[str] = []
    errors: list[str] = []
    main_next = dead_next = resume = (-1, -1)
    for end in ends:
        end_pos = positions[end] if end < len(rows) else (99, 0)
        p = _PartitionPass("t", -1, main_next, dead_next, set())
        todo = [r for r, pos in zip(rows, positions) if resume <= pos < end_pos]
        for i in range(0, len(todo), slice_):  # the reader's slices
            p.take(table(todo[i : i + slice_]))
        written += [k for t in p.ready for k in t["key"].to_pylist()]
        errors += [e for t in p.entry_errors for e in t["error"].to_pylist()]
        resume, given_up = p.finish(end_pos, timeout_ms=10**12, now_ms=0)
        assert not given_up
        main_next = dead_next = end_pos
    want, want_errors = expected(rows)
    assert written == want
    assert errors == want_errors


def test_a_transaction_undecided_past_the_timeout_is_given_up() -> None:
    rows = [
        {"ledger_id": 1, "entry_id": 0, "partition": -1, "batch_index": -1, "key": "a", "value": b"x",
         "publish_time": 0, "marker_type": None, "txnid_most_bits": 0, "txnid_least_bits": 5, "error": None},
        {"ledger_id": 1, "entry_id": 1, "partition": -1, "batch_index": -1, "key": "b", "value": b"y",
         "publish_time": 0, "marker_type": None, "txnid_most_bits": None, "txnid_least_bits": None, "error": None},
    ]  # fmt: skip
    p = _PartitionPass("t", -1, (-1, -1), (-1, -1), set())
    p.take(table(rows))
    resume, given_up = p.finish((1, 2), timeout_ms=60_000, now_ms=30_000)
    assert resume == (1, 0) and not given_up  # held: read again from its first message
    resume, given_up = p.finish((1, 2), timeout_ms=60_000, now_ms=61_000)
    assert resume == (1, 2) and [tid for tid, _ in given_up] == [(0, 5)] and given_up[0][1].count == 1
    assert [k for t in p.ready for k in t["key"].to_pylist()] == ["b"]


def test_table_targets_parse_or_say_what_is_wrong() -> None:
    assert TableTarget.parse("delta:/lake/orders") == TableTarget("delta", "/lake/orders")
    t = TableTarget.parse("iceberg:lake.sales.orders")
    assert (t.catalog, t.namespace, t.table) == ("lake", ("sales",), "orders")
    assert str(t.dead_letters()) == "iceberg:lake.sales.orders_dead_letters"
    assert str(TableTarget.parse("delta:s3://AKIA:SECRET@bucket/t")) == "delta:s3://***@bucket/t"
    assert _native is not None


def test_a_table_takes_new_and_widened_columns_and_refuses_a_changed_type(tmp_path: Any) -> None:
    from pulsar_entries.export._tables import DeltaTable, ExportError, IcebergTable, Progress

    m = pa.map_(pa.string(), pa.string())

    def rows(key: str, qty: Any, **extra: Any) -> pa.Table:
        cols = {"partition": pa.array([-1], pa.int32()), "key": [key], "qty": qty, "m": pa.array([[("a", key)]], m)}
        return pa.table({**cols, **extra})

    for table in (
        DeltaTable(TableTarget.parse(f"delta:{tmp_path / 'd'}")),
        IcebergTable(TableTarget.parse("iceberg:lake.ns.t"), warehouse=str(tmp_path / "wh")),
    ):
        table.commit(rows("a", pa.array([1], pa.int64())), Progress("t", 1, {"t": (1, 1)}))
        # A later version adds a field and writes an int where the table has a long.
        table.commit(rows("b", pa.array([2], pa.int32()), new=[1.5]), Progress("t", 2, {"t": (1, 2)}))
        schema = table.schema()
        assert schema is not None and schema.names == ["partition", "key", "qty", "m", "new"]
        assert schema.field("qty").type == pa.int64()
        with pytest.raises(
            ExportError, match="column 'qty' is int64 in the table, but the topic's schema now gives string"
        ):
            table.commit(rows("c", ["seven"]), Progress("t", 3, {"t": (1, 3)}))
        assert table.progress("t") == Progress("t", 2, {"t": (1, 2)}, {"t": (1, 2)})


def test_an_iceberg_micro_batch_commits_once_per_query_and_batch(tmp_path: Any) -> None:
    """The Spark export's Iceberg commits: a micro-batch Spark runs again (after a crash, from its
    checkpoint) is skipped by what the snapshots record; another query's batches are its own; an
    upsert batch replaces its keys' rows and a tombstone deletes."""
    from pulsar_entries.export._tables import TOMBSTONE, IcebergTable

    table = IcebergTable(TableTarget.parse("iceberg:lake.ns.t"), warehouse=str(tmp_path / "wh"))

    def rows(keys: list[str], entry: int, dead: list[bool] | None = None) -> pa.Table:
        n = len(keys)
        t = pa.table(
            {
                "partition": pa.array([-1] * n, pa.int32()),
                "key": keys,
                "ledger_id": pa.array([1] * n, pa.int64()),
                "entry_id": pa.array([entry + i for i in range(n)], pa.int64()),
                "batch_index": pa.array([None] * n, pa.int32()),
                "v": [f"{k}@{entry}" for k in keys],
            }
        )
        return t if dead is None else t.append_column(TOMBSTONE, pa.array(dead))

    def current() -> list[tuple[str, str]]:
        return sorted(zip(*(table._table.scan().to_arrow()[c].to_pylist() for c in ("key", "v"))))

    assert table.batch_done("q1") is None
    assert table.commit_batch(rows(["a", "b"], 0), "q1", 0)
    assert table.commit_batch(rows(["c"], 2), "q1", 1)
    assert not table.commit_batch(rows(["c"], 2), "q1", 1)  # run again: nothing written
    assert not table.commit_batch(rows(["a", "b"], 0), "q1", 0)
    assert table.batch_done("q1") == 1 and len(current()) == 3
    assert table.commit_batch(rows(["d"], 3), "q2", 0)  # another query (a new checkpoint)
    assert table.batch_done("q1") == 1 and table.batch_done("q2") == 0 and len(current()) == 4

    up = IcebergTable(TableTarget.parse("iceberg:lake.ns.u"), warehouse=str(tmp_path / "wh"))
    table = up
    assert up.commit_batch(rows(["a", "b"], 0, [False, False]), "q", 0, upsert=True)
    assert up.commit_batch(rows(["a", "b"], 5, [False, True]), "q", 1, upsert=True)
    assert not up.commit_batch(rows(["a"], 9, [False]), "q", 1, upsert=True)
    assert current() == [("a", "a@5")]


def test_the_spark_export_progress_line() -> None:
    from pulsar_entries.cli._export import spark_progress_line
    from pulsar_entries.export import ExportStats

    total = ExportStats(commits=4, rows=12_000, deleted=30, dead_letters=2, lag_entries=1_500)
    assert spark_progress_line(total, 2_345.6, upsert=True) == (
        "export: 4 micro-batches, 12,000 rows, 30 deleted, 2 dead letters, backlog 1,500 entries at the last plan, "
        "2,346 rows/s"
    )
    assert ", 30 deleted" not in spark_progress_line(total, 1.0)


def test_the_export_progress_line_and_bar(capsys: pytest.CaptureFixture[str]) -> None:
    """Logs get one line per commit; a terminal gets a tqdm bar of the entries exported against those
    plus the lag, with bytes, rates, time left and the commit's figures."""
    from pulsar_entries.cli._export import commit_note, progress_line
    from pulsar_entries.cli._progress import Bar
    from pulsar_entries.export import ExportStats

    total = ExportStats(commits=3, entries=750, rows=7500, dead_letters=2, bytes=3 * 2**20)
    plain = progress_line(total, 250, 1234.4)
    assert plain == (
        "export: 3 commits, 750 entries, 3.0 MiB, 7,500 rows, 2 dead letters, lag 250 entries, 1,234 entries/s"
    )
    note = commit_note(total, 250, upsert=True)
    assert note == "3 commits, 7,500 rows, 0 deleted, 2 dead letters, lag 250"
    bar = Bar(True, "export")
    bar.set_total(1_000)
    bar.update(750, 3 * 2**20, note=note)
    bar.close()
    drawn = capsys.readouterr().err.split("\r")[-1]
    assert drawn.startswith("export:  75%|") and "| 750/1.00k [00:00<00:00, " in drawn, drawn
    assert " entries/s, 3.0 MiB, " in drawn and drawn.rstrip().endswith(f" MiB/s, {note}]"), drawn
    quiet = Bar(False, "export", total=10)
    quiet.update(10, 100)
    quiet.close()
    assert capsys.readouterr().err == "" and quiet.bytes == 100


def test_cli_spark_export_settings_and_its_one_line_errors(capsys: Any) -> None:
    """``export --engine spark``: Delta's settings unless the jars are named, the cluster options as the
    streaming source's, and each mistake a one-line error before Spark starts."""
    import argparse

    from pulsar_entries.cli import main
    from pulsar_entries.cli._export import spark_conf, stream_options
    from pulsar_entries.export._tables import DELTA_CONF, DELTA_PACKAGE

    conf = spark_conf(argparse.Namespace(spark_conf=["spark.ui.enabled=false"]))
    assert conf == {"spark.ui.enabled": "false", "spark.jars.packages": DELTA_PACKAGE, **DELTA_CONF}
    conf = spark_conf(argparse.Namespace(spark_conf=["spark.jars=/j/a.jar,/j/b.jar"]))
    assert conf["spark.jars"] == "/j/a.jar,/j/b.jar" and "spark.jars.packages" not in conf
    # An Iceberg table is committed through pyiceberg: the session gets no Delta.
    assert spark_conf(argparse.Namespace(spark_conf=["a=b"]), delta=False) == {"a": "b"}
    base = ["export", "--topic", "orders", "--metadata-url", "zk:127.0.0.1:1"]
    cases = [
        (
            [*base, "--to", "delta:/tmp/x", "--spark-conf", "a=b"],
            "--spark-conf and --checkpoint are for --engine spark",
        ),
        (
            ["--engine", "spark", *base, "--to", "delta:/tmp/x", "--spark-conf", "nokey"],
            "--spark-conf must be KEY=VALUE",
        ),
        ([*base, "--to", "delta:/tmp/x", "--strategy", "first-wins"], "give --mode upsert"),
        (["--engine", "spark", *base, "--to", "delta:/tmp/x", "--strategy", "first-wins"], "give --mode upsert"),
        (["--engine", "spark", *base, "--to", "delta:/tmp/x", "--mode", "upsert", "--strategy", "best-wins"],
         "--strategy must be one of"),
    ]  # fmt: skip
    for args, message in cases:
        assert main(args) != 0
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    ns = argparse.Namespace(
        bookie_dir=None, metadata_url="zk:h:2181", admin_token=None, auth_plugin=None, auth_params=None,
        tls_trust_certs_file=None, tls_no_hostname_verification=True, zk_ca_file="/ca.pem", zk_cert_file=None,
        zk_key_file=None, zk_digest_user=None, zk_sasl_user=None, zk_password_file=None,
        bookkeeper_tls_trust_certs_file=None, bookkeeper_tls_certificate_file=None, bookkeeper_tls_key_file=None,
        bookkeeper_tls_hostname_verification=None, bookie_address=["b1=127.0.0.1:3181"], offload_uri="s3://b",
        timeout=5.0, max_entries_per_commit=7, skip_data_loss=True,
    )  # fmt: skip
    assert stream_options(ns, {"k": "/k.pem"}) == {
        "metadataUrl": "zk:h:2181",
        "adminTlsHostnameVerification": "false",
        "zkCaFile": "/ca.pem",
        "bookieAddresses": "b1=127.0.0.1:3181",
        "offloadPath": "s3://b",
        "cryptoKeyFiles": "k=/k.pem",
        "timeout": "5.0",
        "maxEntriesPerTrigger": "7",
        "failOnDataLoss": "false",
    }
    # A ZooKeeper user's password: the file, else the variable the CLI reads it from (named, never copied).
    ns.zk_digest_user = "reader"
    assert stream_options(ns, None)["zkPasswordEnv"] == "PULSAR_ENTRIES_ZK_PASSWORD"
    ns.zk_password_file = "/pw"
    assert "zkPasswordEnv" not in stream_options(ns, None) and stream_options(ns, None)["zkPasswordFile"] == "/pw"


def test_a_failed_spark_export_says_what_its_micro_batch_raised() -> None:
    """The one line a failed export query gives: the exception its micro-batch raised (ours by its message
    alone), not Spark's wrapping of it. The text is a real failed query's, shortened."""
    from pulsar_entries.spark._export import _first_line

    def failed(raised: str) -> str:
        return (
            "[STREAM_FAILED] Query [id = cd27, runId = a36b] terminated with exception: [FOREACH_BATCH_USER_FUNCTION_ERROR]"
            " An error occurred in the user provided function in foreach batch sink. Reason: An exception was raised"
            " by the Python Proxy. Return Message: Traceback (most recent call last):\n"
            '  File "/x/pulsar_entries/spark/_export.py", line 144, in __call__\n'
            "    self._merge(rows, cols, app, batch_id)\n"
            f"{raised}\n SQLSTATE: 39000 SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: [id = cd27]\n"
            "Current Committed Offsets: {}\npyspark.errors.exceptions.captured.StreamingQueryException: not this\n"
        )

    ours = "pulsar_entries.export._tables.ExportError: export of micro-batch 3: entry 7:2 of partition 0 cannot be read"
    assert _first_line(failed(ours)) == "export of micro-batch 3: entry 7:2 of partition 0 cannot be read"
    theirs = (
        "pyspark.errors.exceptions.captured.AnalysisException: [UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY] Unsupported"
        " data source type for direct query on files: delta SQLSTATE: 0A000; line 1 pos 11"
    )
    assert _first_line(failed(theirs)).startswith("AnalysisException: [UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY]")


def test_upsert_with_a_strategy_folds_the_tables_value_then_the_round_in_position_order() -> None:
    """``export_topic(mode="upsert", strategy=...)``'s fold, on one round: the table's value first, then the
    round's messages by position (not in the order they were decided), as ``compact(strategy=...)`` folds
    them; only the keys whose value changes come out, merged values at the latest contributing message."""
    from types import SimpleNamespace

    from pulsar_entries.export._run import Exporter
    from pulsar_entries.strategies import FirstWins, _Adapter

    class Concat:
        def should_keep_left(self, prev: Any, cur: Any) -> bool:
            return cur is not None and cur.startswith(b"no")

        def is_merge_enabled(self) -> bool:
            return True

        def merge(self, prev: bytes, cur: bytes) -> bytes:
            return prev + b"+" + cur

    def rows(*msgs: tuple[str, int, bytes | None]) -> pa.Table:
        return pa.table(
            {
                "partition": pa.array([0] * len(msgs), pa.int32()),
                "key": [k for k, _, _ in msgs],
                "ledger_id": pa.array([7] * len(msgs), pa.int64()),
                "entry_id": pa.array([e for _, e, _ in msgs], pa.int64()),
                "batch_index": pa.array([None] * len(msgs), pa.int32()),
                "value": pa.array([v for _, _, v in msgs], pa.binary()),
            }
        )

    # The table holds a@5=A and d@5=D.
    table = rows(("a", 5, b"A"), ("d", 5, b"D"))
    main = SimpleNamespace(current=lambda r, cols: table.select(list(cols)))

    def fold(strategy: Any, batch: pa.Table) -> list[tuple[str, int, bytes | None]]:
        me = SimpleNamespace(strategy=_Adapter(strategy), main=main, target="t", topic="t")
        out = Exporter._strategic(me, batch)  # type: ignore[arg-type]
        return list(zip(out["key"].to_pylist(), out["entry_id"].to_pylist(), out["value"].to_pylist()))

    # Decided out of position order: b@9 before b@8. An older message than the table's (a@4) is not applied.
    batch = rows(("b", 9, b"B9"), ("a", 6, b"A6"), ("b", 8, b"B8"), ("a", 4, b"A4"), ("d", 6, None), ("c", 7, b""))
    # FirstWins: a keeps A; b's first is B8; tombstones are accepted (PIP-215's FirstWins deletes).
    assert sorted(fold(FirstWins(), batch)) == [("b", 8, b"B8"), ("c", 7, b""), ("d", 6, None)]
    got = sorted(fold(Concat(), batch))
    assert got == [("a", 6, b"A+A6"), ("b", 9, b"B8+B9"), ("c", 7, b""), ("d", 6, None)]
    # A rejected update leaves the key out; an accepted one after it merges with what was kept.
    assert fold(Concat(), rows(("a", 6, b"no"), ("a", 7, b"yes"))) == [("a", 7, b"A+yes")]
    # A table kept without the value column cannot take a strategy.
    bare = SimpleNamespace(current=lambda r, cols: None)
    me = SimpleNamespace(strategy=_Adapter(FirstWins()), main=bare, target="delta:t", topic="t")
    with pytest.raises(ExportError, match="kept without a strategy"):
        Exporter._strategic(me, batch)  # type: ignore[arg-type]
