"""``spark.read.format("pulsar")`` with the topic's schema as typed columns, against a real Apache
Pulsar 4.2.4: topics written by the Java client's typed producers (AVRO with two schema versions,
JSON, INT64, KeyValue INLINE and SEPARATED, PROTOBUF_NATIVE with two versions), row for row what an ``AUTO_CONSUME`` Reader decodes,
with the schema read from the registry on the driver and the typed decode in each task."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest

import pulsar_entries as pe

from .conftest import NS, SCHEMA_TOPICS
from .test_spark_topic_source import load, rows, zk_url
from .test_typed_real import protobuf_row

pytestmark = [pytest.mark.real_pulsar, pytest.mark.spark]


def column(row: dict[str, Any], name: str) -> Any:
    return row[name] if name in row else row[f"__value.{name}"]


@pytest.mark.parametrize("topic", SCHEMA_TOPICS)
def test_typed_source_rows_equal_the_auto_consume_reader(real_pulsar_zk: Any, spark: Any, topic: str) -> None:
    rp = real_pulsar_zk
    # Three entries per range: the topic spans several Spark partitions, each typing its own rows.
    got = rows(load(spark, topic, zk_url(rp), entriesPerPartition=3))
    truth = rp.truth[topic]["typed_messages"]
    assert truth and len(got) == len(truth)
    by_id = {(r["ledger_id"], r["entry_id"], -1 if r["batch_index"] is None else r["batch_index"]): r for r in got}
    for m in truth:
        row = by_id[(m["ledger_id"], m["entry_id"], m["batch_index"])]
        assert row["value"] == base64.b64decode(m["data"])
        version = None if row["schema_version"] is None else struct.unpack(">q", row["schema_version"])[0]
        assert version == m["schema_version"]
        if topic == "schema-protobuf-native":
            protobuf_row(row, m)
            continue
        if m["schema_version"] is None:
            # The message written without a schema: its bytes and an error, never dropped.
            assert row["error"] and "Avro" in row["error"], row
            continue
        assert row["error"] is None, row
        value = m["value"]
        if topic in ("schema-avro", "schema-json"):
            for name, expected in value.items():
                assert column(row, name) == expected, (name, row)
            if topic == "schema-avro" and "qty" not in value:
                # Written with version 0, read with version 1: `qty` takes its default.
                assert row["qty"] == 7
        elif topic == "schema-int64":
            assert row["__value__"] == value
        else:
            assert row["__key__"] == value["key"]
            for name, expected in value["value"].items():
                assert column(row, name) == expected, (name, row)


def test_typed_source_equals_read_topic_typed_and_its_schema(real_pulsar_zk: Any, spark: Any) -> None:
    rp = real_pulsar_zk
    df = load(spark, "schema-avro", zk_url(rp), valueColumn="false")
    expected = pe.read_topic(NS + "schema-avro", metadata_url=zk_url(rp), typed=True, value_column=False)
    assert "value" not in df.columns
    assert df.columns == expected.column_names
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert fields["id"] == "bigint" and fields["tags"].startswith("array<") and fields["qty"] == "int"
    got = df.toArrow().sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    names = ["ledger_id", "entry_id", "id", "item", "price", "tags", "qty", "error"]
    assert got.select(names).to_pylist() == expected.select(names).to_pylist()


def test_protobuf_native_columns_in_spark(real_pulsar_zk: Any, spark: Any) -> None:
    """Spark has no unsigned integers: uint32 becomes bigint, uint64 decimal(20,0), exactly."""
    rp = real_pulsar_zk
    df = load(spark, "schema-protobuf-native", zk_url(rp), valueColumn="false")
    expected = pe.read_topic(NS + "schema-protobuf-native", metadata_url=zk_url(rp), typed=True, value_column=False)
    assert df.columns == expected.column_names
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert fields["big"] == "decimal(20,0)" and fields["small"] == "bigint" and fields["id"] == "bigint"
    assert fields["counts"] == "map<string,bigint>" and fields["__value.status"] == "string"
    assert fields["lines"] == "array<struct<sku:string,qty:bigint>>"
    got = df.toArrow().sort_by([("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")])
    want = expected.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")])
    assert [int(x) if x is not None else None for x in got["big"].to_pylist()] == want["big"].to_pylist()
    assert got["small"].to_pylist() == want["small"].to_pylist()
    assert (
        got.select(["id", "name", "counts", "total", "note", "error"]).to_pylist()
        == want.select(["id", "name", "counts", "total", "note", "error"]).to_pylist()
    )


def test_typed_options_a_passed_schema_and_typed_false(real_pulsar_zk: Any, spark: Any) -> None:
    rp = real_pulsar_zk
    untyped = load(spark, "schema-int64", zk_url(rp), typed="false")
    assert "__value__" not in untyped.columns and "value" in untyped.columns
    given = load(spark, "schema-int64", zk_url(rp), schema=json.dumps({"type": "INT64"}))
    assert sorted(r["__value__"] for r in given.select("__value__").collect()) == sorted(
        i * 1_000_003 - 5 for i in range(12)
    )
    # A topic without a schema: auto stays untyped, typed=true is one error on the driver.
    plain = load(spark, "java-mixed", zk_url(rp))
    assert "value" in plain.columns and "__value__" not in plain.columns
    with pytest.raises(Exception, match="has no schema in the registry"):
        load(spark, "java-mixed", zk_url(rp), typed="true")
    with pytest.raises(Exception, match="option typed="):
        load(spark, "schema-int64", zk_url(rp), typed="maybe")
