"""Regressions for the known Pulsar compaction bugs (spec compaction.md §15),
the last-message position rules (§11) and the publish-time search (§12)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries import MessagePosition

from support import entrygen


def table(entries, ledger=5):
    return pe.entries_table(entries, ledger_id=ledger)


def batch(msgs, **kw):
    kw.setdefault("publish_time", 1_700_000_000_000)
    return pe.encode_entry([{"key": k, "value": v} for k, v in msgs], batch=True, **kw)


def single(key, value, **kw):
    kw.setdefault("publish_time", 1_700_000_000_000)
    return pe.encode_entry([{"key": key, "value": value}], batch=False, **kw)


def test_earliest_is_the_pip429_constant():
    assert MessagePosition.EARLIEST == (-1, -1, 0, 0)
    assert pe.last_message_position(pe.compact(table([]))) == MessagePosition.EARLIEST
    assert pe.last_message_position(None, topic_entries=table([])) == MessagePosition.EARLIEST
    p = MessagePosition(1, 2, 3, 4)
    assert (p.ledger_id, p.entry_id, p.batch_index, p.publish_time) == (1, 2, 3, 4)
    with pytest.raises(AttributeError):
        p.ledger_id = 9  # immutable


def test_13533_tail_tombstones_answer_from_the_compacted_ledger():
    topic = table(
        [
            batch([("a", b"1"), ("b", b"2")], publish_time=10),
            single("a", None, publish_time=20),
            single("b", None, publish_time=30),
        ]
    )
    compacted = pe.compact(topic)
    assert compacted.num_rows == 0
    # The topic's last entry is a tombstone at or before the horizon: a
    # readCompacted reader must not wait for it.
    assert pe.last_message_position(compacted, topic_entries=topic) == MessagePosition.EARLIEST
    # Without readCompacted the managed ledger answers.
    assert pe.last_message_position(compacted, topic_entries=topic, read_compacted=False) == (5, 2, -1, 30)
    # Past the horizon, the ledger's tail answers too.
    assert pe.last_message_position(compacted, topic_entries=topic, horizon=(5, 1)) == (5, 2, -1, 30)
    # A batch of one: index 0 on the managed-ledger path.
    tail = table([batch([("a", b"1")], publish_time=40)])
    assert pe.last_message_position(None, topic_entries=tail) == (5, 0, 0, 40)


def test_topic_tail_skips_markers_and_aborted_transactions():
    marker = bytes.fromhex(
        "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
    )
    txn = entrygen.Meta(
        producer_name="t",
        publish_time=50,
        partition_key="k",
        uncompressed_size=1,
        txnid_least_bits=2,
        txnid_most_bits=1,
    )
    txn_entry = entrygen.frame(txn, b"x")
    abort = entrygen.frame(
        entrygen.Meta(
            producer_name="pulsar.txn.marker", publish_time=60, marker_type=22, txnid_least_bits=2, txnid_most_bits=1
        ),
        b"",
    )
    topic = table([single("k", b"v", publish_time=40), txn_entry, abort, marker])
    assert pe.last_message_position(None, topic_entries=topic) == (5, 0, -1, 40)
    committed = table([single("k", b"v", publish_time=40), txn_entry, marker])
    assert pe.last_message_position(None, topic_entries=committed) == (5, 1, -1, 50)


def test_18877_last_id_skips_a_compacted_out_slot():
    topic = table([batch([("a", b"1"), ("b", b"2"), ("c", b"3")]), single("c", b"new", publish_time=1_700_000_000_001)])
    compacted = pe.compact(topic)
    # The last compacted entry is the single message...
    assert pe.last_message_position(compacted) == (5, 1, -1, 1_700_000_000_001)
    # ...and for the batch alone, the fast path gives b's index, not n − 1.
    only_batch = compacted.filter(pa.compute.equal(compacted["entry_id"], 0))
    assert pe.parse_entry(only_batch["data"][0].as_py())["metadata"]["compacted_batch_indexes"] == [0, 1]
    assert pe.last_message_position(only_batch).batch_index == 1
    # A legacy compacted batch (no field 31) is scanned for its last live slot.
    legacy = entrygen.legacy_compacted_batch([("a", b"1"), ("b", b"2"), None])
    assert pe.last_message_position(table([legacy])) == (5, 0, 1, 1_700_000_000_000)


@pytest.mark.parametrize("codec", ["lz4", "zlib", "zstd", "snappy"])
def test_20087_compressed_compacted_batch_is_scanned_after_decompression(codec):
    legacy = entrygen.legacy_compacted_batch([("a", b"1" * 50), ("b", b"2" * 50), None, None], codec=codec)
    assert pe.last_message_position(table([legacy])).batch_index == 1


def test_pip429_encrypted_last_entry_is_never_parsed():
    # The ciphertext would fail as batch records ("Invalid unknown tag type").
    enc = entrygen.encrypted_entry(4, "k", bytes([0x0B, 0xFF, 0x13]) * 20)
    assert pe.last_message_position(table([enc])) == (5, 0, 3, 1_700_000_000_000)
    compacted = pe.compact(table([enc]))
    assert compacted["data"].to_pylist() == [enc]  # kept as an opaque unit
    assert pe.last_message_position(compacted).batch_index == 3


def test_fast_path_reads_no_payload():
    # Field 31 present and a payload that is not even valid ZSTD: answered from metadata.
    meta = entrygen.Meta(num_messages_in_batch=5, compression="zstd", uncompressed_size=100)
    meta.compacted_batch_indexes = [1, 3]
    entry = entrygen.frame(meta, b"\xde\xad\xbe\xef" * 1000)
    assert pe.last_message_position(table([entry])) == (5, 0, 3, 1_700_000_000_000)
    # Without field 31 the same entry must be scanned, and fails clearly.
    meta.compacted_batch_indexes = []
    with pytest.raises(pe.EntryFormatError, match="zstd decompression"):
        pe.last_message_position(table([entrygen.frame(meta, b"\xde\xad\xbe\xef" * 1000)]))


def test_all_slots_compacted_out_is_a_clear_error():
    legacy = entrygen.legacy_compacted_batch([None, None, None])
    with pytest.raises(pe.EntryFormatError, match="no valid message in compacted entry 5:0"):
        pe.last_message_position(table([legacy]))


def test_batch_of_one_and_singles_on_the_compacted_path():
    assert pe.last_message_position(table([batch([("a", b"1")], publish_time=3)])) == (5, 0, -1, 3)
    assert pe.last_message_position(table([single("a", b"1", publish_time=4)])) == (5, 0, -1, 4)
    # The last entry is the greatest position, whatever the row order.
    t = pe.entries_table([single("a", b"1", publish_time=9), single("b", b"2", publish_time=8)], entry_ids=[7, 3])
    assert pe.last_message_position(t) == (0, 7, -1, 9)


def test_20980_a_null_value_inside_a_batch_loses_nothing():
    topic = table([batch([("a", b"1"), ("t", None), ("b", b"2")]), single("t", None, publish_time=1_700_000_000_001)])
    compacted = pe.compact(topic)
    assert compacted["entry_id"].to_pylist() == [0]
    rows = pe.decode(compacted).to_pylist()
    assert [(r["key"], r["value"]) for r in rows if not r["compacted_out"]] == [("a", b"1"), ("b", b"2")]


def test_21091_an_original_entry_is_never_split():
    entries = [batch([(f"k{i}", bytes([i])) for i in range(50)], publish_time=1)]
    entries += [batch([(f"k{i}", b"new")]) for i in range(0, 50, 7)]
    out = pe.compact(table(entries), strategy=pe.strategies.LatestWins())
    ids = out["entry_id"].to_pylist()
    assert len(ids) == len(set(ids)) == len(entries)
    first = pe.decode(out.slice(0, 1))
    assert first.num_rows == 50 - len(range(0, 50, 7))
    assert first["batch_index"].to_pylist() == list(range(first.num_rows))


def test_26290_highly_compressible_zstd_batch():
    value = b"\0" * 200_000
    entry = batch([(f"k{i}", value) for i in range(20)], compression="zstd")
    assert len(entry) < 2_000
    topic = table([entry, single("k0", b"x", publish_time=1_700_000_000_001)])
    compacted = pe.compact(topic)
    rows = pe.decode(compacted.slice(0, 1))
    assert rows.num_rows == 20 and rows["compacted_out"].to_pylist() == [True] + [False] * 19
    assert all(v == value for v in rows["value"].to_pylist()[1:])


def test_pulsar_18_recompacting_a_pip429_entry_drops_superseded_members():
    first = pe.compact(table([batch([("a", b"1"), ("b", b"2")])]))
    assert pe.parse_entry(first["data"][0].as_py())["metadata"]["compacted_batch_indexes"] == [0, 1]
    later = single("a", b"new", publish_time=1_700_000_000_001)
    rest = pe.entries_table([later], ledger_id=5, entry_ids=[1])
    again = pe.compact(
        pa.concat_tables([first.select(["ledger_id", "entry_id", "data"]), rest], promote_options="permissive")
    )
    md = pe.parse_entry(again["data"][0].as_py())["metadata"]
    assert md["compacted_batch_indexes"] == [1]


def test_pip429_retained_only_shape_is_read_by_mapped_indexes():
    # A batch of 4 holding only records 1 and 3 (the retained-only PIP-429 shape).
    buf = entrygen.record(b"one", key="a") + entrygen.record(b"three", key="b")
    meta = entrygen.Meta(num_messages_in_batch=4, uncompressed_size=len(buf), compacted_batch_indexes=[1, 3])
    entry = entrygen.frame(meta, buf)
    compacted = pe.compact(table([entry]))
    rows = pe.decode(compacted).to_pylist()
    assert [(r["batch_index"], r["compacted_out"], r["key"]) for r in rows] == [
        (0, True, None),
        (1, False, "a"),
        (2, True, None),
        (3, False, "b"),
    ]


def test_keys_are_compared_as_text_and_ordering_key_is_ignored():
    b64 = pe.encode_entry([{"key": b"\x01\x02", "value": b"bin"}], publish_time=1)  # "AQI=" + b64 flag
    text = pe.encode_entry([{"key": "AQI=", "value": b"text", "ordering_key": b"other"}], publish_time=2)
    out = pe.compact(table([b64, text]))
    assert out["entry_id"].to_pylist() == [1]


def test_null_key_retention_switch():
    topic = table([batch([(None, b"x"), ("a", b"1")]), single(None, b"y", publish_time=1_700_000_000_001)])
    assert pe.compact(topic)["entry_id"].to_pylist() == [0]
    kept = pe.compact(topic, retain_null_key=True)
    assert kept["entry_id"].to_pylist() == [0, 1]
    assert pe.parse_entry(kept["data"][0].as_py())["metadata"]["compacted_batch_indexes"] == [0, 1]


def test_chunked_messages_survive_whole():
    value = bytes(range(256)) * 4
    chunks = entrygen.chunk_entries("big", value, 3, uuid="p-1")
    others = [single("x", b"1", publish_time=1_700_000_000_005)]
    topic = table(chunks[:2] + others + chunks[2:])
    out = pe.compact(topic)
    assert out["entry_id"].to_pylist() == [0, 1, 2, 3]
    view = pe.TableView.from_entries(out)
    assert view.get("big") == value
    # A later value for the key drops every chunk.
    newer = table([*chunks, single("big", b"small", publish_time=1700000000009)])
    assert pe.compact(newer)["entry_id"].to_pylist() == [3]


def test_find_position_by_publish_time():
    entries = [single(f"k{i}", b"v", publish_time=t) for i, t in enumerate([10, 20, 20, 30, 45])]
    compacted = pe.compact(table(entries))
    assert pe.find_position_by_publish_time(compacted, 0) == (5, 0)
    assert pe.find_position_by_publish_time(compacted, 20) == (5, 1)
    assert pe.find_position_by_publish_time(compacted, 21) == (5, 3)
    assert pe.find_position_by_publish_time(compacted, 45) == (5, 4)
    assert pe.find_position_by_publish_time(compacted, 46) is None
    assert pe.find_position_by_publish_time(compacted.slice(0, 0), 1) is None
    # Skewed clocks (spec §15 #20): the binary search trusts monotonic times and
    # can land after an earlier match, as the broker's does.
    skewed = table([single(f"k{i}", b"v", publish_time=t) for i, t in enumerate([50, 10, 20, 30, 40])])
    assert pe.find_position_by_publish_time(skewed, 25) == (5, 3)
    # broker_timestamp is not used.
    stamped = table([single("k", b"v", publish_time=10, broker_timestamp=99, broker_index=0)])
    assert pe.find_position_by_publish_time(stamped, 50) is None


def test_a_huge_declared_count_does_not_size_the_output():
    # Two records, field 31 = [0, 1], but num_messages_in_batch = 2^31 − 1.
    buf = entrygen.record(b"a", key="a") + entrygen.record(b"b", key="b")
    meta = entrygen.Meta(num_messages_in_batch=2**31 - 1, uncompressed_size=len(buf), compacted_batch_indexes=[0, 1])
    entry = entrygen.frame(meta, buf)
    out = pe.compact(table([entry]))
    assert out["data"].to_pylist() == [entry]
    assert "exceeds the limit" in out["error"][0].as_py()
