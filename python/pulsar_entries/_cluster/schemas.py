"""A topic's schema versions, from the schema registry in the metadata store
and BookKeeper, or from the broker's admin REST API. Read only.

The registry (Pulsar's ``BookkeeperSchemaStorage``; spec bookkeeper.md §1.6)
keeps a ``SchemaLocator`` at ``/schemas/<tenant>/<ns>/<topic>`` (in the local
metadata store, one for all partitions of a topic) that points at entries of
schema ledgers; each entry is a ``SchemaEntry`` holding one version's
``SchemaInfo``. Schema ledgers are written like the topic's own (digest type
in their metadata, empty password), so the same read-only client reads them:
no fencing, nothing past the last-add-confirmed.

Each version comes back as a dict: ``version, type, schema (bytes),
properties``; deleted versions are left out. KeyValue definitions are in the
registry's binary form (``[i32 length][key][i32 length][value]``) whichever
source they came from: the REST API gives them as JSON, converted here.
"""

from __future__ import annotations

import json
import struct
import urllib.parse
from collections.abc import Mapping
from typing import Any

import pulsar_entries._native as _native
from pulsar_entries.auth import BookieTls, bookie_client_options

from .admin import AdminRest, _Answer
from .layout import ledger_of
from .stores import MetadataStore


def registry_versions(
    topic: str, store: MetadataStore, *, timeout: float = 30.0, bookie_tls: BookieTls | None = None
) -> list[dict[str, Any]]:
    """The schema versions of ``topic`` from the registry: the locator node in
    ``store``, the versions' entries from the bookies (over TLS with ``bookie_tls``)."""
    paths = _native.topic_paths(topic)
    node = store.get(paths["schema"])
    if node is None:
        raise LookupError(f"topic {paths['base']} has no schema in the registry (no node at {paths['schema']})")
    locations = _native.schema_locations(node)
    records, bookies = _native.resolve_ledgers(sorted({lid for _, lid, _ in locations}), store)
    ledgers = {r.ledger_id: ledger_of(r) for r in records}
    missing = [lid for lid, led in ledgers.items() if led.metadata is None]
    if missing:
        raise LookupError(f"topic {paths['base']}: schema ledgers {missing} have no metadata in the store")
    reader = _native.BookieReader(bookies, options=bookie_client_options(timeout, bookie_tls))
    out = []
    for version, lid, eid in locations:
        led = ledgers[lid]
        assert led.metadata is not None
        batch = reader.read_ledger(lid, led.metadata, eid, eid)
        rows = batch.to_pylist()
        if len(rows) != 1 or rows[0]["error"] is not None or rows[0]["data"] is None:
            why = rows[0]["error"] if rows else "no entry"
            raise OSError(f"schema version {version} of {paths['base']} (ledger {lid} entry {eid}): {why}")
        entry = _native.schema_entry(version, rows[0]["data"])
        if not entry["deleted"]:
            out.append(_version(entry))
    return out


def _version(d: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "version": int(d["version"]),
        "type": str(d["type"]),
        "schema": bytes(d["schema"]),
        "properties": dict(d.get("properties") or {}),
    }


def _schemas_path(topic: str) -> str:
    paths = _native.topic_paths(topic)
    base = paths["base"].split("://", 1)[-1]
    tenant, ns, local = base.split("/", 2)
    return "/admin/v2/schemas/" + "/".join(urllib.parse.quote(p, safe="") for p in (tenant, ns, local))


def rest_versions(topic: str, admin: AdminRest) -> list[dict[str, Any]]:
    """The schema versions of ``topic`` from the admin REST API
    (``GET /admin/v2/schemas/{tenant}/{ns}/{topic}/schemas``)."""
    path = _schemas_path(topic)
    answer = admin.get(path + "/schemas", what=f"the schema of {topic}")
    items = answer.get("getSchemaResponses") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ValueError(f"topic {topic}: the broker's schema list is {str(answer)[:80]!r}")
    check = _Answer(topic)
    out = []
    for i, item in enumerate(items):
        where = f"schemas.getSchemaResponses[{i}]"
        info = check.obj(item, where)
        version = check.field(info, "version", where, "count", None)
        check.field(info, "type", where, "str")
        check.field(info, "properties", where, "dict", None)
        out.append(from_schema_info(info, version=version))
    return out


def from_schema_info(info: Any, *, version: Any = None) -> dict[str, Any]:
    """A version dict from Pulsar's ``SchemaInfo`` JSON shape (``type``,
    ``schema`` or ``data``, ``properties``): the REST API's, or a user's. The
    definition may be bytes, text, or parsed JSON."""
    if not isinstance(info, dict):
        raise TypeError(f"a schema is a dict with 'type' and 'schema' (Pulsar's SchemaInfo), not {type(info).__name__}")
    type_name = info.get("type")
    if not isinstance(type_name, str) or not type_name:
        raise ValueError(f"a schema needs a 'type' (AVRO, JSON, INT64, KEY_VALUE, ...), got {type_name!r}")
    raw = info.get("schema", info.get("data", b""))
    properties = {str(k): str(v) for k, v in (info.get("properties") or {}).items()}
    upper = type_name.upper()
    if upper in ("KEY_VALUE", "KEYVALUE"):
        definition = _key_value_definition(raw)
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        definition = bytes(raw)
    elif isinstance(raw, str):
        definition = raw.encode()
    elif raw is None:
        definition = b""
    else:
        definition = json.dumps(raw, separators=(",", ":")).encode()
    return {
        "version": int(version) if version is not None else 0,
        "type": upper,
        "schema": definition,
        "properties": properties,
    }


def _key_value_definition(raw: Any) -> bytes:
    """KeyValue's binary definition from the REST API's JSON form
    (``{"key": <schema or "">, "value": <schema or "">}``), or as it is when
    already binary."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw)
        if not raw.lstrip().startswith(b"{"):
            return raw
        raw = raw.decode()
    parsed = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(parsed, dict) or "key" not in parsed or "value" not in parsed:
        raise ValueError("a KEY_VALUE schema's definition is {'key': ..., 'value': ...} or the binary form")

    def part(p: Any) -> bytes:
        if p in ("", None):
            return b""
        if isinstance(p, str):
            return p.encode()
        return json.dumps(p, separators=(",", ":")).encode()

    k, v = part(parsed["key"]), part(parsed["value"])
    return struct.pack(">i", len(k)) + k + struct.pack(">i", len(v)) + v
