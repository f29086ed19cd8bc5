"""The typed decode against a real Apache Pulsar 4.2.4: topics written by the Java client's typed
producers (AVRO with two schema versions, JSON, INT64, KeyValue INLINE and SEPARATED, PROTOBUF_NATIVE
with two schema versions), their schema
read from the registry (the ZooKeeper store's locator, the schema ledgers on the bookie) and from
the admin REST API, and ``read_topic(..., typed=True)`` row for row against what an
``AUTO_CONSUME`` Reader decodes."""

from __future__ import annotations

import base64
import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries import schemas

from .conftest import NS, SCHEMA_TOPICS
from support.cli import run_cli

pytestmark = pytest.mark.real_pulsar


def zk_url(rp: Any) -> str:
    return f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"


def kv_parts(v: schemas.SchemaVersion) -> tuple[Any, Any]:
    (klen,) = struct.unpack(">i", v.schema[:4])
    key = v.schema[4 : 4 + klen]
    value = v.schema[8 + klen :]
    return (json.loads(key) if key else None), (json.loads(value) if value else None)


@pytest.mark.parametrize("topic", SCHEMA_TOPICS)
def test_the_registry_gives_what_the_admin_rest_api_gives(real_pulsar_zk: Any, topic: str) -> None:
    rp = real_pulsar_zk
    registry = schemas.topic_schemas(NS + topic, metadata_url=zk_url(rp))
    rest = schemas.topic_schemas(NS + topic, admin_url=rp.standalone.web_url)
    assert [(v.version, v.type, v.properties) for v in registry.versions] == [
        (v.version, v.type, v.properties) for v in rest.versions
    ]
    for mine, theirs in zip(registry.versions, rest.versions):
        if mine.type == "KEY_VALUE":
            # The REST API gives KeyValue definitions as JSON: the same schemas, re-serialised.
            assert kv_parts(mine) == kv_parts(theirs)
        else:
            assert mine.schema == theirs.schema
    expected_types = {
        "schema-avro": ["AVRO", "AVRO"],
        "schema-json": ["JSON"],
        "schema-int64": ["INT64"],
        "schema-kv-inline": ["KEY_VALUE"],
        "schema-kv-separated": ["KEY_VALUE"],
        "schema-protobuf-native": ["PROTOBUF_NATIVE", "PROTOBUF_NATIVE"],
    }
    assert [v.type for v in registry.versions] == expected_types[topic]
    if topic == "schema-protobuf-native":
        # Pulsar's ProtobufNativeSchemaData: the descriptor set (base64), the root message and its file.
        definition = json.loads(registry.latest.schema)
        assert definition["rootMessageTypeName"] == "pe.shop.Order"
        assert definition["rootFileDescriptorName"] == "pe/shop/order.proto"
        assert base64.b64decode(definition["fileDescriptorSet"])
        assert [v.version for v in registry.versions] == [0, 1]
    if topic == "schema-avro":
        # Version 1 added `qty` with a default.
        assert [f["name"] for f in registry.latest.definition()["fields"]] == ["id", "item", "price", "tags", "qty"]
        assert [v.version for v in registry.versions] == [0, 1]


def proto_equal(got: Any, want: Any) -> bool:
    """A typed protobuf cell (Arrow's Python values, or Spark's through Arrow) equals the Java
    reader's JSON of the field: maps come as (key, value) pairs, bytes as base64 text, a uint64
    through Spark as a decimal."""
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, dict):
        if isinstance(got, list):
            got = {str(k): v for k, v in got}
        return isinstance(got, dict) and set(got) == set(want) and all(proto_equal(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(proto_equal, got, want))
    if isinstance(got, (bytes, bytearray)):
        return base64.b64encode(got).decode() == want
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want
    if isinstance(got, Decimal):
        return got == Decimal(want)
    return bool(got == want)


def protobuf_row(row: dict[str, Any], m: dict[str, Any]) -> None:
    """One typed row of ``schema-protobuf-native`` against the AUTO_CONSUME reader's message."""
    if "error" in m:
        # The truncated message: Java's reader cannot decode it either; our row keeps its bytes.
        assert "value" not in m and row["error"], (m, row)
        assert "protobuf message does not match its writer schema" in row["error"], row
        assert row["id"] is None and row["name"] is None and row["__value.status"] is None, row
        return
    assert row["error"] is None, row
    value = m["value"]
    assert value, m
    for name, expected in value.items():
        # `status` is also a message column (the chunk status): the field's column is `__value.status`.
        got = row.get(f"__value.{name}", row.get(name))
        assert proto_equal(got, expected), (name, got, expected)
    assert row["__value.status"] == value["status"]
    if m["schema_version"] == 0:
        # Written with version 0 (no `note`), read with version 1: a proto3 string's default.
        assert "note" not in value and row["note"] == ""
    else:
        assert m["schema_version"] == 1 and "note" in value


def record_columns(row: dict[str, Any], value: dict[str, Any], prefix: str = "") -> None:
    for name, expected in value.items():
        got = row[prefix + name] if prefix + name in row else row[f"__value.{name}"]
        assert got == expected, (name, got, expected, row)


@pytest.mark.parametrize("topic", SCHEMA_TOPICS)
def test_typed_rows_equal_the_auto_consume_reader(real_pulsar_zk: Any, topic: str) -> None:
    rp = real_pulsar_zk
    table = pe.read_topic(NS + topic, metadata_url=zk_url(rp), typed=True)
    rows = table.to_pylist()
    truth = rp.truth[topic]["typed_messages"]
    assert truth and len(rows) == len(truth)
    by_id = {(r["ledger_id"], r["entry_id"], -1 if r["batch_index"] is None else r["batch_index"]): r for r in rows}
    assert len(by_id) == len(rows)
    for m in truth:
        row = by_id[(m["ledger_id"], m["entry_id"], m["batch_index"])]
        assert row["value"] == base64.b64decode(m["data"])
        assert row["key"] == m["key"]
        version = None if row["schema_version"] is None else struct.unpack(">q", row["schema_version"])[0]
        assert version == m["schema_version"]
        if topic == "schema-protobuf-native":
            protobuf_row(row, m)
            continue
        if m["schema_version"] is None and topic == "schema-avro":
            # Written by a producer without a schema: AUTO_CONSUME hands a message without a schema
            # version over as its bytes; read with the topic's schema it is an error row with its bytes.
            assert m["value"] == m["data"]
            assert row["error"] and row["id"] is None, row
            continue
        assert row["error"] is None, row
        value = m["value"]
        if topic in ("schema-avro", "schema-json"):
            record_columns(row, value)
            if topic == "schema-avro" and "qty" not in value:
                # Written with version 0: read with version 1, `qty` takes its default.
                assert m["schema_version"] == 0 and row["qty"] == 7
        elif topic == "schema-int64":
            assert row["__value__"] == value
        else:
            assert row["__key__"] == value["key"]
            record_columns(row, value["value"])
    if topic == "schema-avro":
        assert {m["schema_version"] for m in truth} == {0, 1, None}
    if topic == "schema-protobuf-native":
        assert {m["schema_version"] for m in truth} == {0, 1}
        assert sum("error" in m for m in truth) == 1
        types = {f.name: f.type for f in table.schema}
        assert types["big"] == pa.uint64() and types["small"] == pa.uint32() and types["__value.status"] == pa.string()
        assert pa.types.is_map(types["counts"]) and pa.types.is_struct(types["total"])
        assert max(r["big"] or 0 for r in rows) == 2**64 - 1


def test_an_undecodable_message_is_an_error_row_with_its_bytes(real_pulsar_zk: Any) -> None:
    rp = real_pulsar_zk
    assert rp.produced["schemas"]["schema-avro-undecodable"] is True
    table = pe.read_topic(NS + "schema-avro", metadata_url=zk_url(rp), typed=True, value_column=True)
    bad = [r for r in table.to_pylist() if r["error"] is not None]
    assert len(bad) == 1
    (row,) = bad
    assert row["value"] == b"\xff\xff\xffx" and row["schema_version"] is None
    assert "Avro" in row["error"] and row["id"] is None
    # The Java reader (AUTO_CONSUME) hands it over as bytes: it names no schema version.
    java = [m for m in rp.truth["schema-avro"]["typed_messages"] if m["schema_version"] is None]
    assert [base64.b64decode(m["value"]) for m in java] == [b"\xff\xff\xffx"]


def test_typed_read_through_the_admin_rest_api_and_a_passed_schema(real_pulsar_zk: Any) -> None:
    rp = real_pulsar_zk
    via_store = pe.read_topic(NS + "schema-int64", metadata_url=zk_url(rp), typed=True, value_column=False)
    given = pe.read_topic(NS + "schema-int64", metadata_url=zk_url(rp), schema={"type": "INT64"}, value_column=False)
    assert "value" not in via_store.column_names
    assert given["__value__"].to_pylist() == via_store["__value__"].to_pylist()
    assert via_store["__value__"].to_pylist() == [i * 1_000_003 - 5 for i in range(12)]


def test_cli_decode_typed_writes_what_read_topic_gives(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    out = tmp_path / "orders.parquet"
    run = run_cli("decode", "--topic", NS + "schema-avro", "--metadata-url", zk_url(rp), str(out), "--typed")
    assert "(1 error rows)" in run.stdout
    written = pq.read_table(out)
    expected = pe.read_topic(NS + "schema-avro", metadata_url=zk_url(rp), typed=True)
    assert written.column_names == expected.column_names
    assert (
        written.select(["id", "item", "price", "tags", "qty", "error"]).to_pylist()
        == expected.select(["id", "item", "price", "tags", "qty", "error"]).to_pylist()
    )
    assert written["qty"].to_pylist()[:12] == [7] * 12
    # IN as a positional topic is the same command
    again = tmp_path / "again.parquet"
    run = run_cli("decode", NS + "schema-avro", str(again), "--metadata-url", zk_url(rp), "--typed")
    assert pq.read_table(again).equals(written)


def test_cli_decode_typed_writes_protobuf_native_columns(real_pulsar_zk: Any, tmp_path: Path) -> None:
    rp = real_pulsar_zk
    out = tmp_path / "proto.parquet"
    run = run_cli(
        "decode",
        "--topic",
        NS + "schema-protobuf-native",
        "--metadata-url",
        zk_url(rp),
        str(out),
        "--typed",
        "--no-value",
    )
    assert "(1 error rows)" in run.stdout
    written = pq.read_table(out)
    expected = pe.read_topic(NS + "schema-protobuf-native", metadata_url=zk_url(rp), typed=True, value_column=False)
    assert written.column_names == expected.column_names and "value" not in written.column_names
    assert written.schema.field("big").type == pa.uint64() and pa.types.is_map(written.schema.field("counts").type)
    names = ["id", "name", "__value.status", "lines", "counts", "maybe", "big", "small", "total", "note", "error"]
    assert written.select(names).to_pylist() == expected.select(names).to_pylist()


def test_the_registry_in_the_rocksdb_store(real_pulsar: Any) -> None:
    """The standalone's own RocksDB metadata store holds the same registry."""
    rp = real_pulsar
    registry = schemas.topic_schemas(NS + "schema-avro", metadata_url=f"rocksdb:{rp.standalone.metadata_dir}")
    rest = schemas.topic_schemas(NS + "schema-avro", admin_url=rp.standalone.web_url)
    assert registry == rest and [v.version for v in registry.versions] == [0, 1]
    rows = pe.read_topic(
        NS + "schema-json", metadata_url=f"rocksdb:{rp.standalone.metadata_dir}", typed=True
    ).to_pylist()
    truth = rp.truth["schema-json"]["typed_messages"]
    assert [(r["id"], r["name"], r["price"], r["active"]) for r in rows] == [
        (m["value"]["id"], m["value"]["name"], m["value"]["price"], m["value"]["active"]) for m in truth
    ]
