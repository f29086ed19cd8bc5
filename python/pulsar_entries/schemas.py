"""A topic's schema as typed columns.

:func:`topic_schemas` fetches a topic's schema versions from the schema
registry (the ``/schemas/...`` locator in the metadata store, the versions in
BookKeeper's schema ledgers) or from the broker's admin REST API;
:func:`typed` applies them to decoded messages in the Rust core, and
:func:`decode` does both steps on entries. ``read_topic(..., typed=True)``
reads a topic straight from storage into typed rows.

Schema types: AVRO (each message read with its own writer version and
resolved to the latest version under Avro's rules), JSON (Pulsar's JSON
schema carries an Avro definition; the payload is JSON text), the primitives
(STRING, BOOLEAN, INT8/16/32/64, FLOAT, DOUBLE, BYTES, DATE, TIME, TIMESTAMP,
INSTANT, LOCAL_DATE, LOCAL_TIME, LOCAL_DATE_TIME) and KEY_VALUE (INLINE and
SEPARATED) and PROTOBUF_NATIVE (Pulsar's ``ProtobufNativeSchemaData``: each
message decoded with its writer version's descriptors and projected onto the
latest version's fields by name; see the README). PROTOBUF (an Avro
description of the ``.proto``) is not decoded into columns: typing such a
topic raises :class:`pulsar_entries.OptionsError`.

Columns: the message columns stay as they are (``value`` only with
``value_column=True``), then a record schema's fields, one column each
(``__value.<name>`` where a field's name is a message column's), or
``__value__`` for any other schema; a KeyValue key's fields come first as
``__key.<name>`` (``__key__`` for a non-record key). A message its schema
cannot read keeps its row and its ``value``; ``error`` says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import pyarrow as pa

from . import _native
from ._cluster.admin import AdminRest, is_admin_url
from ._cluster.schemas import from_schema_info, registry_versions, rest_versions
from ._cluster.stores import open_store
from ._decode import decode as _decode
from .auth import AdminTls, Authentication, BookieTls, ZooKeeperAccess

__all__ = ["SchemaVersion", "TopicSchema", "decode", "topic_schemas", "typed", "typed_schema"]


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a topic's schema, in Pulsar's ``SchemaInfo`` shape."""

    version: int
    #: Pulsar's type name: ``AVRO``, ``JSON``, ``INT64``, ``KEY_VALUE``, ``PROTOBUF_NATIVE``, ...
    type: str
    #: The definition: an Avro schema's JSON for AVRO and JSON, empty for the primitives,
    #: KeyValue's ``[i32 length][key definition][i32 length][value definition]``,
    #: ``ProtobufNativeSchemaData`` JSON for PROTOBUF_NATIVE.
    schema: bytes
    properties: dict[str, str] = field(default_factory=dict)

    def definition(self) -> Any:
        """The definition parsed as JSON (AVRO, JSON), or ``None``."""
        if self.type not in ("AVRO", "JSON") or not self.schema:
            return None
        return json.loads(self.schema)


@dataclass(frozen=True)
class TopicSchema:
    """All the versions of a topic's schema, oldest first; the last is the
    reader schema. Picklable, so it can be shipped to Spark tasks."""

    topic: str
    versions: tuple[SchemaVersion, ...]
    #: Read every message with the latest version, whatever version it names
    #: (a schema the user passed, rather than the registry's versions).
    single: bool = False

    @property
    def latest(self) -> SchemaVersion:
        return self.versions[-1]

    def native(self) -> list[tuple[int, str, bytes, dict[str, str]]]:
        """The versions as the native typed decode takes them."""
        return [(v.version, v.type, v.schema, dict(v.properties)) for v in self.versions]


SchemaLike = Union[TopicSchema, Mapping[str, Any]]


def _topic_schema(topic: str, versions: Sequence[Mapping[str, Any]], *, single: bool = False) -> TopicSchema:
    if not versions:
        raise LookupError(f"topic {topic} has no schema versions")
    ordered = sorted(versions, key=lambda v: int(v["version"]))
    return TopicSchema(
        topic,
        tuple(
            SchemaVersion(int(v["version"]), str(v["type"]), bytes(v["schema"]), dict(v["properties"])) for v in ordered
        ),
        single,
    )


def topic_schemas(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    admin_auth: Authentication | None = None,
    admin_tls: AdminTls | None = None,
    metadata_access: ZooKeeperAccess | None = None,
    bookie_tls: BookieTls | None = None,
    timeout: float = 30.0,
) -> TopicSchema:
    """Every version of ``topic``'s schema, latest last.

    From the schema registry with ``metadata_url`` (``zk:...`` or
    ``rocksdb:...``: the locator node, then the schema ledgers read from the
    bookies, read only, over TLS with ``bookie_tls``), or from the broker's admin REST API with
    ``admin_url`` (or an ``http(s)://`` ``metadata_url``). Deleted versions are
    left out. A topic without a schema raises :class:`LookupError`.
    """
    if (metadata_url is None) == (admin_url is None):
        raise ValueError(
            "give one of metadata_url ('zk:host:2181', 'rocksdb:/path', 'http://broker:8080') or admin_url"
        )
    rest_url = admin_url if admin_url is not None else metadata_url if is_admin_url(metadata_url or "") else None
    base = _native.topic_paths(topic)["base"]
    if rest_url is not None:
        versions = rest_versions(
            base, AdminRest(rest_url, token=admin_token, auth=admin_auth, tls=admin_tls, timeout=timeout)
        )
    else:
        assert metadata_url is not None
        store = open_store(metadata_url, timeout=timeout, access=metadata_access)
        try:
            versions = registry_versions(base, store, timeout=timeout, bookie_tls=bookie_tls)
        finally:
            store.close()
    return _topic_schema(base, versions)


def as_topic_schema(schema: SchemaLike, topic: str = "") -> TopicSchema:
    """A :class:`TopicSchema` as it is, or one from a schema given in Pulsar's
    ``SchemaInfo`` shape (``{"type": "AVRO", "schema": <definition: JSON text,
    bytes or a parsed dict>, "properties": {...}}``), which reads every
    message whatever version it names."""
    if isinstance(schema, TopicSchema):
        return schema
    if isinstance(schema, Mapping):
        return _topic_schema(topic, [from_schema_info(dict(schema), version=schema.get("version", 0))], single=True)
    raise TypeError(f"schema must be a TopicSchema or a SchemaInfo dict, not {type(schema).__name__}")


def typed(messages: Any, schema: SchemaLike, *, value_column: bool = True) -> pa.Table:
    """Decoded messages (``decode``'s table) with ``schema`` as typed columns
    (see the module docs). Runs in the Rust core."""
    ts = as_topic_schema(schema)
    return _native.typed_decode(messages, ts.native(), value_column=value_column, by_version=not ts.single)


def typed_schema(messages_schema: pa.Schema, schema: SchemaLike, *, value_column: bool = True) -> pa.Schema:
    """The Arrow schema :func:`typed` gives for messages of ``messages_schema``
    (every batch gets the same one: what a data source declares up front)."""
    return typed(messages_schema.empty_table(), schema, value_column=value_column).schema


def decode(entries: Any, *, schema: SchemaLike, value_column: bool = True, **decode_options: Any) -> pa.Table:
    """:func:`pulsar_entries.decode` of ``entries`` (``decode_options`` are its
    options), chunked messages reassembled (:func:`pulsar_entries.reassemble_chunks`:
    its columns are added), then :func:`typed`."""
    messages = _native.reassemble_chunks(_decode(entries, **decode_options))
    return typed(messages, schema, value_column=value_column)
