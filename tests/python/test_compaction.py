"""Compaction against a plain reference model over random topics, plus the
API's contracts (incremental runs, ordering, bad input, ledger records)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_entries as pe

from support import entrygen
from support.compaction_model import LEDGER, build, expected_entries, reference, topics

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def entries_of(table: pa.Table) -> pa.Table:
    return table.select(["ledger_id", "entry_id", "data"])


def check_against_model(topic, table, out, order, retain_null_key):
    expected = expected_entries(topic, order, retain_null_key)
    assert out["entry_id"].to_pylist() == [e for e, _ in expected]
    assert out["ledger_id"].to_pylist() == [LEDGER] * len(expected)
    assert out["error"].null_count == out.num_rows
    inputs = table["data"].to_pylist()
    for (entry_id, retained), data in zip(expected, out["data"].to_pylist()):
        original = inputs[entry_id]
        if retained is None:
            assert data == original, f"entry {entry_id} must be copied byte for byte"
            continue
        before, after = pe.parse_entry(original), pe.parse_entry(data)
        md = after["metadata"]
        # RawBatchConverter: same codec and count, field 31 = retained indexes, fresh CRC.
        assert md["num_messages_in_batch"] == before["metadata"]["num_messages_in_batch"]
        assert md.get("compression") == before["metadata"].get("compression")
        assert md["compacted_batch_indexes"] == retained
        assert after["checksum"]["valid"]
        assert after["broker_entry_metadata"] == before["broker_entry_metadata"]
        for name in ("producer_name", "sequence_id", "publish_time", "partition_key", "highest_sequence_id"):
            assert md.get(name) == before["metadata"].get(name), name
        rows = pe.decode(pa.table({"ledger_id": [LEDGER], "entry_id": [entry_id], "data": [data]}))
        originals = pe.decode(pa.table({"ledger_id": [LEDGER], "entry_id": [entry_id], "data": [original]}))
        for row, orig in zip(rows.to_pylist(), originals.to_pylist()):
            assert row["batch_index"] == orig["batch_index"]
            if row["batch_index"] in retained:
                assert not row["compacted_out"]
                for name in ("key", "value", "properties", "event_time", "sequence_id"):
                    assert row[name] == orig[name], name
            else:
                assert row["compacted_out"] and row["key"] is None and not row["value"]


@SETTINGS
@given(topic=topics(), order=st.sampled_from(["publish", "event_time"]), retain=st.booleans())
def test_compaction_matches_the_reference_model(topic, order, retain):
    table = build(topic)
    out = pe.compact(table, order=order, retain_null_key=retain)
    check_against_model(topic, table, out, order, retain)


@SETTINGS
@given(
    topic=topics(),
    order=st.sampled_from(["publish", "event_time"]),
    retain=st.booleans(),
    cut=st.floats(0, 1),
    data=st.data(),
)
def test_incremental_runs_equal_one_run(topic, order, retain, cut, data):
    table = build(topic)
    at = int(cut * table.num_rows)
    whole = pe.compact(table, order=order, retain_null_key=retain)
    first = pe.compact(table.slice(0, at), order=order, retain_null_key=retain)
    rest = table.slice(at)
    again = pe.compact(
        pa.concat_tables([entries_of(first), rest], promote_options="permissive"), order=order, retain_null_key=retain
    )
    assert again.equals(whole)
    # Compacting compacted output changes nothing.
    assert pe.compact(entries_of(whole), order=order, retain_null_key=retain).equals(whole)


@SETTINGS
@given(topic=topics(encrypted=False))
def test_latest_value_per_key_matches_table_view(topic):
    """The compacted topic and the raw topic give the same TableView (encrypted
    entries aside: a view cannot read them, compaction keeps them)."""
    table = build(topic)
    compacted = pe.compact(table)
    raw_view = pe.TableView.from_entries(table).to_arrow().select(["key", "value"])
    compacted_view = pe.TableView.from_entries(compacted).to_arrow().select(["key", "value"])
    assert compacted_view.equals(raw_view)
    # Each surviving key's message is at the reference position.
    ref = reference(topic)["keys"]
    view = pe.TableView.from_entries(compacted).to_arrow()
    got = {
        k: (e, i)
        for k, e, i in zip(view["key"].to_pylist(), view["entry_id"].to_pylist(), view["batch_index"].to_pylist())
    }
    assert got == ref


def test_partitions_are_compacted_independently():
    one = pe.encode_entry([{"key": "k", "value": b"p0"}], publish_time=1)
    two = pe.encode_entry([{"key": "k", "value": b"p1"}], publish_time=2)
    table = pa.table(
        {
            "ledger_id": pa.array([1, 1], pa.int64()),
            "entry_id": pa.array([0, 0], pa.int64()),
            "partition": pa.array([0, 1], pa.int32()),
            "data": [one, two],
        }
    )
    out = pe.compact(table)
    assert out.column_names == ["ledger_id", "entry_id", "partition", "data", "error"]
    assert out["partition"].to_pylist() == [0, 1]
    assert out["data"].to_pylist() == [one, two]


def test_entries_out_of_topic_order_are_refused():
    e = pe.encode_entry([{"key": "k", "value": b"v"}], publish_time=1)
    for ids in ([1, 0], [3, 3]):
        table = pe.entries_table([e, e], entry_ids=ids)
        with pytest.raises(ValueError, match="not in topic order"):
            pe.compact(table)
    table = pa.table({"ledger_id": pa.array([None], pa.int64()), "entry_id": [0], "data": [e]})
    with pytest.raises(ValueError, match="null ledger_id"):
        pe.compact(table)


def test_unreadable_entries_are_kept_whole_with_the_reason():
    good = pe.encode_entry([{"key": "k", "value": b"v1"}, {"key": "k", "value": b"v2"}], publish_time=1)
    flipped = bytearray(good)
    flipped[-1] ^= 1
    garbage_batch = entrygen.frame(entrygen.Meta(num_messages_in_batch=2), b"\x00\x00\x00\x09xx")
    table = pe.entries_table([good, bytes(flipped), garbage_batch, None], entry_ids=[0, 1, 2, 3])
    out = pe.compact(table)
    assert out["entry_id"].to_pylist() == [0, 1, 2, 3]
    errors = out["error"].to_pylist()
    assert errors[0] is None
    assert errors[1].startswith("checksum mismatch")
    assert errors[2].startswith("batch record 0")
    assert errors[3] == "entry data is null"
    assert out["data"].to_pylist()[1:] == [bytes(flipped), garbage_batch, None]
    # Without verification the flipped entry is read (and superseded).
    relaxed = pe.compact(table, verify_checksum=False)
    assert relaxed["entry_id"].to_pylist() == [1, 2, 3]


def test_stats_reconcile():
    from pulsar_entries._sample import generate_topic

    # A plain Pulsar topic: KoP entries are kept unchanged and chunked messages whole,
    # which the model tests cover; here every count must reconcile exactly.
    topic = generate_topic(300, seed=4, kafka_share=0.0, chunked=0)
    c = pe.Compactor()
    c.observe(topic.entries)
    out = c.write(topic.entries)
    s = c.stats()
    assert s["entries_read"] == 300
    assert s["markers"] == topic.marker_entries
    assert s["unreadable_entries"] == topic.corrupt_entries
    assert s["messages_read"] == topic.messages - topic.corrupt_messages
    assert s["entries_written"] == out.num_rows
    live = pe.decode(out)
    live = live.filter(pa.compute.and_(pa.compute.is_null(live["error"]), pa.compute.invert(live["compacted_out"])))
    assert s["messages_written"] == live.num_rows
    assert s["keys"] == pa.compute.count_distinct(live["key"]).as_py()


def test_ledger_records_round_trip_and_spec_layout():
    e1 = bytes.fromhex("0e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f")
    table = pe.entries_table([e1], ledger_id=10, entry_ids=[3])
    records = pe.to_ledger_records(table)
    record = records["record"][0].as_py()
    # The spec's vector leaves the partition out; a real 4.2.4 broker's compacted ledger writes
    # `partition: -1` for a non-partitioned topic (tests/python/real_pulsar, test_known_mismatches),
    # and the real broker is the bar: [u32 15][08 0a 10 03 18 <-1 as a 10-byte varint>][u32 41][entry].
    assert record[:23].hex() == "0000000f080a100318ffffffffffffffffff0100000029" and record[23:] == e1
    back = pe.from_ledger_records([record, b"\x00\x00\x00\x09bad", record[:-1]])
    assert back["ledger_id"].to_pylist() == [10, None, None]
    assert back["data"][0].as_py() == e1 and back["partition"][0].as_py() == -1
    assert back["error"][0].as_py() is None
    assert "truncated" in back["error"][1].as_py() and "truncated" in back["error"][2].as_py()
    with_partition = pe.to_ledger_records(pe.entries_table([e1], ledger_id=10, entry_ids=[3], partition=2))
    assert pe.from_ledger_records(with_partition)["partition"].to_pylist() == [2]


def test_order_names():
    e = pe.entries_table([pe.encode_entry([{"key": "k", "value": b"v"}], publish_time=1)])
    assert pe.compact(e, order="event-time").num_rows == 1
    with pytest.raises(ValueError, match="unknown compaction order"):
        pe.compact(e, order="newest")
    with pytest.raises(ValueError, match="cannot be combined"):
        pe.compact(e, order="event_time", strategy=pe.strategies.FirstWins())
