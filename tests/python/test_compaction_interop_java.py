"""Compaction against Apache Pulsar 4.2.4's own classes (tests/interop/java).

The harness runs the broker's two-phase loop with Pulsar's pieces
(`RawBatchConverter.extractMessageCompactionData`, `rebatchMessage`,
`Markers`, `Commands`, `RawMessageImpl.serialize`) on the same input entries:

* NONE, ZLIB and SNAPPY entries are byte-identical, ledger records included
  (our ZLIB encoder reproduces java.util.zip.Deflater's sync-flushed stream,
  our SNAPPY encoder airlift's SnappyRawCompressor);
* LZ4 and ZSTD entries are decoded-equal: metadata field for field (field 31
  and `uncompressed_size` included) and every message. Their compressed bytes
  differ because the encoders differ: lz4_flex vs airlift's Lz4Compressor,
  libzstd vs airlift's ZstdCompressor.

A missing Java or Maven is a failure, never a skip.
"""

from __future__ import annotations

import collections
import json
import random

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries._sample import generate_topic

from support.java_harness import run_harness

pytestmark = pytest.mark.interop

BYTE_EQUAL_CODECS = {None, "none", "zlib", "snappy"}


@pytest.fixture(scope="module")
def java_topic() -> pa.Table:
    """Every entry of the harness's `generate` run, as one topic."""
    cases = run_harness("generate")
    return pe.entries_table([bytes.fromhex(c["entry"]) for c in cases], ledger_id=21)


@pytest.fixture(scope="module")
def sample_topic() -> pa.Table:
    # Pulsar entries only: RawBatchConverter cannot parse KoP payloads (we keep those unchanged).
    # Chunked messages differ by design (we keep every chunk, Pulsar only the last).
    return generate_topic(250, seed=11, corrupt=0, kafka_share=0.0, chunked=0).entries


def java_compact(topic: pa.Table, order: str, retain: bool) -> list[dict]:
    payload = {
        "entries": [
            {"ledger_id": r["ledger_id"], "entry_id": r["entry_id"], "entry": r["data"].hex()}
            for r in topic.select(["ledger_id", "entry_id", "data"]).to_pylist()
        ],
        "order": order,
        "retain_null_key": retain,
    }
    return run_harness("compact", json.dumps(payload))


def compare_entries(ours: bytes, java: bytes, where, original: bytes | None = None) -> list:
    """Byte equality where the codec allows it, decoded equality everywhere."""
    problems = []
    a, b = pe.parse_entry(ours), pe.parse_entry(java)
    codec = b["metadata"].get("compression")
    # Single messages (and chunks) are copied byte for byte by both.
    single = original is not None and "num_messages_in_batch" not in pe.parse_entry(original)["metadata"]
    if single and (java != original or ours != original):
        problems.append((where, "a single message was not copied byte for byte"))
    if codec in BYTE_EQUAL_CODECS and ours != java:
        problems.append((where, f"{codec}: bytes differ", ours.hex()[:120], java.hex()[:120]))
    if a["metadata"] != b["metadata"]:
        problems.append((where, "metadata", a["metadata"], b["metadata"]))
    if a["broker_entry_metadata"] != b["broker_entry_metadata"]:
        problems.append((where, "broker entry metadata"))
    if a["checksum"] != b["checksum"] and not (
        a["checksum"]["valid"] and b["checksum"]["valid"] and codec not in BYTE_EQUAL_CODECS
    ):
        problems.append((where, "checksum", a["checksum"], b["checksum"]))
    rows = [pe.decode(pe.entries_table([d])).drop_columns(["compression"]).to_pylist() for d in (ours, java)]
    if rows[0] != rows[1]:
        problems.append((where, "decoded messages differ"))
    return problems


@pytest.mark.parametrize("order", ["publish", "event_time"])
@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("topic_name", ["sample_topic", "java_topic"])
def test_compaction_matches_pulsar(request, topic_name, order, retain):
    topic = request.getfixturevalue(topic_name)
    java = java_compact(topic, order, retain)
    ours = pe.compact(topic, order=order, retain_null_key=retain)
    assert ours["error"].null_count == ours.num_rows
    assert ours["entry_id"].to_pylist() == [j["entry_id"] for j in java]
    originals = dict(zip(topic["entry_id"].to_pylist(), topic["data"].to_pylist()))
    records = pe.to_ledger_records(ours)["record"].to_pylist()
    problems, byte_equal, rebuilt = [], 0, collections.Counter()
    for j, data, record in zip(java, ours["data"].to_pylist(), records):
        jb = bytes.fromhex(j["entry"])
        problems += compare_entries(data, jb, j["entry_id"], originals[j["entry_id"]])
        if data == jb:
            byte_equal += 1
            if record != bytes.fromhex(j["record"]):
                problems.append((j["entry_id"], "ledger record differs"))
            if data != originals[j["entry_id"]]:
                rebuilt[pe.parse_entry(data)["metadata"].get("compression")] += 1
    assert not problems, problems[:10]
    assert len(java) > 5 and byte_equal > 0
    # Batches both sides rewrote (compacted_out placeholders), byte for byte: SNAPPY among them.
    assert rebuilt["snappy"] > 0 or topic_name == "java_topic", rebuilt
    if topic_name == "java_topic":
        codecs = {pe.parse_entry(d)["metadata"].get("compression") for d in ours["data"].to_pylist()}
        assert {None, "lz4", "zlib", "zstd", "snappy"} <= codecs | {None}


def test_rebatch_matches_rawbatchconverter(java_topic, sample_topic):
    """Our phase-two rewrite (the Spark building block) against RawBatchConverter,
    with random retained sets over every batch of both topics."""
    rng = random.Random(4)
    rows = []
    for topic in (java_topic, sample_topic):
        for r in topic.to_pylist():
            md = pe.parse_entry(r["data"])["metadata"]
            n = md.get("num_messages_in_batch")
            if n is None or md.get("marker_type") is not None:
                continue
            retain = sorted(rng.sample(range(n), rng.randint(0, n)))
            rows.append({**r, "retain": retain, "retain_null_key": rng.random() < 0.5})
    # A highly compressible ZSTD batch (Pulsar #26290).
    big = pe.encode_entry(
        [{"key": f"k{i}", "value": b"\0" * 100_000} for i in range(30)], compression="zstd", publish_time=1
    )
    rows.append({"ledger_id": 3, "entry_id": 9, "data": big, "retain": list(range(1, 30, 2)), "retain_null_key": False})
    java = run_harness(
        "rebatch",
        json.dumps(
            [
                {
                    "ledger_id": r["ledger_id"],
                    "entry_id": r["entry_id"],
                    "entry": r["data"].hex(),
                    "retain": r["retain"],
                    "retain_null_key": r["retain_null_key"],
                }
                for r in rows
            ]
        ),
    )
    problems, rebuilt = [], collections.Counter()
    for retain_null_key in (False, True):
        subset = [(r, j) for r, j in zip(rows, java) if r["retain_null_key"] == retain_null_key]
        table = pa.table(
            {
                "ledger_id": pa.array([r["ledger_id"] for r, _ in subset], pa.int64()),
                "entry_id": pa.array([r["entry_id"] for r, _ in subset], pa.int64()),
                "data": pa.array([r["data"] for r, _ in subset], pa.binary()),
                "retained": pa.array([r["retain"] for r, _ in subset], pa.list_(pa.int32())),
            }
        )
        ours = pe._native.rebuild_entries(table, options=pe._native.CompactionOptions(retain_null_key=retain_null_key))
        by_id = dict(zip(zip(ours["ledger_id"].to_pylist(), ours["entry_id"].to_pylist()), ours["data"].to_pylist()))
        for r, j in subset:
            assert "error" not in j, j
            mine = by_id.get((r["ledger_id"], r["entry_id"]))
            if j["entry"] is None:
                if mine is not None:
                    problems.append((r["entry_id"], "Java dropped the batch, we kept it"))
                continue
            if mine is None:
                problems.append((r["entry_id"], "we dropped the batch, Java kept it"))
                continue
            problems += compare_entries(mine, bytes.fromhex(j["entry"]), (r["ledger_id"], r["entry_id"]))
            if mine == bytes.fromhex(j["entry"]) and mine != r["data"]:
                rebuilt[pe.parse_entry(mine)["metadata"].get("compression")] += 1
    assert len(rows) > 40
    assert rebuilt["snappy"] > 10, rebuilt
    assert not problems, problems[:10]


def test_ledger_records_match_raw_message_impl(sample_topic):
    entries = sample_topic.slice(0, 20)
    with_partition = entries.append_column("partition", pa.array([3] * 20, pa.int32()))
    for table, partition in ((entries, None), (with_partition, 3)):
        ours = pe.to_ledger_records(table)["record"].to_pylist()
        java = run_harness(
            "ledger-records",
            json.dumps(
                [
                    {
                        "ledger_id": r["ledger_id"],
                        "entry_id": r["entry_id"],
                        "entry": r["data"].hex(),
                        **({"partition": partition} if partition is not None else {}),
                    }
                    for r in table.to_pylist()
                ]
            ),
        )
        assert ours == [bytes.fromhex(j["record"]) for j in java]
        parsed = run_harness("parse-records", json.dumps([r.hex() for r in ours]))
        assert [(p["ledger_id"], p["entry_id"], p["partition"], bytes.fromhex(p["entry"])) for p in parsed] == [
            (r["ledger_id"], r["entry_id"], -1 if partition is None else partition, r["data"])
            for r in table.to_pylist()
        ]
