"""Broker entry metadata (PIP-70): stamp, the offset column, seek by time and by offset.

Property tests compare the binary searches with plain linear scans over random
topics whose producers' clocks (publish_time) are skewed against the broker's.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_entries as pe
from pulsar_entries import kafka

MARKER_COMMIT = bytes.fromhex(
    "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
)
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def entry(n: int, *, publish_time: int, batch: bool | None = None, **kw) -> bytes:
    return pe.encode_entry(
        [{"value": f"m{i}".encode()} for i in range(n)], batch=batch, publish_time=publish_time, **kw
    )


def without_prefix(data: bytes) -> bytes:
    if data[:2] != b"\x0e\x02":
        return data
    return data[6 + int.from_bytes(data[2:6], "big") :]


# --------------------------------------------------------------------------- stamp


def test_stamp_index_is_the_offset_of_each_entrys_last_message():
    table = pe.entries_table([entry(3, publish_time=1), entry(1, publish_time=2), entry(5, publish_time=3)])
    out = pe.stamp(table, timestamps=[10, 20, 30])
    metas = [pe.parse_entry(d)["broker_entry_metadata"] for d in out["data"].to_pylist()]
    assert metas == [
        {"broker_timestamp": 10, "index": 2},
        {"broker_timestamp": 20, "index": 3},
        {"broker_timestamp": 30, "index": 8},
    ]
    # The checksummed part is carried over byte for byte, and still verifies.
    assert [without_prefix(d) for d in out["data"].to_pylist()] == table["data"].to_pylist()
    assert pe.decode(out)["error"].null_count == 9
    assert pe.decode(out)["offset"].to_pylist() == list(range(9))
    assert out.schema == table.schema


def test_stamp_options_clock_and_restamping():
    table = pe.entries_table([entry(2, publish_time=1)])
    before = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    clock = pe.parse_entry(pe.stamp(table)["data"][0].as_py())["broker_entry_metadata"]
    after = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    assert before <= clock["broker_timestamp"] <= after and clock["index"] == 1
    only_index = pe.stamp(pe.stamp(table, timestamps=5), start_index=99, timestamp=False)
    assert pe.parse_entry(only_index["data"][0].as_py())["broker_entry_metadata"] == {
        "broker_timestamp": None,
        "index": 101,
    }
    when = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)
    only_time = pe.stamp(table, timestamps=when, index=False)
    assert pe.parse_entry(only_time["data"][0].as_py())["broker_entry_metadata"] == {
        "broker_timestamp": int(when.timestamp() * 1000),
        "index": None,
    }
    with pytest.raises(ValueError, match="start_index must be >= -1"):
        pe.stamp(table, start_index=-2)
    with pytest.raises(ValueError, match="1 entries but 2 timestamps"):
        pe.stamp(table, timestamps=[1, 2])
    with pytest.raises(pe.EntryFormatError, match=r"row 0 \(ledger 0, entry 0\): truncated"):
        pe.stamp(pe.entries_table([b"\x00\x00"]))


def test_stamp_counts_as_a_pulsar_424_broker_does():
    # Markers and transactional entries reach the managed ledger through the
    # broker's own asyncAddEntry(buffer, callback, ctx), whose message count is 1.
    kop = kafka.kop_entry([kafka.record_batch([{"value": b"a"}, {"value": b"b", "offset_delta": 4}])], publish_time=1)
    table = pe.entries_table([entry(4, publish_time=1), MARKER_COMMIT, kop, entry(1, publish_time=2, batch=True)])
    out = pe.stamp(table, timestamps=0)
    idx = [pe.parse_entry(d)["broker_entry_metadata"]["index"] for d in out["data"].to_pylist()]
    # 4 messages; the marker counts 1; the KoP entry its offset span (5); a batch of one 1.
    assert idx == [3, 4, 9, 10]


@st.composite
def topics(draw):
    """Random entries in topic order: batch sizes, broker clock and skewed producer clocks."""
    n = draw(st.integers(1, 40))
    broker = draw(st.integers(1_600_000_000_000, 1_800_000_000_000))
    rows = []
    for _ in range(n):
        broker += draw(st.integers(0, 50))  # the broker's clock never goes back
        skew = draw(st.integers(-60_000, 60_000))  # producers' clocks disagree with it
        rows.append(
            {
                "n": draw(st.integers(1, 6)),
                "broker": broker,
                "publish": max(0, broker + skew),
                "stamped": draw(st.booleans()),
            }
        )
    return rows


def build(rows, *, all_stamped=False):
    data = [entry(r["n"], publish_time=r["publish"]) for r in rows]
    stamped = pe.stamp(pe.entries_table(data), timestamps=[r["broker"] for r in rows])["data"].to_pylist()
    return pe.entries_table([s if (all_stamped or r["stamped"]) else d for r, s, d in zip(rows, stamped, data)])


@PROPS
@given(topics(), st.integers(-1, 1000))
def test_stamp_matches_a_linear_reference(rows, start):
    table = pe.entries_table([entry(r["n"], publish_time=r["publish"]) for r in rows])
    out = pe.stamp(table, start_index=start, timestamps=[r["broker"] for r in rows])
    index = start
    for r, data in zip(rows, out["data"].to_pylist()):
        index += r["n"]
        parsed = pe.parse_entry(data)
        assert parsed["broker_entry_metadata"] == {"broker_timestamp": r["broker"], "index": index}
        assert parsed["checksum"]["valid"]
    offsets = pe.decode(out)["offset"].to_pylist()
    assert offsets == list(range(start + 1, index + 1))


def linear_seek_by_time(rows_time, t):
    """Reference: the entry after the newest one with time < t; the first entry if none."""
    newest = None
    for i, et in enumerate(rows_time):
        if et < t:
            newest = i
    return 0 if newest is None else newest + 1


def entry_times(rows, table):
    return [
        r["broker"] if pe.parse_entry(d)["broker_entry_metadata"] else r["publish"]
        for r, d in zip(rows, table["data"].to_pylist())
    ]


@PROPS
@given(topics(), st.integers(-100, 3000), st.data())
def test_seek_by_time_matches_a_linear_scan_when_entry_times_are_ordered(rows, delta, data):
    # With every entry stamped, entry time is the broker's clock: ordered, so
    # the binary search must find exactly what a scan finds, publish skew or not.
    table = build(rows, all_stamped=True)
    times = entry_times(rows, table)
    t = data.draw(st.sampled_from(times)) + data.draw(st.sampled_from([-1, 0, 1])) if delta % 2 else times[0] + delta
    pos = pe.find_position_by_time(table, t)
    assert pos.row == linear_seek_by_time(times, t)
    n = table.num_rows
    if pos.row < n:
        assert (pos.ledger_id, pos.entry_id) == (0, pos.row)
    else:
        assert (pos.ledger_id, pos.entry_id) == (0, n)  # Pulsar's position after the last entry
    assert pos.entries_read <= 2 + max(1, n).bit_length()


@PROPS
@given(topics(), st.integers(1_600_000_000_000, 1_800_100_000_000))
def test_seek_by_time_lands_on_a_boundary_whatever_the_clocks(rows, t):
    # Entries without broker metadata fall back to their (skewed) publish time,
    # so entry times may be unordered: the result is then some boundary, as
    # Pulsar's OpFindNewest gives, never an arbitrary entry.
    table = build(rows)
    times = entry_times(rows, table)
    pos = pe.find_position_by_time(table, t)
    r = pos.row
    assert (
        (r == 0 and not times[0] < t)
        or (r == len(times) and times[-1] < t)
        or (0 < r < len(times) and (times[r - 1] < t <= times[r]))
    )


@PROPS
@given(topics(), st.data())
def test_seek_by_offset_matches_a_linear_scan(rows, data):
    table = build(rows)
    indexes = [(pe.parse_entry(d)["broker_entry_metadata"] or {}).get("index") for d in table["data"].to_pylist()]
    if any(i is None for i in indexes):
        # KoP needs every entry indexed; mixed tables only need a boundary.
        table = build(rows, all_stamped=True)
        indexes = [pe.parse_entry(d)["broker_entry_metadata"]["index"] for d in table["data"].to_pylist()]
    last = indexes[-1]
    offset = data.draw(st.integers(-2, last + 3))
    pos = pe.find_position_by_offset(table, offset)
    expected_row = next((i for i, idx in enumerate(indexes) if idx >= offset), len(indexes))
    assert pos.row == expected_row
    if expected_row < len(indexes):
        base = indexes[expected_row] - (rows[expected_row]["n"] - 1)
        assert pos.batch_index == (offset - base if offset >= base else None)
        if pos.batch_index is not None:
            decoded = pe.decode(table)
            hit = decoded.filter(pa.compute.equal(decoded["offset"], offset)).to_pylist()
            assert [(h["entry_id"], h["batch_index"] if h["batch_index"] >= 0 else 0) for h in hit] == [
                (expected_row, pos.batch_index)
            ]
    else:
        assert pos.batch_index is None


def test_seek_reads_logarithmically_many_entries():
    one = entry(1, publish_time=0)
    for n in (1_000, 16_000):
        table = pe.stamp(pe.entries_table([one] * n), timestamps=list(range(0, 2 * n, 2)))
        pos = pe.find_position_by_time(table, n + 1)
        assert pos.row == n // 2 + 1
        assert pos.entries_read <= 2 + n.bit_length()
        assert pe.find_position_by_offset(table, 777).entries_read <= 3 + n.bit_length()


def test_seek_edge_cases():
    table = pe.stamp(
        pe.entries_table([entry(2, publish_time=0)] * 3, ledger_id=[5, 5, 6], entry_ids=[8, 9, 0]),
        timestamps=[100, 200, 300],
    )
    assert (pe.find_position_by_time(table, 100).row, pe.find_position_by_time(table, 101).row) == (0, 1)
    end = pe.find_position_by_time(table, dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc))
    assert (end.row, end.ledger_id, end.entry_id) == (3, 6, 1)
    assert pe.find_position_by_offset(table, 3) == pe.find_position_by_offset(table, 3)
    hit = pe.find_position_by_offset(table, 3)
    assert (hit.row, hit.ledger_id, hit.entry_id, hit.batch_index) == (1, 5, 9, 1)
    assert pe.find_position_by_offset(table, 6).row == 3
    with pytest.raises(ValueError, match="empty entry table"):
        pe.find_position_by_time(table.slice(0, 0), 1)
