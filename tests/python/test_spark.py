"""pulsar_entries.spark: every Spark function equals its in-process twin."""

from pathlib import Path

import pyarrow as pa
import pytest

import pulsar_entries as pe
import pulsar_entries.spark as ps
from pulsar_entries._sample import generate_topic

from support.tables import sorted_rows, spark_entries

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def topic():
    return generate_topic(240, seed=11)


@pytest.mark.parametrize("large_var_types", [False, True])
def test_decode_equals_in_process(spark, topic, large_var_types):
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", str(large_var_types).lower())
    try:
        df = spark_entries(spark, topic.entries)
        got = ps.decode(df).toArrow()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    want = pe.decode(topic.entries)
    assert got.num_rows == want.num_rows
    assert got.column_names == want.column_names
    got_rows, want_rows = sorted_rows(got), sorted_rows(want)
    # A transaction's outcome is known once its end marker is seen. In-process
    # decode sees the whole topic; a Spark task sees its partition, so a status
    # may stay "unknown" there, but it never contradicts the in-process one.
    for g, w in zip(got_rows, want_rows):
        assert g.pop("txn_status") in (w.pop("txn_status"), "unknown")
    assert got_rows == want_rows


def test_decode_options_pass_through(spark, topic):
    df = spark_entries(spark, topic.entries)
    kept = ps.decode(df, keep_markers=True).filter("marker_type IS NOT NULL").count()
    assert kept == topic.marker_entries
    unverified = ps.decode(df, verify_checksum=False).filter("error LIKE 'checksum%'").count()
    assert unverified == 0


def test_decode_needs_entry_columns(spark):
    df = spark.createDataFrame([(1, 2)], "ledger_id long, entry_id long")
    with pytest.raises(ValueError, match="missing data"):
        ps.decode(df)


def test_column_functions_equal_entry_metadata(spark, topic):
    df = spark_entries(spark, topic.entries)
    out = df.select(
        "ledger_id",
        "entry_id",
        ps.is_batch("data").alias("is_batch"),
        ps.num_messages("data").alias("num_messages"),
        ps.verify_checksum("data").alias("checksum_valid"),
        ps.entry_timestamp("data").alias("entry_timestamp"),
        ps.entry_metadata("data").alias("md"),
    ).toArrow()
    want = pe.entry_metadata(topic.entries.column("data").combine_chunks())
    want = want.append_column("ledger_id", topic.entries.column("ledger_id")).append_column(
        "entry_id", topic.entries.column("entry_id")
    )
    got_rows = {(r["ledger_id"], r["entry_id"]): r for r in sorted_rows(out, ("ledger_id", "entry_id"))}
    for w in sorted_rows(want, ("ledger_id", "entry_id")):
        g = got_rows[(w["ledger_id"], w["entry_id"])]
        for name in ("is_batch", "num_messages", "checksum_valid", "entry_timestamp"):
            assert g[name] == w[name], name
        md = g["md"]
        for name in ("producer_name", "sequence_id", "compression", "num_messages_in_batch", "broker_index", "error"):
            assert md[name] == w[name], name
        got_publish = md["publish_time"] and round(md["publish_time"].timestamp() * 1_000_000)
        assert got_publish == w["publish_time"]
    # Unaliased, each column is named after its function.
    names = df.select(
        ps.is_batch("data"),
        ps.num_messages("data"),
        ps.verify_checksum("data"),
        ps.entry_timestamp("data"),
        ps.entry_metadata("data"),
        ps.last_batch_index("data"),
    ).columns
    assert names == [
        "is_batch",
        "num_messages",
        "verify_checksum",
        "entry_timestamp",
        "entry_metadata",
        "last_batch_index",
    ]
    # Corrupt Pulsar entries fail their CRC32C (KoP entries carry none; their Kafka CRC catches it).
    decoded = pe.decode(topic.entries)
    crc_failures = sum(1 for e in decoded.column("error").to_pylist() if e and e.startswith("checksum mismatch"))
    assert crc_failures >= 1
    assert sum(1 for r in got_rows.values() if r["checksum_valid"] is False) == crc_failures


def test_data_source_reads_parquet_and_arrow(spark, topic, tmp_path):
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    half = topic.entries.num_rows // 2
    (tmp_path / "a").mkdir()
    pq.write_table(topic.entries.slice(0, half), tmp_path / "a" / "part-0.parquet")
    feather.write_feather(topic.entries.slice(half), tmp_path / "part-1.arrow")
    (tmp_path / "_SUCCESS").write_text("")
    df = ps.read_entries(spark, str(tmp_path))
    assert df.columns == ["ledger_id", "entry_id", "data", "error"]
    assert df.rdd.getNumPartitions() == 2  # one partition per file
    rows = df.toArrow().sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    assert rows.select(["ledger_id", "entry_id", "data"]).equals(
        topic.entries.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    )
    assert rows.column("error").null_count == rows.num_rows
    # And straight into the decode pipeline.
    assert ps.decode(df).count() == pe.decode(topic.entries).num_rows


def test_data_source_missing_path(spark, tmp_path):
    with pytest.raises(Exception, match="no such file or directory"):
        ps.read_entries(spark, str(tmp_path / "nope")).count()


def test_data_source_reads_offload_objects(spark, tmp_path):
    from pulsar_entries import offload

    topic = generate_topic(240, seed=11, entries_per_ledger=100)
    objects = offload.write_offloaded_ledgers(topic.entries, tmp_path / "bucket")
    assert len(objects) == len(set(topic.entries["ledger_id"].to_pylist())) == 3
    # A damaged block in the last object becomes error rows, not a failed read.
    last = objects[-1].data_path
    raw = bytearray(Path(last).read_bytes())
    raw[0] ^= 0xFF  # the first block header's magic
    Path(last).write_bytes(bytes(raw))
    df = ps.read_entries(spark, str(tmp_path / "bucket"))
    assert df.rdd.getNumPartitions() == len(objects)  # one partition per object
    got = df.toArrow().sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    want = pa.concat_tables(offload.read_offloaded_ledger(o.data_path, o.index_path) for o in objects).sort_by(
        [("ledger_id", "ascending"), ("entry_id", "ascending")]
    )
    assert (
        got.select(["ledger_id", "entry_id", "data", "error"]).to_pylist()
        == want.select(["ledger_id", "entry_id", "data", "error"]).to_pylist()
    )
    assert got["error"].null_count < got.num_rows  # the damage is reported
    good = want.filter(want["error"].is_null())
    assert good.num_rows > topic.entries.num_rows // 2


def test_decode_slices_cover_every_entry_once():
    sizes = [10, 3000, 5, 5000, 0, 1, 1, 9000, 2]
    batch = pa.record_batch({"data": pa.array([b"x" * n if n else None for n in sizes], pa.large_binary())})
    for max_rows, max_bytes, want in [
        (2, 1 << 30, [2, 2, 2, 2, 1]),
        (100, 4000, [3, 1, 3, 1, 1]),
        (3, 1, [1, 1, 1, 1, 2, 1, 1, 1]),
    ]:
        parts = list(ps.slices(batch, max_rows, max_bytes))
        assert [p.num_rows for p in parts] == want
        assert pa.Table.from_batches(parts).column("data").to_pylist() == batch.column("data").to_pylist()
    assert list(ps.slices(batch)) == [batch]  # small batches pass whole


def test_decode_columns_are_chosen_in_the_worker(spark, topic):
    df = spark_entries(spark, topic.entries)
    cols = ["ledger_id", "entry_id", "batch_index", "key", "value", "error"]
    got = ps.decode(df, columns=cols).toArrow()
    assert got.column_names == cols
    assert sorted_rows(got) == sorted_rows(pe.decode(topic.entries).select(cols))
    with pytest.raises(ValueError, match="unknown decode columns"):
        ps.decode(df, columns=["nope"])
