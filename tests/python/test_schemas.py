"""The typed decode through the Python API: schemas given by the user, in the
registry's and the REST API's shapes, applied to decoded messages."""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import schemas
from pulsar_entries._cluster.schemas import from_schema_info

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": ["null", "string"], "default": None},
    ],
}


def zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def order(i: int, item: str | None) -> bytes:
    """An Avro datum of ORDER, encoded by hand (Avro's binary encoding)."""
    body = zigzag(i)
    if item is None:
        return body + zigzag(0)
    raw = item.encode()
    return body + zigzag(1) + zigzag(len(raw)) + raw


def messages(values: list[bytes | None], versions: list[int | None]) -> pa.Table:
    return pa.table(
        {
            "entry_id": pa.array(range(len(values)), pa.int64()),
            "key": pa.array([None] * len(values), pa.string()),
            "value": pa.array(values, pa.binary()),
            "schema_version": pa.array([None if v is None else struct.pack(">q", v) for v in versions], pa.binary()),
            "error": pa.array([None] * len(values), pa.string()),
        }
    )


def test_a_schema_info_dict_types_every_message_and_bad_ones_keep_their_bytes() -> None:
    table = messages([order(1, "apple"), order(2, None), b"\xff\xff"], [None, 4, None])
    out = schemas.typed(table, {"type": "AVRO", "schema": ORDER})
    assert out.column_names == ["entry_id", "key", "value", "schema_version", "error", "id", "item"]
    assert out["id"].to_pylist() == [1, 2, None]
    assert out["item"].to_pylist() == ["apple", None, None]
    errors = out["error"].to_pylist()
    assert errors[:2] == [None, None]
    assert "Avro" in errors[2]
    assert out["value"][2].as_py() == b"\xff\xff"
    lean = schemas.typed(table, {"type": "AVRO", "schema": json.dumps(ORDER)}, value_column=False)
    assert "value" not in lean.column_names and lean["id"].to_pylist() == [1, 2, None]
    # The schema every batch gets, known before any row is read.
    assert schemas.typed_schema(table.schema, {"type": "AVRO", "schema": ORDER}) == out.schema
    assert schemas.typed_schema(table.schema, {"type": "AVRO", "schema": ORDER}, value_column=False) == lean.schema


def test_registry_versions_resolve_to_the_latest() -> None:
    v2 = dict(ORDER, fields=[*ORDER["fields"], {"name": "qty", "type": "int", "default": 7}])
    ts = schemas.TopicSchema(
        "persistent://t/ns/orders",
        (
            schemas.SchemaVersion(0, "AVRO", json.dumps(ORDER).encode()),
            schemas.SchemaVersion(1, "AVRO", json.dumps(v2).encode()),
        ),
    )
    assert pickle.loads(pickle.dumps(ts)) == ts
    assert ts.latest.definition()["fields"][-1]["name"] == "qty"
    out = schemas.typed(messages([order(5, "x"), order(6, "y")], [0, 3]), ts)
    assert out["qty"].to_pylist() == [7, None]
    assert out["id"].to_pylist() == [5, None]
    assert "schema version 3" in out["error"][1].as_py()


def test_decode_entries_with_a_primitive_schema() -> None:
    data = [pe.encode_entry([{"value": struct.pack(">q", n)} for n in (3, -4)]), pe.encode_entry([{"value": b"\x01"}])]
    entries = pa.table({"ledger_id": [1, 1], "entry_id": [0, 1], "data": pa.array(data, pa.binary())})
    out = schemas.decode(entries, schema={"type": "INT64"})
    assert out["__value__"].type == pa.int64()
    assert out["__value__"].to_pylist() == [3, -4, None]
    assert "expected 8" in out["error"][2].as_py()


def test_key_value_from_the_rest_apis_json_form() -> None:
    info = {
        "type": "KEY_VALUE",
        "data": json.dumps({"key": "", "value": ORDER}),
        "properties": {"key.schema.type": "STRING", "value.schema.type": "AVRO", "kv.encoding.type": "INLINE"},
    }
    v = from_schema_info(info, version=2)
    (klen,) = struct.unpack(">i", v["schema"][:4])
    assert klen == 0 and json.loads(v["schema"][8:]) == ORDER
    value = order(9, "kv")
    payload = struct.pack(">i", 2) + b"k9" + struct.pack(">i", len(value)) + value
    out = schemas.typed(messages([payload], [2]), schemas.TopicSchema("t", (schemas.SchemaVersion(**v),)))
    assert out["__key__"].to_pylist() == ["k9"]
    assert out["id"].to_pylist() == [9]
    assert out["item"].to_pylist() == ["kv"]


def test_bad_schemas_are_clear_errors() -> None:
    with pytest.raises(pe.OptionsError, match="unknown schema type"):
        schemas.typed(messages([b""], [None]), {"type": "NOPE"})
    with pytest.raises(pe.OptionsError, match="not an Avro schema"):
        schemas.typed(messages([b""], [None]), {"type": "AVRO", "schema": "{"})
    with pytest.raises(ValueError, match="needs a 'type'"):
        schemas.typed(messages([b""], [None]), {"schema": ORDER})
    with pytest.raises(pe.InputSchemaError, match="value"):
        schemas.typed(pa.table({"x": [1]}), {"type": "STRING"})
    with pytest.raises(ValueError, match="one of metadata_url"):
        schemas.topic_schemas("persistent://t/ns/x")
    # PROTOBUF (an Avro description of the .proto) is refused, never decoded as Avro.
    with pytest.raises(pe.OptionsError, match=r"PROTOBUF schemas .* are not decoded into columns"):
        schemas.typed(messages([b""], [None]), {"type": "PROTOBUF", "schema": ORDER})
    with pytest.raises(pe.OptionsError, match="PROTOBUF_NATIVE schema definition: no fileDescriptorSet"):
        schemas.typed(messages([b""], [None]), {"type": "PROTOBUF_NATIVE", "schema": {"rootMessageTypeName": "a.B"}})
    with pytest.raises(pe.OptionsError, match="invalid fileDescriptorSet"):
        bad_set = {"fileDescriptorSet": "AAEC", "rootMessageTypeName": "a.B", "rootFileDescriptorName": "a.proto"}
        schemas.typed(messages([b""], [None]), {"type": "PROTOBUF_NATIVE", "schema": bad_set})


def test_cli_decode_with_a_schema_file_writes_typed_parquet(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    values = [order(i, f"o{i}") for i in range(3)] + [b"\xff"]
    data = [pe.encode_entry([{"value": v} for v in values[:2]]), pe.encode_entry([{"value": v} for v in values[2:]])]
    pq.write_table(
        pa.table({"ledger_id": [7, 7], "entry_id": [0, 1], "data": pa.array(data, pa.binary())}),
        tmp_path / "in.parquet",
    )
    (tmp_path / "schema.json").write_text(json.dumps({"type": "AVRO", "schema": ORDER}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_entries",
            "--quiet",
            "--engine",
            "local",
            "decode",
            str(tmp_path / "in.parquet"),
            str(tmp_path / "out.parquet"),
            "--schema",
            str(tmp_path / "schema.json"),
            "--no-value",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "4 rows (1 error rows)" in run.stdout
    out = pq.read_table(tmp_path / "out.parquet")
    assert "value" not in out.column_names
    assert out["id"].to_pylist() == [0, 1, 2, None]
    assert out["item"].to_pylist() == ["o0", "o1", "o2", None]
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_entries",
            "--quiet",
            "--engine",
            "local",
            "decode",
            str(tmp_path / "in.parquet"),
            str(tmp_path / "out2.parquet"),
            "--typed",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "--typed reads a topic's schema" in bad.stderr


def test_decode_reassembles_chunked_messages_before_typing_them() -> None:
    text = "chunked " * 500
    chunks = pe.encode_chunked({"value": text.encode(), "key": "k"}, chunk_size=1000)
    assert len(chunks) > 1
    data = [*chunks, pe.encode_entry([{"value": b"short"}], sequence_id=1)]
    entries = pa.table(
        {"ledger_id": [3] * len(data), "entry_id": list(range(len(data))), "data": pa.array(data, pa.binary())}
    )
    out = schemas.decode(entries, schema={"type": "STRING"})
    whole = out.filter(pc.is_valid(out["__value__"]))
    assert whole["__value__"].to_pylist() == [text, "short"]
    assert whole["error"].to_pylist() == [None, None]
