"""Chunked messages from Python: encode_chunked, reassemble_chunks, the partitioned
(Spark-shaped) pass, and property tests over random chunkings with every codec."""

from __future__ import annotations

import collections
import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_entries as pe
from pulsar_entries import chunks as pchunks

CODECS = ["none", "lz4", "zlib", "zstd", "snappy"]
T0 = 1_700_000_000_000
ADDED = {
    "first_chunk_ledger_id": pa.int64(),
    "first_chunk_entry_id": pa.int64(),
    "status": pa.string(),
    "chunk_ledger_ids": pa.list_(pa.int64()),
    "chunk_entry_ids": pa.list_(pa.int64()),
}


def payload(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    # Half text (compressible), half noise.
    return bytes(rng.randrange(256) if i % 2 else 97 + (i // 50) % 26 for i in range(n))


def chunked(value: bytes, *, producer="p", seq=0, codec="none", chunk_size=1000, publish=T0, **kw) -> list[bytes]:
    return pe.encode_chunked(
        {"value": value, "key": f"k-{seq}", "properties": {"who": producer}},
        chunk_size=chunk_size,
        compression=codec,
        producer_name=producer,
        sequence_id=seq,
        publish_time=publish,
        **kw,
    )


def plain(value: bytes, publish=T0) -> bytes:
    return pe.encode_entry([{"value": value}], producer_name="plain", publish_time=publish)


def topic_table(entries: list[bytes]) -> pa.Table:
    return pe.entries_table(entries, ledger_id=7)


def run(entries: list[bytes], **opts) -> pa.Table:
    return pe.reassemble_chunks(pe.decode(topic_table(entries)), **opts)


def chunk_rows(table: pa.Table) -> list[dict]:
    return [r for r in table.to_pylist() if r["status"] is not None]


def assert_accounted(entries: list[bytes], out: pa.Table) -> None:
    """Every chunk entry is in exactly one output row; other rows pass through."""
    decoded = pe.decode(topic_table(entries))
    chunk_in = sorted(
        (r["ledger_id"], r["entry_id"]) for r in decoded.to_pylist() if r["uuid"] is not None and r["error"] is None
    )
    chunk_out = sorted((l, e) for r in chunk_rows(out) for l, e in zip(r["chunk_ledger_ids"], r["chunk_entry_ids"]))
    assert chunk_in == chunk_out
    assert sum(1 for r in out.to_pylist() if r["status"] is None) == decoded.num_rows - len(chunk_in)


# --------------------------------------------------------------------------- encoder


@pytest.mark.parametrize("codec", CODECS)
def test_encode_chunked_slices_the_compressed_payload(codec):
    value = payload(20_000, 1)
    entries = chunked(value, producer="prod", seq=42, codec=codec, chunk_size=3_000, broker_index=100)
    parsed = [pe.parse_entry(e) for e in entries]
    md0 = parsed[0]["metadata"]
    total = md0["total_chunk_msg_size"]
    assert len(entries) == -(-total // 3_000) >= 2
    assert b"".join(p["payload"] for p in parsed) and sum(len(p["payload"]) for p in parsed) == total
    for k, p in enumerate(parsed):
        md = p["metadata"]
        assert md["uuid"] == "prod-42" and md["chunk_id"] == k and md["num_chunks_from_msg"] == len(entries)
        assert md["uncompressed_size"] == len(value) and md["sequence_id"] == 42
        assert md["partition_key"] == "k-42" and md["properties"] == [("who", "prod")]
        assert "num_messages_in_batch" not in md
        assert p["broker_entry_metadata"]["index"] == 100 + k
        assert len(p["payload"]) <= 3_000
    # Decode keeps every chunk as one opaque row.
    rows = pe.decode(topic_table(entries)).to_pylist()
    assert [r["chunk_id"] for r in rows] == list(range(len(entries)))
    assert all(r["uncompressed_size"] == len(value) for r in rows)


def test_small_payload_is_one_ordinary_entry():
    [entry] = chunked(b"tiny", chunk_size=100)
    assert "uuid" not in pe.parse_entry(entry)["metadata"]
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        chunked(b"x", chunk_size=0)


# --------------------------------------------------------------------------- reassembly


def test_output_schema_and_pass_through():
    entries = [plain(b"a"), *chunked(payload(5000, 2), codec="zstd", chunk_size=800), plain(b"b")]
    decoded = pe.decode(topic_table(entries))
    out = pe.reassemble_chunks(decoded)
    assert out.schema.names == decoded.schema.names + list(ADDED)
    for name, typ in ADDED.items():
        assert out.schema.field(name).type == typ
    rows = out.to_pylist()
    assert [r["value"] for r in rows if r["status"] is None] == [b"a", b"b"]
    # Non-chunk rows are unchanged.
    plain_in = [r for r in decoded.to_pylist() if r["uuid"] is None]
    plain_out = [{k: v for k, v in r.items() if k not in ADDED} for r in rows if r["status"] is None]
    assert plain_in == plain_out
    [msg] = chunk_rows(out)
    assert msg["status"] == "complete" and msg["error"] is None and msg["value"] == payload(5_000, 2)
    assert (msg["first_chunk_ledger_id"], msg["first_chunk_entry_id"]) == (7, 1)
    assert (msg["ledger_id"], msg["entry_id"]) == (7, len(entries) - 2)
    assert msg["chunk_entry_ids"] == list(range(1, len(entries) - 1))
    assert msg["key"] == "k-0" and msg["properties"] == [("who", "p")] and msg["chunk_id"] == 0


def test_imperfect_input_rules():
    v = payload(4_000, 3)
    c = chunked(v, seq=1, chunk_size=1_000)  # 4 chunks
    w = chunked(payload(3_000, 4), seq=2, chunk_size=1_000)  # 3 chunks
    entries = [
        c[0],
        c[1],
        c[2],
        c[1],  # duplicate chunk 1
        c[3],  # complete
        w[1],
        w[2],  # w without chunk 0: incomplete
        c[0],
        c[1],  # c restarted, never finished: incomplete at the end
    ]
    out = run(entries)
    assert_accounted(entries, out)
    rows = chunk_rows(out)
    assert [(r["uuid"], r["status"]) for r in rows] == [
        ("p-1", "duplicate"),
        ("p-1", "complete"),
        ("p-2", "incomplete"),
        ("p-1", "incomplete"),
    ]
    assert rows[1]["value"] == v and rows[1]["chunk_entry_ids"] == [0, 1, 2, 4]
    assert rows[0]["chunk_entry_ids"] == [3] and "already held from 7:1" in rows[0]["error"]
    assert "chunk 0 was never seen" in rows[2]["error"] and rows[2]["chunk_entry_ids"] == [5, 6]
    assert "the input ended" in rows[3]["error"]
    assert all(r["value"] is None and r["error"] for r in rows if r["status"] != "complete")


def test_limits_evict_and_expire_with_clear_errors():
    msgs = [chunked(payload(2_000, s), seq=s, chunk_size=1_000) for s in range(3)]
    entries = [msgs[0][0], msgs[1][0], msgs[2][0], msgs[0][1], msgs[1][1], msgs[2][1]]
    out = run(entries, max_pending=2)
    assert_accounted(entries, out)
    assert [r["status"] for r in chunk_rows(out)] == ["evicted", "incomplete", "complete", "complete"]
    assert "more than max_pending=2" in chunk_rows(out)[0]["error"]
    assert [r["status"] for r in chunk_rows(run(entries, max_pending=None))] == ["complete"] * 3
    late = [msgs[0][0], plain(b"tick", publish=T0 + 5_000), msgs[0][1]]
    assert [r["status"] for r in chunk_rows(run(late, expire_after_ms=1_000))] == ["expired", "incomplete"]
    assert [r["status"] for r in chunk_rows(run(late, expire_after_ms=None))] == ["complete"]
    big = run(chunked(payload(9_000, 5), chunk_size=1_000), max_message_size=4_096)
    [row] = chunk_rows(big)
    assert row["status"] == "complete" and row["value"] is None
    assert "total_chunk_msg_size 9000 exceeds the limit of 4096 bytes" in row["error"]


def test_bad_arguments_and_inputs():
    decoded = pe.decode(topic_table(chunked(payload(3_000, 6), chunk_size=1_000)))
    with pytest.raises(ValueError, match="max_pending must be at least 1"):
        pe.reassemble_chunks(decoded, max_pending=0)
    with pytest.raises(ValueError, match="expire_after_ms must not be negative"):
        pe.reassemble_chunks(decoded, expire_after_ms=-1)
    with pytest.raises(ValueError, match="already reassembled"):
        pe.reassemble_chunks(pe.reassemble_chunks(decoded))
    with pytest.raises(ValueError, match="no `uuid` column"):
        pe.reassemble_chunks(decoded.drop_columns(["uuid"]))
    # Readers and large_binary values (e.g. after a Parquet round trip) work too.
    large = decoded.cast(
        decoded.schema.set(decoded.schema.get_field_index("value"), pa.field("value", pa.large_binary()))
    )
    out = pe.reassemble_chunks(pa.RecordBatchReader.from_batches(large.schema, large.to_batches()))
    assert out.schema.field("value").type == pa.large_binary()
    assert chunk_rows(out)[0]["value"] == payload(3_000, 6)
    empty = pe.reassemble_chunks(decoded.slice(0, 0))
    assert empty.num_rows == 0 and "status" in empty.column_names


def test_partitions_of_a_topic_reassemble_separately():
    # The same uuid on two partitions (a partitioned producer with a fixed name).
    a = chunked(payload(2_000, 7), seq=0, chunk_size=1_000)
    b = chunked(payload(2_000, 8), seq=0, chunk_size=1_000)
    t = pa.concat_tables(
        [
            pe.decode(pe.entries_table([a[0], a[1]], ledger_id=1, partition=0)),
            pe.decode(pe.entries_table([b[0], b[1]], ledger_id=2, partition=1)),
        ]
    )
    out = pe.reassemble_chunks(t.take([0, 2, 1, 3]))  # interleaved partitions
    got = {(r["partition"], r["value"]) for r in chunk_rows(out)}
    assert got == {(0, payload(2_000, 7)), (1, payload(2_000, 8))}


# --------------------------------------------------------------------------- properties

shapes = st.sampled_from(["whole", "whole", "whole", "duplicate", "restart", "missing", "middle"])


@st.composite
def topics(draw):
    n_msgs = draw(st.integers(1, 5))
    seqs, expected = [], []
    for i in range(n_msgs):
        value = payload(draw(st.integers(0, 6_000)), i)
        codec = draw(st.sampled_from(CODECS))
        c = chunked(value, producer=f"p{i % 2}", seq=i, codec=codec, chunk_size=draw(st.integers(200, 2_000)))
        shape = draw(shapes) if len(c) > 1 else "whole"
        n = len(c)
        if shape == "duplicate":
            at = draw(st.integers(1, n - 1))
            c = [*c[: at + 1], c[draw(st.integers(1, at))], *c[at + 1 :]]
        elif shape == "restart":
            c = c[: draw(st.integers(1, n - 1))] + c
        elif shape == "missing":
            del c[draw(st.integers(0, n - 1))]
        elif shape == "middle":
            c = c[draw(st.integers(1, n - 1)) :]
        seqs.append(c)
        expected.append((f"p{i % 2}-{i}", value, shape not in ("missing", "middle"), n > 1))
    # Interleave the producers, keeping each message's order, with plain traffic.
    entries = []
    queues = [collections.deque(s) for s in seqs]
    while any(queues):
        q = draw(st.sampled_from([q for q in queues if q]))
        entries.append(q.popleft())
        if draw(st.booleans()):
            entries.append(plain(b"plain"))
    return entries, expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topics())
def test_random_chunkings_are_whole_and_accounted(case):
    entries, expected = case
    out = run(entries, max_pending=None, expire_after_ms=None)
    assert_accounted(entries, out)
    rows = out.to_pylist()
    for uuid, value, whole, is_chunked in expected:
        complete = [r for r in rows if r["uuid"] == uuid and r["status"] == "complete"]
        if not is_chunked:
            assert any(r["status"] is None and r["value"] == value for r in rows)
        elif whole:
            assert len(complete) == 1 and complete[0]["value"] == value and complete[0]["error"] is None
        else:
            assert complete == []


def _canonical(table: pa.Table) -> list:
    return sorted(
        (tuple(sorted((k, repr(v)) for k, v in r.items())) for r in table.to_pylist()),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topics(), st.lists(st.integers(0, 200), max_size=5), st.one_of(st.none(), st.integers(1, 50)))
def test_partitioned_pass_equals_in_process(case, cuts, expire):
    entries, _ = case
    # Publish times drift so expiry decisions vary.
    decoded = pe.decode(topic_table(entries))
    opts = dict(max_pending=None, expire_after_ms=expire)
    whole = pe.reassemble_chunks(decoded, **opts)
    n = decoded.num_rows
    bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
    done, leftovers, seed = [], [], None
    publish = decoded["publish_time"].cast(pa.int64()).to_pylist()
    for lo, hi in zip(bounds, bounds[1:]):
        seeds = {} if seed is None else {-1: seed}
        d, left = pchunks.reassemble_partition(decoded.slice(lo, hi - lo), seeds=seeds, **opts)
        done.append(d)
        leftovers.append(left)
        seen = [p for p in publish[lo:hi] if p is not None]
        if seen:
            seed = max(seen + ([seed] if seed is not None else []))
    assert all(set(left.column_names) >= {pchunks.WATERMARK_COLUMN, pchunks.ROLE_COLUMN} for left in leftovers)
    finals = {} if seed is None else {-1: seed}
    finished = pchunks.finish_leftovers(pa.concat_tables(leftovers), final_watermarks=finals, **opts)
    together = pa.concat_tables([*done, finished])
    assert together.schema == whole.schema
    assert _canonical(together) == _canonical(whole)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topics(), st.integers(1, 7))
def test_streaming_partition_pass_equals_the_one_call_pass(case, batch_rows):
    entries, _ = case
    decoded = pe.decode(topic_table(entries))
    opts = dict(max_pending=3, expire_after_ms=20)
    done, leftovers = pchunks.reassemble_partition(decoded, seeds={-1: T0 + 5}, **opts)
    r = pchunks.PartitionReassembler(decoded.schema, seeds={-1: T0 + 5}, **opts)
    parts = [r.push(b) for b in decoded.to_batches(max_chunksize=batch_rows)] + [r.finish()]
    assert _canonical(pa.concat_tables([p[0] for p in parts])) == _canonical(done)
    assert pa.concat_tables([p[1] for p in parts]).equals(leftovers)
