"""Shared comparisons for the real-Pulsar tests: our reading of the offloaded ledgers vs Java Readers."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries as pe


def partition_of(topic: str) -> int:
    _, sep, tail = topic.rpartition("-partition-")
    return int(tail) if sep else -1


def millis(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return int(v.timestamp() * 1000) if v.tzinfo else int(v.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    return v


def topic_entries(rp: Any, topic: str) -> pa.Table:
    """The topic's offloaded entries as ``decode`` takes them (a ``partition`` column for a partition)."""
    ledgers = rp.offloaded[topic]
    table = rp.read_offloaded(ledgers)
    errors = table.filter(pc.is_valid(table["error"]))
    assert errors.num_rows == 0, errors.to_pylist()[:3]
    table = table.drop_columns(["error"])
    p = partition_of(topic)
    if p >= 0:
        table = table.append_column("partition", pa.array([p] * table.num_rows, pa.int32()))
    return table


def ours(rp: Any, topic: str) -> list[dict[str, Any]]:
    """decode + reassemble_chunks, as a Reader would deliver: no markers, no aborted transactions."""
    rows = pe.reassemble_chunks(pe.decode(topic_entries(rp, topic))).to_pylist()
    for r in rows:
        assert r["error"] is None, r
    return [r for r in rows if r["txn_status"] != "aborted" and not r["compacted_out"]]


def java_view(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": (m["ledger_id"], m["entry_id"], m["partition"], m["batch_index"]),
        "first_chunk": (m["first_chunk"]["ledger_id"], m["first_chunk"]["entry_id"]) if "first_chunk" in m else None,
        "producer_name": m["producer_name"],
        "sequence_id": m["sequence_id"],
        "key": m["key"],
        "value": None if m["value"] is None else base64.b64decode(m["value"]),
        "properties": m["properties"],
        "publish_time": m["publish_time"],
        "event_time": m["event_time"] or None,
        "broker_publish_time": m["broker_publish_time"],
    }


def our_view(r: dict[str, Any]) -> dict[str, Any]:
    chunked = r.get("first_chunk_ledger_id") is not None
    return {
        "id": (r["ledger_id"], r["entry_id"], r["partition"], r["batch_index"]),
        "first_chunk": (r["first_chunk_ledger_id"], r["first_chunk_entry_id"]) if chunked else None,
        "producer_name": r["producer_name"],
        "sequence_id": r["sequence_id"],
        "key": r["key"],
        "value": r["value"],
        "properties": dict(r["properties"] or []),
        "publish_time": millis(r["publish_time"]),
        "event_time": millis(r["event_time"]),
        "broker_publish_time": millis(r["broker_timestamp"]),
    }


def assert_same_messages(java: list[dict[str, Any]], mine: list[dict[str, Any]]) -> None:
    expected = [java_view(m) for m in java]
    actual = [our_view(r) for r in mine]
    assert len(actual) == len(expected), (len(actual), len(expected))
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a == e, f"message {i}: ours {a} != Java Reader {e}"


def delivered(entries: pa.Table) -> list[dict[str, Any]]:
    """What a Reader is delivered from these entries: no markers, no aborted transactions."""
    errors = entries.filter(pc.is_valid(entries["error"]))
    assert errors.num_rows == 0, errors.to_pylist()[:3]
    rows = pe.reassemble_chunks(pe.decode(entries.drop_columns(["error"]))).to_pylist()
    for r in rows:
        assert r["error"] is None, r
    return [r for r in rows if r["txn_status"] != "aborted" and not r["compacted_out"]]
