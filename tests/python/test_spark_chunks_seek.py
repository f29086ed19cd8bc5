"""pulsar_entries.spark: chunk reassembly, seek by time and the PIP-429 column
function, each equal to its in-process twin."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
import pulsar_entries.spark as ps
from pulsar_entries._sample import generate_topic

from support import entrygen
from support.tables import spark_entries, spark_units

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def canonical(table: pa.Table) -> list:
    """Rows as sorted tuples, in Spark's units: row order is free on Spark."""
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items())) for r in spark_units(table).to_pylist())


def chunky_topic() -> pa.Table:
    """Interleaved chunked messages from three producers with plain traffic,
    a duplicated chunk, a resent (restarted) message and an orphan, with
    publish times that drift so that expiry decisions matter."""
    entries: list[bytes] = []
    msgs = []
    for i in range(6):
        value = random.Random(i).randbytes(3_000 + 700 * i)  # incompressible: several chunks each
        msgs.append(
            pe.encode_chunked(
                {"value": value, "key": f"k{i}"},
                chunk_size=900,
                compression=["none", "lz4", "zstd"][i % 3],
                producer_name=f"p{i % 3}",
                sequence_id=i,
                publish_time=T0 + 400 * i,
            )
        )
    msgs[2] = msgs[2][:2] + msgs[2]  # resent from chunk 0
    msgs[4] = [*msgs[4][:3], msgs[4][1], *msgs[4][3:]]  # a duplicate
    msgs[5] = msgs[5][1:]  # chunk 0 lost: an orphan
    queues = [list(m) for m in msgs]
    step = 0
    while any(queues):
        for q in queues:
            if q:
                entries.append(q.pop(0))
                step += 1
                if step % 3 == 0:
                    entries.append(pe.encode_entry([{"value": b"plain"}], publish_time=T0 + 50 * step))
    return pe.entries_table(entries, ledger_id=9)


def write_files(table: pa.Table, cuts: list[int], directory) -> str:
    bounds = [0, *cuts, table.num_rows]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        pq.write_table(table.slice(lo, hi - lo), directory / f"part-{n:03d}.parquet")
    return str(directory)


@pytest.mark.slow
@pytest.mark.parametrize("expire", [None, 1_000])
def test_reassemble_chunks_across_file_partitions_equals_in_process(spark, tmp_path, expire):
    entries = chunky_topic()
    # Files cut in the middle of messages: each file is one Spark partition.
    path = write_files(entries, [7, 8, 20, 33], tmp_path)
    df = ps.read_entries(spark, path)
    assert df.rdd.getNumPartitions() == 5
    opts = dict(max_pending=None, expire_after_ms=expire)
    got = ps.reassemble_chunks(ps.decode(df), **opts).toArrow()
    want = pe.reassemble_chunks(pe.decode(entries), **opts)
    assert got.column_names == want.column_names
    assert canonical(got) == canonical(want)
    statuses = {s for s in want["status"].to_pylist() if s}
    assert {"complete", "incomplete", "duplicate"} <= statuses


def test_reassemble_chunks_of_shuffled_input_equals_in_process(spark):
    # Hash-partitioned rows are not contiguous topic ranges: range-partitioned first.
    entries = chunky_topic()
    decoded = ps.decode(spark_entries(spark, entries, partitions=3))
    got = ps.reassemble_chunks(decoded, max_pending=None, expire_after_ms=None).toArrow()
    want = pe.reassemble_chunks(pe.decode(entries), max_pending=None, expire_after_ms=None)
    assert canonical(got) == canonical(want)


@pytest.mark.slow
def test_reassemble_chunks_of_the_sample_topic(spark, tmp_path):
    topic = generate_topic(400, seed=5)
    path = write_files(topic.entries, [100, 200, 300], tmp_path)
    got = ps.reassemble_chunks(ps.decode(ps.read_entries(spark, path))).toArrow()
    want = pe.reassemble_chunks(pe.decode(topic.entries))
    assert canonical(got) == canonical(want)
    assert got["status"].to_pylist().count("complete") == topic.chunked_messages


def test_reassemble_chunks_with_large_var_types(spark, tmp_path):
    entries = chunky_topic()
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        df = ps.read_entries(spark, write_files(entries, [10, 25], tmp_path))
        got = ps.reassemble_chunks(ps.decode(df), max_pending=None, expire_after_ms=None).toArrow()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    want = pe.reassemble_chunks(pe.decode(entries), max_pending=None, expire_after_ms=None)
    assert canonical(got) == canonical(want)


# ----------------------------------------------------------------------------- seek


def two_partitions() -> pa.Table:
    """Two topic partitions of broker-stamped entries, times 10 ms apart."""
    tables = []
    for p, (ledger, n) in enumerate([(3, 40), (8, 25)]):
        raw = pe.entries_table(
            [pe.encode_entry([{"value": b"v%d" % i}], publish_time=T0 + i) for i in range(n)],
            ledger_id=ledger,
            partition=p,
        )
        tables.append(pe.stamp(raw, timestamps=[T0 + 1_000 * p + 10 * i for i in range(n)]))
    return pa.concat_tables(tables)


@pytest.mark.parametrize("t", [T0 - 5, T0, T0 + 1, T0 + 155, T0 + 1_100, T0 + 1_240, T0 + 5_000])
def test_find_position_by_time_equals_in_process(spark, t):
    table = two_partitions()
    got = {
        r["partition"]: (r["ledger_id"], r["entry_id"])
        for r in ps.find_position_by_time(spark_entries(spark, table), t).collect()
    }
    want = {}
    for p in (0, 1):
        part = table.filter(pa.compute.equal(table["partition"], p))
        pos = pe.find_position_by_time(part, t)
        want[p] = (pos.ledger_id, pos.entry_id)
    assert got == want


def test_find_position_by_time_accepts_datetimes(spark, far_from_utc):
    import datetime as dt

    table = two_partitions()
    when = dt.datetime.fromtimestamp((T0 + 155) / 1000, dt.timezone.utc)
    row = ps.find_position_by_time(spark_entries(spark, table), when).filter("partition = 0").first()
    assert (row["ledger_id"], row["entry_id"]) == (3, 16)
    # A naive datetime is UTC, as in process and in the CLI, whatever the local zone.
    naive = ps.find_position_by_time(spark_entries(spark, table), when.replace(tzinfo=None))
    assert [tuple(r) for r in naive.collect()] == [
        tuple(r) for r in ps.find_position_by_time(spark_entries(spark, table), when).collect()
    ]
    assert (
        naive.filter("partition = 0").first()["entry_id"],
        pe.find_position_by_time(
            table.filter(pa.compute.equal(table["partition"], 0)), when.replace(tzinfo=None)
        ).entry_id,
    ) == (16, 16)


# ----------------------------------------------------------------------------- last_batch_index


def test_last_batch_index_follows_pip_429(spark):
    topic = generate_topic(200, seed=3)
    compacted = pe.compact(topic.entries)
    extra = [
        pe.encode_entry([{"value": b"1", "key": "k"}, {"value": b"2", "key": "k"}], compression="lz4"),
        b"\x0e\x01 not an entry",
        entrygen.legacy_compacted_batch([None, None, None]),  # every slot compacted out
        entrygen.legacy_compacted_batch([("k", b"a"), None]),  # the scan fallback
        entrygen.encrypted_entry(4, "k", b"opaque"),
    ]
    rows = compacted.select(["ledger_id", "entry_id", "data"]).to_pylist() + [
        {"ledger_id": 99, "entry_id": i, "data": d} for i, d in enumerate(extra)
    ]
    table = pa.Table.from_pylist(
        rows, schema=pa.schema([("ledger_id", pa.int64()), ("entry_id", pa.int64()), ("data", pa.binary())])
    )
    got = {
        (r["ledger_id"], r["entry_id"]): r["i"]
        for r in spark_entries(spark, table)
        .select("ledger_id", "entry_id", ps.last_batch_index("data").alias("i"))
        .collect()
    }
    for row in rows:
        one = pa.Table.from_pylist([row], schema=table.schema)
        try:
            want = pe.last_message_position(one).batch_index
        except ValueError:
            want = None
        assert got[(row["ledger_id"], row["entry_id"])] == want, row
    assert got[(99, 0)] == 1
    assert got[(99, 1)] is None and got[(99, 2)] is None
    assert (got[(99, 3)], got[(99, 4)]) == (0, 3)
    assert any(v not in (None, -1) for v in got.values())
