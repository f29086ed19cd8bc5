"""Compaction on Spark gives exactly the in-process result.

`pulsar_entries.spark.compact(df, ...)` decodes in `mapInArrow`, picks each
key's survivor after a shuffle by key (Spark's sort plus the per-key fold of
the Rust core), then rebuilds every entry that keeps something.
`pulsar_entries.spark.last_message_position(df)` reads only the last entry.

A missing pyspark is a failure, never a skip.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries._sample import generate_topic

from support import entrygen

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", autouse=True)
def small_arrow_batches(spark):
    """Small Arrow batches, so keys and entries straddle batch boundaries."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    yield
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def single(key, value, t, **kw):
    return pe.encode_entry([{"key": key, "value": value, **kw}], batch=False, publish_time=t)


def mixed_topic() -> pa.Table:
    """The sample topic (batches, every codec, tombstones, key-less messages,
    markers, corrupt entries) plus a ledger of harder cases."""
    base = generate_topic(300, seed=21).entries
    t = 1_700_000_100_000
    big = bytes(range(256)) * 8
    chunks = entrygen.chunk_entries("user-7", big, 3, uuid="chunky-1", publish_time=t)
    extra = [
        chunks[0],
        single("user-1", b"between chunks", t + 1, event_time=5),
        chunks[1],
        chunks[2],
        entrygen.encrypted_entry(3, "user-2", b"\x0b\xff" * 40, publish_time=t + 2),
        single("user-3", b"late", t + 3, event_time=1),
        single("user-3", None, t + 4, event_time=0),  # a late tombstone under event-time order
        pe.encode_entry(
            [{"key": "user-4", "value": b"a", "event_time": 9}, {"key": "user-4", "value": b"b", "event_time": 9}],
            publish_time=t + 5,
        ),
        entrygen.legacy_compacted_batch([("user-5", b"x"), None, ("user-6", b"y")], codec="zstd"),
        pe.encode_entry([{"value": b"no key"}, {"key": "user-8", "value": b""}], publish_time=t + 6, checksum=False),
        chunk_only_first := entrygen.chunk_entries("user-9", big, 2, uuid="chunky-2", publish_time=t + 7)[0],
    ]
    assert chunk_only_first
    more = pe.entries_table(extra, ledger_id=2000)
    return pa.concat_tables([base, more], promote_options="permissive")


def spark_result(spark, table: pa.Table, partitions: int = 3, **kw) -> pa.Table:
    from pulsar_entries import spark as pes

    df = spark.createDataFrame(table).repartition(partitions)  # topic order is not the row order
    out = pes.compact(df, **kw).toArrow()
    keys = [c for c in ("partition", "ledger_id", "entry_id") if c in out.column_names]
    return out.take(pc.sort_indices(out, [(k, "ascending") for k in keys]))


def same(ours: pa.Table, theirs: pa.Table) -> None:
    assert theirs.column_names == ours.column_names
    for name in ours.column_names:
        assert theirs[name].to_pylist() == ours[name].to_pylist(), name


@pytest.mark.parametrize("order", ["publish", "event_time"])
@pytest.mark.parametrize("retain_null_key", [False, True])
def test_spark_compact_equals_in_process(spark, order, retain_null_key):
    table = mixed_topic()
    expected = pe.compact(table, order=order, retain_null_key=retain_null_key)
    assert expected.num_rows > 10 and expected["error"].null_count < expected.num_rows
    same(expected, spark_result(spark, table, order=order, retain_null_key=retain_null_key))


def test_spark_compacts_partitions_independently(spark):
    one = generate_topic(120, seed=2, corrupt=0).entries
    two = generate_topic(150, seed=3, corrupt=1).entries
    table = pa.concat_tables(
        [
            one.append_column("partition", pa.array([0] * one.num_rows, pa.int32())),
            two.append_column("partition", pa.array([1] * two.num_rows, pa.int32())),
        ]
    )
    expected = pe.compact(table)
    assert set(expected["partition"].to_pylist()) == {0, 1}
    same(expected, spark_result(spark, table, partitions=4))


def test_spark_incremental_run(spark):
    table = mixed_topic()
    from pulsar_entries import spark as pes

    first = pes.compact(spark.createDataFrame(table.slice(0, 200))).select("ledger_id", "entry_id", "data")
    rest = spark.createDataFrame(table.slice(200).select(["ledger_id", "entry_id", "data"]))
    again = pes.compact(first.unionByName(rest)).toArrow()
    same(pe.compact(table), again)


def test_spark_last_message_position(spark):
    from pulsar_entries import spark as pes

    table = mixed_topic()
    compacted = pe.compact(table)
    df = spark.createDataFrame(compacted).repartition(3)
    assert pes.last_message_position(df) == pe.last_message_position(compacted)
    empty = spark.createDataFrame(compacted.slice(0, 0))
    assert pes.last_message_position(empty) == pe.MessagePosition.EARLIEST == (-1, -1, 0, 0)
    # An encrypted last entry: n − 1, its payload never parsed.
    enc = pe.entries_table([entrygen.encrypted_entry(4, "k", b"\x0b" * 64, publish_time=77)], ledger_id=9)
    assert pes.last_message_position(spark.createDataFrame(enc)) == (9, 0, 3, 77)
    # The compacted output of Spark itself.
    spark_compacted = pes.compact(spark.createDataFrame(table))
    assert pes.last_message_position(spark_compacted) == pe.last_message_position(compacted)
