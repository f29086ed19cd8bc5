"""SQL on a topic, on one machine (issue 29): ``pulsar_entries.sql`` and ``pulsar-entries sql`` over real Pulsar
4.2.4 topics, answered by DuckDB over the topic read straight from storage, equal to the same query over what a
Java Reader received; a ``publish_time`` window is sought, not scanned (the entries the seek reads are counted)."""

from __future__ import annotations

import base64
import datetime as dt
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.csv as pcsv
import pytest

from pulsar_entries._cluster.scan import ReadCounter
from pulsar_entries._redact import filesystem_from_uri
from pulsar_entries.query import scan_topic, sql

from .conftest import NS
from .test_spark_topic_source import make_seek_topic, offload_path, zk_url
from support.cli import run_cli

pytestmark = pytest.mark.real_pulsar

GROUP_BY = (
    "SELECT key, count(*) AS n, sum(octet_length(value)) AS bytes FROM topic "
    "WHERE txn_status IS DISTINCT FROM 'aborted' GROUP BY key ORDER BY key NULLS FIRST"
)


def java_answer(messages: list[dict[str, Any]]) -> list[tuple[Any, int, int]]:
    """GROUP_BY over what the Java Reader received."""
    n: Counter[Any] = Counter()
    size: Counter[Any] = Counter()
    for m in messages:
        n[m["key"]] += 1
        size[m["key"]] += len(base64.b64decode(m["value"])) if m["value"] is not None else 0
    return sorted(((k, n[k], size[k]) for k in n), key=lambda t: (t[0] is not None, t[0] or ""))


@pytest.mark.parametrize("topic", ["java-txn", "java-chunked", "java-mixed"])
def test_group_by_equals_the_java_readers_messages(real_pulsar_zk: Any, topic: str) -> None:
    rp = real_pulsar_zk
    got = sql(GROUP_BY, NS + topic, metadata_url=zk_url(rp))
    rows = [(r["key"], r["n"], r["bytes"]) for r in got.to_pylist()]
    assert rows == java_answer(rp.truth[topic]["messages"])
    assert sum(r[1] for r in rows) == len(rp.truth[topic]["messages"]) > 0


def test_the_cli_answers_the_same(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    out = tmp_path / "answer.csv"
    run_cli("sql", GROUP_BY, "--topic", "java-txn", "--metadata-url", zk_url(rp), "--out", str(out))
    table = pcsv.read_csv(out)
    rows = [(r["key"], r["n"], r["bytes"]) for r in table.to_pylist()]
    assert rows == java_answer(rp.truth["java-txn"]["messages"])
    # Printed: a header, the rows, and how many.
    shown = run_cli("sql", "SELECT count(*) AS n FROM topic", "--topic", "java-txn", "--metadata-url", zk_url(rp))
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["n"] and lines[-1] == "(1 rows)"
    # A query DuckDB cannot run is one line that says why.
    bad = run_cli("sql", "SELECT nope FROM topic", "--topic", "java-txn", "--metadata-url", zk_url(rp), ok=False)
    assert "the query:" in bad.stderr and "nope" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def seek_topic(real_pulsar_zk: Any) -> dict[str, Any]:
    return make_seek_topic(real_pulsar_zk, "sql-seek")


def test_a_publish_time_window_is_sought_in_log_n_entries(real_pulsar_zk: Any, seek_topic: dict[str, Any]) -> None:
    rp = real_pulsar_zk
    truth, topic = seek_topic["truth"], NS + seek_topic["topic"]
    n = len(truth)
    lo_ms, hi_ms = truth[1400]["publish_time"], truth[1700]["publish_time"]
    expected = [t for t in truth if lo_ms <= t["publish_time"] < hi_ms]
    assert 100 < len(expected) < n - 500

    def literal(ms: int) -> str:
        return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).isoformat(sep=" ")

    where = f"publish_time >= TIMESTAMP '{literal(lo_ms)}' AND publish_time < '{literal(hi_ms)}'"
    fs, prefix = filesystem_from_uri(offload_path(rp), "offloadPath")

    def whole() -> int:
        return (
            scan_topic(topic, metadata_url=zk_url(rp), offload_filesystem=fs, offload_prefix=prefix).read_all().num_rows
        )

    # A reader never reads past the last-add-confirmed, which the bookie learns from the broker's explicit
    # LAC (every 100 ms here): wait until every message the Reader got is readable.
    deadline = time.monotonic() + 30
    while whole() < n:
        assert time.monotonic() < deadline, "the last-add-confirmed never reached the last entry"
        time.sleep(0.2)
    counter = ReadCounter()
    got = sql(
        f"SELECT value FROM topic WHERE {where} ORDER BY ledger_id, entry_id",
        topic,
        metadata_url=zk_url(rp),
        offload_filesystem=fs,
        offload_prefix=prefix,
        counter=counter,
    )
    assert got["value"].to_pylist() == [t["value"] for t in expected]
    # Two binary searches of O(log n) probes each; and only about the window is read.
    assert 0 < counter.probes <= 2 * (math.ceil(math.log2(n)) + 1), counter
    window = scan_topic(
        topic,
        metadata_url=zk_url(rp),
        offload_filesystem=fs,
        offload_prefix=prefix,
        publish_time=((lo_ms, True), (hi_ms, False)),
    ).read_all()
    assert len(expected) <= window.num_rows <= len(expected) + 2, (window.num_rows, len(expected))
    # Without the bound, the whole topic.
    assert whole() == n
