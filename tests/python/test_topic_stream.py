"""The stream read of a topic (``pulsar_entries._cluster.stream``), without Spark: offsets,
admission control, retention, and the exactly-once rule for chunked messages, which must give
the same messages however the stream is cut into micro-batches and ranges."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries._cluster.layout import Ledger, Partition, TopicLayout
from pulsar_entries._cluster.stream import (
    EARLIEST,
    admit,
    backlog,
    lost_range,
    normalize,
    offset_json,
    parse_starting_offsets,
    plan_stream,
    positions_of,
    stream_range,
)

TOPIC = "persistent://public/default/s"


class FakeBookies:
    """Ledgers of entries in memory, read as the native BookieReader reads them."""

    def __init__(self, ledgers: dict[int, list[bytes]], lac: dict[int, int] | None = None) -> None:
        self.ledgers = ledgers
        self.lac = lac or {}
        self.reads: list[tuple[int, int, int]] = []

    def last_readable(self, ledger_id: int, metadata: bytes) -> int:
        return self.lac.get(ledger_id, len(self.ledgers[ledger_id]) - 1)

    def read_window(self, ledger_id: int, metadata: bytes, first: int, stop: int, max_bytes: int) -> tuple[Any, None]:
        self.reads.append((ledger_id, first, stop))
        data = self.ledgers[ledger_id][first : stop + 1]
        batch = pa.record_batch(
            {
                "ledger_id": pa.array([ledger_id] * len(data), pa.int64()),
                "entry_id": pa.array(range(first, first + len(data)), pa.int64()),
                "data": pa.array(data, pa.binary()),
                "error": pa.array([None] * len(data), pa.string()),
            }
        )
        return batch, None


def ledger(ledger_id: int, entries: int, *, open_: bool = False) -> Ledger:
    info = {"state": "OPEN" if open_ else "CLOSED", "last_entry_id": -1 if open_ else entries - 1}
    return Ledger(ledger_id, 0 if open_ else entries, 100 * entries, b"node", info)


def corpus(seed: int) -> list[bytes]:
    """Plain entries, batches, chunked messages interleaved, and one chunked message resent after two chunks."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    open_chunks: list[list[bytes]] = []
    seq = 0
    for i in range(60):
        r = rnd.random()
        if r < 0.15:
            seq += 1
            size = rnd.choice([250, 420, 990])
            open_chunks.append(
                pe.encode_chunked(
                    {"value": bytes([i]) * size, "key": f"c{i}"}, chunk_size=100, producer_name="ch", sequence_id=seq
                )
            )
        if open_chunks and rnd.random() < 0.6:
            k = rnd.randrange(len(open_chunks))
            out.append(open_chunks[k].pop(0))
            if not open_chunks[k]:
                open_chunks.pop(k)
        if r > 0.5:
            out.append(pe.encode_entry([{"value": f"b{i}-{j}".encode()} for j in range(3)], batch=True))
        else:
            out.append(pe.encode_entry([{"value": f"m{i}".encode(), "key": f"k{i % 4}"}]))
        if i == 30:
            # A producer that resends a message after a reconnect: two chunks, then all of it again
            # (the same uuid); a consumer drops the partial one.
            seq += 1
            again = pe.encode_chunked({"value": b"R" * 330}, chunk_size=100, producer_name="ch", sequence_id=seq)
            out.extend(again[:2])
            out.append(pe.encode_entry([{"value": b"between"}]))
            out.extend(again)
    for rest in open_chunks:
        out.extend(rest)
    return out


def split(entries: list[bytes], sizes: list[int]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    lid, at = 10, 0
    for n in sizes:
        out[lid] = entries[at : at + n]
        at += n
        lid += 3
    out[lid] = entries[at:]
    return out


def messages_of(tables: list[pa.Table]) -> list[tuple[Any, ...]]:
    rows = [r for t in tables for r in t.to_pylist()]
    return sorted((r["ledger_id"], r["entry_id"], r["batch_index"], r["value"], r["status"]) for r in rows)


def reference(entries: dict[int, list[bytes]]) -> list[tuple[Any, ...]]:
    """The topic read whole in process; complete messages and plain ones (what a consumer gets)."""
    raw = [(lid, e, d) for lid, ds in sorted(entries.items()) for e, d in enumerate(ds)]
    table = pa.table(
        {
            "ledger_id": pa.array([r[0] for r in raw], pa.int64()),
            "entry_id": pa.array([r[1] for r in raw], pa.int64()),
            "partition": pa.array([0] * len(raw), pa.int32()),
            "data": pa.array([r[2] for r in raw], pa.binary()),
        }
    )
    done = pe.reassemble_chunks(pe.decode(table), max_pending=None, expire_after_ms=None)
    return messages_of(
        [done.filter(pa.compute.not_equal(pa.compute.fill_null(done["status"], "complete"), "incomplete"))]
    )


def stream_all(entries: dict[int, list[bytes]], cuts: list[int], per_range: int) -> tuple[list[tuple[Any, ...]], int]:
    """The topic read as a stream cut after each count of ``cuts`` entries, ranges of ``per_range``."""
    bookies = FakeBookies(entries)
    ids = sorted(entries)
    part = Partition(TOPIC, 0, [ledger(lid, len(entries[lid]), open_=lid == ids[-1]) for lid in ids])
    layout = TopicLayout(TOPIC, [part], {"b": "127.0.0.1:1"})
    start: dict[str, tuple[int, int]] = {}
    out: list[pa.Table] = []
    batches = 0
    for cut in [*cuts, 10**9]:
        b = backlog(part, start.get(TOPIC, EARLIEST), bookies)
        end = {TOPIC: normalize(part, b.cut(cut), bookies)}
        for sr in plan_stream([layout], start, end, reader_for=lambda _: bookies, entries_per_partition=per_range):
            out += list(stream_range(sr, reader=bookies))
        start = positions_of(offset_json(end))
        batches += 1
    return messages_of(out), batches


@pytest.mark.parametrize("seed", range(8))
def test_every_cut_of_the_stream_gives_each_message_once(seed: int) -> None:
    rnd = random.Random(seed)
    entries = split(corpus(seed), [rnd.randint(1, 15) for _ in range(4)])
    want = reference(entries)
    assert any(r[4] == "complete" for r in want)
    assert [r[3] for r in want].count(b"R" * 330) == 1
    for per_range in (1, 3, 50):
        cuts = [rnd.randint(1, 12) for _ in range(6)]
        got, _ = stream_all(entries, cuts, per_range)
        assert got == want, (seed, per_range, cuts)


def test_a_chunked_message_that_never_completes_is_not_emitted() -> None:
    chunks = pe.encode_chunked({"value": b"z" * 300}, chunk_size=100, producer_name="p", sequence_id=1)
    plain = [pe.encode_entry([{"value": f"v{i}".encode()}]) for i in range(4)]
    entries = {5: [plain[0], chunks[0], plain[1], chunks[1], plain[2], plain[3]]}
    got, _ = stream_all(entries, [2, 2], 2)
    assert [r[3] for r in got] == [b"v0", b"v1", b"v2", b"v3"]


def test_reading_back_stops_at_chunk_read_back() -> None:
    chunks = pe.encode_chunked({"value": b"z" * 300}, chunk_size=100, producer_name="p", sequence_id=1)
    plain = [pe.encode_entry([{"value": f"v{i}".encode()}]) for i in range(10)]
    entries = {5: [chunks[0], *plain, chunks[1], chunks[2]]}
    bookies = FakeBookies(entries)
    part = Partition(TOPIC, 0, [ledger(5, 13)])
    layout = TopicLayout(TOPIC, [part], {})
    start = {TOPIC: (5, 11)}
    end = {TOPIC: (5, 13)}
    near = plan_stream([layout], start, end, reader_for=lambda _: bookies, read_back=5)
    rows = [r for sr in near for t in stream_range(sr, reader=bookies) for r in t.to_pylist()]
    # The first chunk is 11 entries back: not found within 5, so the two chunks are one incomplete row.
    assert [(r["status"], r["value"]) for r in rows] == [("incomplete", None)]
    far = plan_stream([layout], start, end, reader_for=lambda _: bookies, read_back=20)
    rows = [r for sr in far for t in stream_range(sr, reader=bookies) for r in t.to_pylist()]
    assert [(r["status"], r["value"]) for r in rows] == [("complete", b"z" * 300)]


def test_offsets_round_trip_and_bad_ones_are_one_clear_error() -> None:
    positions = {TOPIC + "-partition-0": (12, 0), TOPIC + "-partition-1": EARLIEST}
    assert positions_of(offset_json(positions)) == positions
    assert parse_starting_offsets(None) == "earliest"
    assert parse_starting_offsets(" Latest ") == "latest"
    assert parse_starting_offsets('{"a": "3:4", "b": "latest", "c": {"ledgerId": 1, "entryId": 2}}') == {
        "a": (3, 4),
        "b": "latest",
        "c": (1, 2),
    }
    for bad, says in [
        ("{oops", "not 'earliest', 'latest' or JSON"),
        ('{"a": "x:y"}', "the position of a is"),
        ('{"a": {"ledgerId": 1}}', "the position of a is"),
        ('{"a": {"ledgerId": true, "entryId": 0}}', "the position of a is"),
        ("[1]", "expected a JSON object"),
    ]:
        with pytest.raises(ValueError, match=says):
            parse_starting_offsets(bad)
    with pytest.raises(ValueError, match="an offset names positions"):
        positions_of({"a": "latest"})


def test_admission_shares_the_limit_fairly_and_always_moves() -> None:
    bookies = FakeBookies({1: [b"x"] * 100, 2: [b"x"] * 3, 3: [b"x"] * 40})
    parts = {
        "a": Partition("a", 0, [ledger(1, 100)]),
        "b": Partition("b", 1, [ledger(2, 3)]),
        "c": Partition("c", 2, [ledger(3, 40)]),
    }
    backlogs = {n: backlog(p, EARLIEST, bookies) for n, p in parts.items()}
    assert admit(backlogs) == {"a": 100, "b": 3, "c": 40}
    # 3 for b, the rest shared by a and c.
    assert admit(backlogs, max_entries=30) == {"a": 13, "b": 3, "c": 14}
    assert sum(admit(backlogs, max_entries=1).values()) == 1
    # 100 bytes per entry (the ledgers' sizes): 1,000 bytes is about 10 entries; 1 byte still moves.
    assert sum(admit(backlogs, max_bytes=1000).values()) == 9
    assert sum(admit(backlogs, max_bytes=1).values()) == 1


def test_the_open_ledger_is_read_up_to_its_last_add_confirmed_and_positions_move_past_done_ledgers() -> None:
    bookies = FakeBookies({1: [b"x"] * 5, 2: [b"x"] * 9}, lac={2: 6})
    part = Partition("t", -1, [ledger(1, 5), ledger(2, 0, open_=True)])
    b = backlog(part, EARLIEST, bookies)
    assert (b.entries, b.end) == (5 + 7, (2, 7))
    assert normalize(part, (1, 5), bookies) == (2, 0)
    assert normalize(part, (1, 4), bookies) == (1, 4)
    assert normalize(part, (2, 7), bookies) == (2, 7)
    assert backlog(part, (1, 5), bookies).start == (2, 0)


def test_a_deleted_ledger_the_stream_had_not_read_is_reported() -> None:
    part = Partition("t", -1, [ledger(7, 5)])
    assert lost_range(part, EARLIEST) is None
    assert lost_range(part, (7, 2)) is None
    assert lost_range(part, (4, 3)) == "t: entries 4:3 up to 7:0 are gone (ledger 4 is no longer in the metadata store)"
    assert lost_range(part, (4, 3), (5, 0)).startswith("t: entries 4:3 up to 5:0 are gone")  # type: ignore[union-attr]
    bookies = FakeBookies({7: [pe.encode_entry([{"value": b"v"}])] * 5})
    layout = TopicLayout("t", [part], {})
    ranges = plan_stream([layout], {"t": (4, 3)}, {"t": (7, 5)}, reader_for=lambda _: bookies)
    rows = [r for sr in ranges for t in stream_range(sr, reader=bookies) for r in t.to_pylist()]
    assert rows[0]["error"] == "data loss: " + lost_range(part, (4, 3), (7, 5))  # type: ignore[operator]
    assert [r["value"] for r in rows[1:]] == [b"v"] * 5
