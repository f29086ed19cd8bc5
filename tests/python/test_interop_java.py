"""Interop tests against Apache Pulsar's own Java classes.

The harness in tests/interop/java (pulsar-common, pinned version in its pom.xml) both
produces entries with Pulsar's producer/broker code paths (`run.sh generate`) and decodes
entries with Pulsar's consumer code path (`run.sh parse`). These tests check both
directions:

* Java-written entries decode identically with pulsar_entries (`decode`, `parse_entry`);
* entries written by `pulsar_entries.encode_entry` decode in Java to what we put in.

Java 17+ and Maven are required. Their absence, or a harness build failure, is a test
FAILURE, never a skip: silently skipping would hide the only byte-level check against the
reference implementation.
"""

from __future__ import annotations

import base64
import json
import random
import sys

import pyarrow as pa
import pytest

import pulsar_entries

from support.java_harness import run_harness

pytestmark = pytest.mark.interop

CODECS = ["none", "lz4", "zlib", "zstd", "snappy"]


# --------------------------------------------------------------------------- harness


@pytest.fixture(scope="module")
def java_cases() -> list[dict]:
    cases = run_harness("generate")
    assert len(cases) >= 30, f"harness generated only {len(cases)} cases"
    return cases


# --------------------------------------------------------------------------- helpers


def hex_or_none(value):
    return None if value is None else bytes(value).hex()


def with_int_times(table: pa.Table) -> pa.Table:
    """Timestamp columns (event_time, publish_time, broker_timestamp) as int64 milliseconds."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("ms")).cast(pa.int64())
        columns[name] = column
    return pa.table(columns)


def normalize_key(key, java_b64: bool):
    """Our key as Java reports it: binary keys travel as base64 text (flag set)."""
    if isinstance(key, (bytes, bytearray)):
        return base64.b64encode(key).decode() if java_b64 else bytes(key).decode("utf-8")
    return key


def entry_level(case: dict) -> dict:
    md = case["metadata"]
    bem = case["broker_entry_metadata"] or {}
    return {
        "producer_name": md["producer_name"],
        "publish_time": md["publish_time"],
        "compression": md.get("compression", "NONE").lower(),
        "broker_timestamp": bem.get("broker_timestamp"),
        "broker_index": bem.get("index"),
        "num_messages": md.get("num_messages_in_batch", 1),
    }


def report(mismatches: list, limit: int = 25) -> str:
    lines = [f"{len(mismatches)} mismatches (showing {min(limit, len(mismatches))}):"]
    lines += [f"  {m}" for m in mismatches[:limit]]
    return "\n".join(lines)


# --------------------------------------------------------------------------- Java -> us


def test_pulsar_entries_decode_matches_java(java_cases):
    n = len(java_cases)
    table = pa.table(
        {
            "ledger_id": pa.array([42] * n, pa.int64()),
            "entry_id": pa.array(range(n), pa.int64()),
            "data": pa.array([bytes.fromhex(c["entry"]) for c in java_cases], pa.binary()),
        }
    )
    out = with_int_times(pulsar_entries.decode(table))

    errors = [e for e in out.column("error").to_pylist() if e is not None]
    assert not errors, f"decode reported errors: {errors[:5]}"

    rows_by_entry: dict[int, list[dict]] = {}
    for row in out.to_pylist():
        rows_by_entry.setdefault(row["entry_id"], []).append(row)

    mismatches = []
    for entry_id, case in enumerate(java_cases):
        rows = sorted(rows_by_entry.get(entry_id, []), key=lambda r: r["batch_index"])
        # decode keeps compaction placeholders as rows flagged compacted_out, so row counts
        # reconcile with num_messages_in_batch; the Java report lists them too.
        expected = case["messages"]
        header = case["metadata"]
        if len(rows) != len(expected):
            mismatches.append((case["name"], "row count", len(rows), len(expected)))
            continue
        level = entry_level(case)
        for row, msg in zip(rows, expected):
            want = {
                "batch_index": msg["batch_index"],
                "key": msg["key"],
                "key_b64_encoded": msg["key_b64"],
                "ordering_key": msg["ordering_key"],
                "properties": [tuple(kv) for kv in msg["properties"]],
                # Java's MessageImpl falls back to the batch header for these two.
                "event_time": msg["event_time"] or header.get("event_time") or None,
                "sequence_id": header["sequence_id"] if msg["sequence_id"] is None else msg["sequence_id"],
                "value": None if msg["null_value"] else msg["value"],
                "compacted_out": msg["compacted_out"],
                **level,
            }
            got = {
                "batch_index": row["batch_index"],
                "key": normalize_key(row["key"], msg["key_b64"]),
                "key_b64_encoded": bool(row["key_b64_encoded"]),
                "ordering_key": hex_or_none(row["ordering_key"]),
                "properties": [tuple(kv) for kv in (row["properties"] or [])],
                # Pulsar treats event_time 0 as unset, as does the Java report.
                "event_time": row["event_time"] or None,
                "sequence_id": row["sequence_id"],
                "value": hex_or_none(row["value"]),
                "compacted_out": bool(row["compacted_out"]),
                "producer_name": row["producer_name"],
                "publish_time": row["publish_time"],
                "compression": (row["compression"] or "none").lower(),
                "broker_timestamp": row["broker_timestamp"],
                "broker_index": row["broker_index"],
                "num_messages": row["num_messages"],
            }
            for field, value in want.items():
                if got[field] != value:
                    mismatches.append((case["name"], msg["batch_index"], field, got[field], value))
    assert not mismatches, report(mismatches)


def _normalize_our_metadata(md: dict) -> dict:
    out = {}
    for name, value in md.items():
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).hex()
        elif name == "compression" and value is not None:
            value = str(value).lower()
        elif name == "properties":
            items = value.items() if isinstance(value, dict) else value
            value = [list(kv) for kv in items]
        elif isinstance(value, (list, tuple)):
            value = list(value)
        if isinstance(value, list) and not value:
            continue  # repeated fields have no presence; Java omits them when empty
        out[name] = value
    return out


def _normalize_java_metadata(md: dict) -> dict:
    out = dict(md)
    if "compression" in out:
        out["compression"] = out["compression"].lower()
    return out


def _normalize_bem(bem):
    if bem is None:
        return None
    return {"broker_timestamp": bem.get("broker_timestamp"), "index": bem.get("index")}


def test_pulsar_entries_parse_entry_metadata_matches_java(java_cases):
    mismatches = []
    for case in java_cases:
        parsed = pulsar_entries.parse_entry(bytes.fromhex(case["entry"]))
        ours = _normalize_our_metadata(parsed["metadata"])
        java = _normalize_java_metadata(case["metadata"])
        if ours.keys() != java.keys():
            mismatches.append(
                (case["name"], "metadata keys", sorted(ours.keys() - java.keys()), sorted(java.keys() - ours.keys()))
            )
        for name in ours.keys() & java.keys():
            if ours[name] != java[name]:
                mismatches.append((case["name"], name, ours[name], java[name]))
        ours_bem = _normalize_bem(parsed.get("broker_entry_metadata"))
        if ours_bem != case["broker_entry_metadata"]:
            mismatches.append((case["name"], "broker_entry_metadata", ours_bem, case["broker_entry_metadata"]))
    assert not mismatches, report(mismatches)


# --------------------------------------------------------------------------- us -> Java


def _payload(rng: random.Random, size: int) -> bytes:
    if rng.random() < 0.5:
        words = [b"pulsar", b"entry", b"batch", b"ledger", b"codec", b"value", b"key"]
        text = b" ".join(rng.choice(words) for _ in range(size // 4 + 1))
        return text[:size]
    return rng.randbytes(size)


def decode_entries(rng: random.Random, count: int, first_seq: int) -> list[dict]:
    """A deterministic mix: string/binary/no keys, null and empty values, properties, ordering keys."""
    msgs = []
    for i in range(count):
        kind = i % 6
        msgs.append(
            {
                "value": None if kind == 3 else (b"" if kind == 2 else _payload(rng, rng.randint(1, 3_000))),
                "key": {0: f"key-{i}", 1: rng.randbytes(6), 4: "ключ", 5: ""}.get(kind),
                "properties": {"i": str(i), "kind": str(kind)} if kind in (0, 4) else {},
                "event_time": 1_700_000_000_000 + i if kind in (0, 1) else None,
                "sequence_id": first_seq + i,
                "ordering_key": b"ord-" + bytes([i % 3]) if kind in (1, 4) else None,
            }
        )
    return msgs


def _our_entries() -> list[dict]:
    """~30 entries over all codecs, singles and batches, with/without checksum and broker metadata."""
    rng = random.Random(1234)
    specs = []
    seq = 0
    publish_time = 1_700_000_000_000
    for codec in CODECS:
        shapes = [
            ("single", False, 1, True, None, None),
            ("single-big", False, 1, True, None, None),
            ("batch", True, 10, True, None, None),
            ("batch-of-one", True, 1, True, None, None),
            ("batch-no-checksum", True, 25, False, None, None),
            ("batch-broker-metadata", True, 8, True, 1_700_000_000_500 + len(specs), 1_000 + len(specs)),
        ]
        for shape, batch, count, checksum, broker_ts, broker_index in shapes:
            msgs = decode_entries(rng, count, seq)
            if shape == "single-big":
                msgs[0]["value"] = _payload(rng, 90_000)
            seq += count
            publish_time += 1
            specs.append(
                {
                    "name": f"{codec}-{shape}",
                    "messages": msgs,
                    "kwargs": {
                        "batch": batch,
                        "compression": codec,
                        "checksum": checksum,
                        "broker_timestamp": broker_ts,
                        "broker_index": broker_index,
                        "producer_name": f"pulsar-entries-{codec}",
                        "sequence_id": msgs[0]["sequence_id"],
                        "publish_time": publish_time,
                    },
                }
            )
    return specs


def _expected_java_message(msg: dict, index: int, batch: bool) -> dict:
    key = msg["key"]
    binary_key = isinstance(key, (bytes, bytearray))
    return {
        "batch_index": index if batch else -1,
        "key": base64.b64encode(key).decode() if binary_key else key,
        "key_b64": binary_key,
        "ordering_key": hex_or_none(msg["ordering_key"]),
        "properties": [[k, v] for k, v in msg["properties"].items()],
        "event_time": msg["event_time"],
        "sequence_id": msg["sequence_id"],
        "null_value": msg["value"] is None,
        "compacted_out": False,
        "value": (msg["value"] or b"").hex(),
    }


def test_java_parses_our_entries():
    specs = _our_entries()
    entries = [pulsar_entries.encode_entry(s["messages"], **s["kwargs"]) for s in specs]
    parsed = run_harness("parse", json.dumps([bytes(e).hex() for e in entries]))
    assert len(parsed) == len(specs)

    mismatches = []
    for spec, result in zip(specs, parsed):
        name, kw = spec["name"], spec["kwargs"]
        if "error" in result:
            mismatches.append((name, "java error", result["error"]))
            continue
        md = result["metadata"]
        checks = {
            "has_checksum": (result["has_checksum"], kw["checksum"]),
            "checksum_valid": (result["checksum_valid"], True if kw["checksum"] else None),
            "producer_name": (md.get("producer_name"), kw["producer_name"]),
            "sequence_id": (md.get("sequence_id"), kw["sequence_id"]),
            "publish_time": (md.get("publish_time"), kw["publish_time"]),
            "compression": (md.get("compression", "NONE").lower(), kw["compression"]),
            "num_messages_in_batch": (md.get("num_messages_in_batch"), len(spec["messages"]) if kw["batch"] else None),
            "broker_entry_metadata": (
                result["broker_entry_metadata"],
                None
                if kw["broker_timestamp"] is None and kw["broker_index"] is None
                else {"broker_timestamp": kw["broker_timestamp"], "index": kw["broker_index"]},
            ),
        }
        for field, (got, want) in checks.items():
            if got != want:
                mismatches.append((name, field, got, want))

        expected = [_expected_java_message(m, i, kw["batch"]) for i, m in enumerate(spec["messages"])]
        got_messages = result["messages"]
        if len(got_messages) != len(expected):
            mismatches.append((name, "message count", len(got_messages), len(expected)))
            continue
        for got, want in zip(got_messages, expected):
            for field, value in want.items():
                if got[field] != value:
                    mismatches.append((name, want["batch_index"], field, got[field], value))
    assert not mismatches, report(mismatches)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


# --------------------------------------------------------------------------- broker entry metadata


def stamp_inputs() -> list[bytes]:
    """Entries of every shape the interceptors see, one already carrying a prefix."""
    from pulsar_entries import kafka

    batch = pulsar_entries.encode_entry(
        [{"value": b"a"}, {"value": b"b"}, {"value": None, "key": "k"}], compression="zstd", publish_time=1
    )
    single = pulsar_entries.encode_entry([{"value": b"solo"}], publish_time=2)
    lone_batch = pulsar_entries.encode_entry([{"value": b"one"}], batch=True, publish_time=3)
    restamp = pulsar_entries.encode_entry([{"value": b"x"}] * 4, publish_time=4, broker_timestamp=9, broker_index=9)
    marker = bytes.fromhex(
        "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
    )
    kop = kafka.kop_entry(
        [
            kafka.record_batch([{"value": b"k1"}, {"value": b"k2", "offset_delta": 6}]),
            kafka.record_batch([{"value": b"k3"}]),
        ],
        publish_time=5,
    )
    zero = bytes.fromhex("000000090a0170100018015800")  # num_messages_in_batch = 0: no prefix
    return [batch, single, lone_batch, restamp, marker, kop, zero, batch]


def java_stamp(entries: list[bytes], *, start_index: int, timestamp: bool, index: bool) -> list[dict]:
    request = {
        "start_index": start_index,
        "timestamp": timestamp,
        "index": index,
        "entries": [e.hex() for e in entries],
    }
    return run_harness("stamp", json.dumps(request))


def test_stamp_prefix_equals_pulsars_index_interceptor_byte_for_byte():
    entries = stamp_inputs()
    java = java_stamp(entries, start_index=41, timestamp=False, index=True)
    ours = pulsar_entries.stamp(pulsar_entries.entries_table(entries), start_index=41, timestamp=False)
    assert [j["count"] for j in java] == [3, 1, 1, 4, 1, 8, 0, 3]
    assert ours["data"].to_pylist() == [bytes.fromhex(j["entry"]) for j in java]


@pytest.mark.parametrize("with_index", [True, False])
def test_stamp_prefix_equals_pulsars_timestamp_interceptor_for_the_same_clock(with_index):
    # AppendBrokerTimestampMetadataInterceptor reads System.currentTimeMillis():
    # take the times Pulsar stamped and give ours the same ones.
    entries = stamp_inputs()
    java = [bytes.fromhex(j["entry"]) for j in java_stamp(entries, start_index=-1, timestamp=True, index=with_index)]
    times = [
        (pulsar_entries.parse_entry(j)["broker_entry_metadata"] or {"broker_timestamp": 0})["broker_timestamp"]
        for j in java
    ]
    assert all(t > 1_600_000_000_000 for i, t in enumerate(times) if i != 6)
    ours = pulsar_entries.stamp(pulsar_entries.entries_table(entries), timestamps=times, index=with_index)
    assert ours["data"].to_pylist() == java
