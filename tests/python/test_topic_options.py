"""The typed options of ``spark.read.format("pulsar")``, checked on the driver before any look-up."""

from __future__ import annotations

import json

import pytest

from pulsar_entries.spark._topic_options import TopicOptions, resolve_schema

pytestmark = pytest.mark.spark

BASE = {"topic": "persistent://public/default/orders", "metadataUrl": "zk:127.0.0.1:1"}


def test_typed_defaults_and_bad_values() -> None:
    assert TopicOptions.parse(BASE).typed == "auto"
    assert TopicOptions.parse({**BASE, "schema": json.dumps({"type": "INT64"})}).typed == "true"
    with pytest.raises(ValueError, match="option typed='maybe'"):
        TopicOptions.parse({**BASE, "typed": "maybe"})
    with pytest.raises(ValueError, match="cannot go with typed=false"):
        TopicOptions.parse({**BASE, "typed": "false", "schema": json.dumps({"type": "INT64"})})
    with pytest.raises(ValueError, match="option schema: not JSON"):
        TopicOptions.parse({**BASE, "schema": "{avro"})
    with pytest.raises(ValueError, match='with a "type"'):
        TopicOptions.parse({**BASE, "schema": "[1]"})


def test_resolve_schema_without_a_registry_look_up() -> None:
    topics = [BASE["topic"]]
    # typed=false, and chunks left unreassembled under auto: untyped, nothing looked up (the store is unreachable).
    assert resolve_schema(TopicOptions.parse({**BASE, "typed": "false"}), topics) is None
    assert resolve_schema(TopicOptions.parse({**BASE, "reassembleChunks": "false"}), topics) is None
    with pytest.raises(ValueError, match="need whole messages"):
        resolve_schema(TopicOptions.parse({**BASE, "typed": "true", "reassembleChunks": "false"}), topics)
    # A passed schema applies to every message of every topic.
    given = resolve_schema(TopicOptions.parse({**BASE, "schema": json.dumps({"type": "INT64"})}), topics)
    assert given is not None and given[topics[0]].single and given[topics[0]].latest.type == "INT64"
    # A stopped cluster's files: the schema ledgers need running bookies.
    offline = {**BASE, "bookieDirs": "/nonexistent"}
    assert resolve_schema(TopicOptions.parse(offline), topics) is None
    with pytest.raises(ValueError, match="pass the topic's schema"):
        resolve_schema(TopicOptions.parse({**offline, "typed": "true"}), topics)


def test_unsigned_columns_reach_spark_exactly() -> None:
    """Protobuf's unsigned integers: Spark has none, so each widens to a type holding every value."""
    import pyarrow as pa

    from pulsar_entries.spark._arrow import conform, spark_schema

    batch = pa.RecordBatch.from_pydict(
        {
            "u8": pa.array([255], pa.uint8()),
            "u16": pa.array([65535], pa.uint16()),
            "u32": pa.array([2**32 - 1], pa.uint32()),
            "u64": pa.array([2**64 - 1], pa.uint64()),
            "nested": pa.array([[{"q": 2**32 - 1}]], pa.list_(pa.struct([pa.field("q", pa.uint32())]))),
        }
    )
    assert [f.dataType.simpleString() for f in spark_schema(batch.schema).fields] == [
        "smallint",
        "int",
        "bigint",
        "decimal(20,0)",
        "array<struct<q:bigint>>",
    ]
    out = conform(batch, large=False).to_pylist()[0]
    assert out["u8"] == 255 and out["u16"] == 65535 and out["u32"] == 2**32 - 1
    assert out["u64"] == 2**64 - 1 and out["nested"] == [{"q": 2**32 - 1}]


def test_the_data_source_docstring_documents_every_option() -> None:
    from pulsar_entries.spark._topic import PulsarTopicDataSource
    from pulsar_entries.spark._topic_options import OPTIONS

    doc = PulsarTopicDataSource.__doc__ or ""
    assert [o for o in OPTIONS if f"``{o}``" not in doc] == []
    # The decode and reassembly defaults it states are the core's.
    from pulsar_entries import _native

    d, r = _native.DecodeOptions(), _native.ReassemblyOptions()
    assert f"defaults: true, false, {d.max_uncompressed_size}, ``{d.utf8_errors}``, none" in doc
    assert f"defaults:\n      {r.max_pending}, {r.expire_after_ms}, {r.max_message_size}" in doc
