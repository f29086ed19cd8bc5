"""KoP Kafka entries (PIP-96 built-in Kafka processor) against kafka-python.

Record batches are built with kafka-python's own ``DefaultRecordBatchBuilder`` for
every Kafka codec, wrapped into entries as KoP's ``kafka`` entry format stores them,
and every record must decode exactly as kafka-python reads it back.
"""

from __future__ import annotations

import base64
import random
import struct

import pyarrow as pa
import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

import pulsar_entries as pe
from pulsar_entries import kafka

from support.tables import int_times

# kafka-python compression ids: the low three attribute bits.
KAFKA_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build_batch(
    records, *, codec="none", base_offset=0, transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1
):
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=KAFKA_CODECS[codec],
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, r in enumerate(records):
        assert b.append(i, timestamp=r["timestamp"], key=r["key"], value=r["value"], headers=r["headers"]) is not None
    buf = bytes(b.build())
    # The builder writes offsets from 0; KoP keeps what the producer sent, but a
    # real log has non-zero base offsets: patch it (not covered by the CRC).
    return struct.pack(">q", base_offset) + buf[8:]


def as_control(batch: bytes) -> bytes:
    """Sets the control attribute bit and refreshes the CRC (kafka-python's builder has no flag)."""
    b = bytearray(batch)
    attrs = struct.unpack_from(">h", b, 21)[0] | 0x20
    struct.pack_into(">h", b, 21, attrs)
    struct.pack_into(">I", b, 17, calc_crc32c(bytes(b[21:])))
    return bytes(b)


def random_records(rng: random.Random, n: int, start_ts: int = 1_700_000_000_000):
    out = []
    for i in range(n):
        key = rng.choice([None, f"user-{rng.randrange(50)}".encode(), bytes([0xFF, 0xFE, i % 256]), b""])
        value = rng.choice(
            [None, b"", rng.randbytes(rng.randrange(1, 300)), f"text-{i}".encode() * rng.randrange(1, 40)]
        )
        headers = [(f"h{j}", rng.choice([None, b"", rng.randbytes(5), b"utf8-value"])) for j in range(rng.randrange(4))]
        out.append({"key": key, "value": value, "headers": headers, "timestamp": start_ts + rng.randrange(-5000, 5000)})
    return out


def kafka_python_view(payload: bytes):
    """Every record as kafka-python reads it: (offset, timestamp, timestamp_type, key, value, headers, control)."""
    mr = MemoryRecords(payload)
    out = []
    while True:
        batch = mr.next_batch()
        if batch is None:
            return out
        assert batch.validate_crc()
        for rec in batch:
            out.append(
                {
                    "offset": rec.offset,
                    "timestamp": rec.timestamp,
                    "timestamp_type": rec.timestamp_type,
                    "key": rec.key,
                    "value": rec.value,
                    "headers": [(k, v) for k, v in rec.headers],
                    "control": batch.is_control_batch,
                    "transactional": batch.is_transactional,
                    "producer_id": batch.producer_id,
                    "codec": batch.compression_type,
                }
            )


def expected_key(key):
    if key is None:
        return None, False
    try:
        return key.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(key).decode(), True


def check_rows(rows, expected, *, codec_names):
    assert len(rows) == len(expected)
    for i, (row, exp) in enumerate(zip(rows, expected)):
        where = f"record {i}"
        key, b64 = expected_key(exp["key"])
        assert row["error"] is None, where
        assert row["processor"] == "kafka", where
        assert (row["key"], row["key_b64_encoded"]) == (key, b64), where
        assert row["ordering_key"] == exp["key"], where
        assert row["value"] == exp["value"], where
        assert [(h["key"], h["value"]) for h in row["headers"]] == exp["headers"], where
        props = [(k, v) for k, v in row["properties"]]
        lossy = [(k, None if v is None else v.decode("utf-8", "replace")) for k, v in exp["headers"]]
        assert props == lossy, where
        assert row["event_time"] == exp["timestamp"], where
        assert row["timestamp_type"] == ("log_append_time" if exp["timestamp_type"] == 1 else "create_time"), where
        assert row["compression"] == codec_names[exp["codec"]], where
        assert row["batch_index"] == i, where


CODEC_NAMES = {v: k for k, v in KAFKA_CODECS.items()}


@pytest.mark.parametrize("codec", list(KAFKA_CODECS))
def test_single_batch_entries_decode_exactly_as_kafka_python_reads_them(codec):
    rng = random.Random(hash(codec) & 0xFFFF)
    records = random_records(rng, 40)
    batch = build_batch(records, codec=codec, base_offset=1000)
    entry = kafka.kop_entry([batch], publish_time=1_700_000_000_000)
    out = int_times(pe.decode(pe.entries_table([entry])))
    expected = kafka_python_view(batch)
    assert [e["codec"] for e in expected][:1] == [KAFKA_CODECS[codec]]
    check_rows(out.to_pylist(), expected, codec_names=CODEC_NAMES)
    # Without broker metadata the offsets are Kafka's own: base offset + delta.
    assert out["offset"].to_pylist() == [e["offset"] for e in expected]
    assert set(out["num_messages"].to_pylist()) == {40}  # KoP stores the offset span


def test_multi_batch_entries_decode_every_batch_with_its_own_header():
    rng = random.Random(5)
    batches, expected = [], []
    for _i, codec in enumerate(["gzip", "none", "lz4", "zstd", "snappy"]):
        records = random_records(rng, rng.randrange(1, 25))
        b = build_batch(records, codec=codec, base_offset=0)  # producers write base offset 0
        batches.append(b)
        expected.extend(kafka_python_view(b))
    entry = kafka.kop_entry(batches, publish_time=1)
    stamped = pe.stamp(pe.entries_table([entry]), start_index=499, timestamps=[7])
    out = int_times(pe.decode(stamped))
    rows = out.to_pylist()
    check_rows(rows, expected, codec_names=CODEC_NAMES)
    # With a broker index, offsets run on from the entry's base across batches,
    # each batch taking its offset span (KoP rewrites only the first base offset).
    span = len(expected)
    assert rows[0]["broker_index"] == 499 + span
    assert [r["offset"] for r in rows] == list(range(500, 500 + span))


def test_transactions_get_their_status_from_control_batches():
    rec = lambda v: {"key": b"k", "value": v, "headers": [], "timestamp": 1_700_000_000_000}  # noqa: E731
    committed = build_batch([rec(b"c1"), rec(b"c2")], transactional=True, producer_id=7, producer_epoch=3)
    aborted = build_batch([rec(b"a1")], codec="zstd", transactional=True, producer_id=8, producer_epoch=1)
    open_txn = build_batch([rec(b"o1")], transactional=True, producer_id=9, producer_epoch=0)
    plain = build_batch([rec(b"p1")])
    commit = as_control(
        build_batch(
            [
                {
                    "key": b"\x00\x00\x00\x01",
                    "value": b"\x00\x00\x00\x00\x00\x05",
                    "headers": [],
                    "timestamp": 1_700_000_000_001,
                }
            ],
            transactional=True,
            producer_id=7,
            producer_epoch=3,
        )
    )
    abort = kafka.control_batch(False, producer_id=8, producer_epoch=1, timestamp=1_700_000_000_002)
    # Both control batch builders agree with kafka-python on what they are.
    for b in (commit, abort):
        view = kafka_python_view(b)
        assert len(view) == 1 and view[0]["control"] and view[0]["transactional"]
    entries = [kafka.kop_entry([b], publish_time=1) for b in (committed, aborted, open_txn, plain, commit, abort)]
    table = pe.stamp(pe.entries_table(entries), timestamps=list(range(6)))
    out = pe.decode(table)
    by_value = {r["value"]: r for r in out.to_pylist()}
    assert set(by_value) == {b"c1", b"c2", b"a1", b"o1", b"p1"}  # control records are not messages
    assert [by_value[v]["txn_status"] for v in (b"c1", b"c2", b"a1", b"o1", b"p1")] == [
        "committed",
        "committed",
        "aborted",
        "unknown",
        None,
    ]
    assert (by_value[b"c1"]["txnid_most_bits"], by_value[b"c1"]["txnid_least_bits"]) == (7, 3)
    markers = pe.decode(table, keep_markers=True).filter(pa.compute.is_valid(pa.compute.field("marker_type")))
    assert markers.column("marker_type").to_pylist() == [21, 22]
    assert markers.column("txn_status").to_pylist() == ["committed", "aborted"]
    # Offsets still count the control records: the broker index spans them.
    assert out["offset"].to_pylist() == [0, 1, 2, 3, 4]


def test_our_kafka_writer_is_read_identically_by_kafka_python():
    rng = random.Random(11)
    for codec in kafka.CODECS:
        records = random_records(rng, 20)
        ours = kafka.record_batch(
            [
                {"key": r["key"], "value": r["value"], "headers": r["headers"], "timestamp": r["timestamp"]}
                for r in records
            ],
            compression=codec,
            base_offset=77,
            transactional=True,
            producer_id=5,
            producer_epoch=2,
            base_sequence=10,
        )
        view = kafka_python_view(ours)
        assert [(v["key"], v["value"], v["headers"], v["timestamp"], v["offset"]) for v in view] == [
            (r["key"], r["value"], r["headers"], r["timestamp"], 77 + i) for i, r in enumerate(records)
        ]
        assert view[0]["codec"] == KAFKA_CODECS[codec] and view[0]["producer_id"] == 5
        out = pe.decode(pe.entries_table([kafka.kop_entry([ours], publish_time=1)]))
        assert out["sequence_id"].to_pylist() == list(range(10, 30))


def test_log_append_time_uses_the_batch_max_timestamp():
    batch = kafka.record_batch(
        [{"value": b"a", "timestamp": 5}, {"value": b"b", "timestamp": 9}], log_append_time=True, base_timestamp=5
    )
    out = int_times(pe.decode(pe.entries_table([kafka.kop_entry([batch], publish_time=1)])))
    assert out["event_time"].to_pylist() == [9, 9]
    assert set(out["timestamp_type"].to_pylist()) == {"log_append_time"}
    assert [r.timestamp for b in [MemoryRecords(batch).next_batch()] for r in b] == [9, 9]


def test_bad_kafka_entries_give_one_error_row_and_spare_the_others():
    good = kafka.kop_entry([build_batch(random_records(random.Random(1), 3), codec="lz4")], publish_time=1)
    flipped = bytearray(good)
    flipped[-3] ^= 0x40
    truncated = good[:-10]
    v1 = bytearray(good)
    md_size = struct.unpack_from(">I", v1, 0)[0]
    v1[4 + md_size + 16] = 1  # magic byte of the first batch
    big = kafka.kop_entry(
        [build_batch([{"key": None, "value": b"x" * 100_000, "headers": [], "timestamp": 1}], codec="gzip")],
        publish_time=1,
    )
    table = pe.entries_table([good, bytes(flipped), truncated, bytes(v1), good])
    out = pe.decode(table)
    errors = out.filter(pa.compute.is_valid(out["error"]))
    assert errors["entry_id"].to_pylist() == [1, 2, 3]
    msgs = errors["error"].to_pylist()
    assert "crc32c mismatch" in msgs[0]
    assert "runs past the payload" in msgs[1]
    assert "magic 1" in msgs[2]
    assert out.filter(pa.compute.is_null(out["error"])).num_rows == 6
    # Kafka decompression is bounded by max_uncompressed_size.
    limited = pe.decode(pe.entries_table([big]), max_uncompressed_size=50_000)
    assert "exceeds the limit of 50000 bytes" in limited["error"][0].as_py()
    assert pe.decode(pe.entries_table([big]), max_uncompressed_size=200_000)["error"][0].as_py() is None


def test_kafka_entries_are_not_decoded_with_only_the_pulsar_processor():
    entry = kafka.kop_entry([build_batch(random_records(random.Random(2), 3))], publish_time=1)
    out = pe.decode(pe.entries_table([entry]), processors=[pe.processors.PULSAR])
    assert out.num_rows == 1 and out["error"][0].as_py() is not None
    assert pe.decode(pe.entries_table([entry]))["error"].null_count == 3
