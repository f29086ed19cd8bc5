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
from pulsar_entries.export._tables import TableTarget

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
