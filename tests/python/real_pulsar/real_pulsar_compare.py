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


def broker_compacted_ledger(metadata_url: str, topic: str) -> pa.Table:
    """The broker's compacted ledger of a (non-partitioned) topic or partition, read from the bookie:
    ``ledger_id, entry_id, data, error``, each ``data`` a compacted-ledger record."""
    from pulsar_entries import _cluster, _native

    store = _cluster.open_store(metadata_url)
    try:
        layout = _cluster.resolve_topic(topic, store)
    finally:
        store.close()
    (part,) = layout.partitions
    assert part.compacted is not None and part.compacted.info["digest_type"] == "CRC32"
    broker = pa.table(
        _native.BookieReader(layout.bookies).read_ledger(part.compacted.ledger_id, part.compacted.metadata)
    )
    assert broker.filter(pc.is_valid(broker["error"])).num_rows == 0
    return broker


def assert_records_equal_broker(ours: pa.Table, broker: pa.Table) -> None:
    """Our compacted-ledger records (``to_ledger_records``) equal the broker's compacted ledger: the same
    records with the same message ids, byte for byte where the codec's output is deterministic across
    implementations (NONE, ZLIB, SNAPPY), the same messages otherwise."""
    assert ours.num_rows == broker.num_rows
    mine = pe.from_ledger_records(ours["record"].to_pylist())
    theirs = pe.from_ledger_records(broker["data"].to_pylist())
    for column in ("ledger_id", "entry_id", "partition"):
        assert mine[column].to_pylist() == theirs[column].to_pylist(), column
    codecs = pe.decode(theirs.select(["ledger_id", "entry_id", "data"]))
    codec_of = {(r["ledger_id"], r["entry_id"]): r["compression"] for r in codecs.to_pylist()}
    same_bytes = 0
    for a, b in zip(mine.to_pylist(), theirs.to_pylist()):
        if codec_of[(b["ledger_id"], b["entry_id"])] in ("none", "zlib", "snappy"):
            assert a["data"] == b["data"], (b["ledger_id"], b["entry_id"])
            same_bytes += 1
    assert same_bytes > 0
    view = ["ledger_id", "entry_id", "batch_index", "key", "value", "properties", "compacted_out", "publish_time"]
    assert (
        pe.decode(mine.select(["ledger_id", "entry_id", "data"])).select(view).to_pylist()
        == codecs.select(view).to_pylist()
    )
