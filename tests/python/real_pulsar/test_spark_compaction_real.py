"""Compaction on Spark against a real Pulsar 4.2.4: on the transaction topic, the Spark compactors skip the
messages of aborted transactions as the broker's compactor does (and as the in-process ``compact`` does)."""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
import pulsar_entries.spark as ps
from pulsar_entries.strategies import LatestWins

from .conftest import NS
from .real_pulsar_compare import assert_records_equal_broker, broker_compacted_ledger

pytestmark = [pytest.mark.real_pulsar, pytest.mark.spark]


def txn_entries(rp: Any) -> tuple[str, pa.Table]:
    url = f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"
    entries = pe.read_topic(NS + "java-txn", metadata_url=url)
    assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    entries = entries.drop_columns(["error"])
    decoded = pe.decode(entries)
    assert decoded.filter(pc.equal(decoded["txn_status"], "aborted")).num_rows > 0  # the topic has aborted transactions
    return url, entries


def same(expected: pa.Table, got: pa.Table) -> None:
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


def test_spark_compact_equals_the_broker_compacted_ledger_on_transactions(real_pulsar_zk: Any, spark: Any) -> None:
    url, entries = txn_entries(real_pulsar_zk)
    # Hash-repartitioned: the aborted transactions' markers land in other tasks than their messages.
    compacted = ps.compact(spark.createDataFrame(entries).repartition(3)).toArrow()
    same(pe.compact(entries), compacted)
    ours = pe.to_ledger_records(compacted.drop_columns(["error"]))
    assert_records_equal_broker(ours, broker_compacted_ledger(url, NS + "java-txn"))


def test_strategic_compaction_skips_aborted_transactions(real_pulsar_zk: Any, spark: Any) -> None:
    """The strategic compactor (PIP-215), in process and on Spark, with latest-wins: the messages a
    ``readCompacted`` reader receives from the broker's compacted topic, aborted transactions left out."""
    _, entries = txn_entries(real_pulsar_zk)
    in_process = pe.compact(entries, strategy=LatestWins())
    on_spark = ps.compact(spark.createDataFrame(entries).repartition(3), strategy=LatestWins()).toArrow()
    same(in_process, on_spark)
    mine = [r for r in pe.decode(in_process.drop_columns(["error"])).to_pylist() if not r["compacted_out"]]
    assert all(r["txn_status"] != "aborted" for r in mine)
    # The strategic compactor rewrites the entries it keeps (as the broker's strategic compactor does), so
    # message ids and broker metadata differ from the plain compacted ledger; the surviving messages do not.
    java = real_pulsar_zk.truth["java-txn"]["compacted_messages"]
    survivors = [(m["key"], base64.b64decode(m["value"]), m["producer_name"], m["sequence_id"]) for m in java]
    assert [(r["key"], r["value"], r["producer_name"], r["sequence_id"]) for r in mine] == survivors
