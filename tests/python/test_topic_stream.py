"""The stream read of a topic (``pulsar_entries._cluster.stream``), without Spark: offsets,
admission control, retention, and the exactly-once rules for chunked messages and for
transactions (read committed), which must give the same messages however the stream is cut into
micro-batches and ranges."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

import pulsar_entries as pe
import pulsar_entries._native as _native
from pulsar_entries._cluster import stream
from pulsar_entries._cluster.layout import Ledger, Partition, TopicLayout
from pulsar_entries._cluster.stream import (
    EARLIEST,
    TXN_ABORT,
    TXN_COMMIT,
    MessageCounter,
    NoIndexError,
    TxnLimits,
    admit,
    admit_messages,
    backlog,
    lost_range,
    normalize,
    offset_json,
    parse_starting_offsets,
    plan_stream,
    positions_of,
    stream_range,
)

from support.entrygen import Meta, frame, vint

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

    def read_ledger(self, ledger_id: int, metadata: bytes, first: int = 0, last: int | None = None) -> Any:
        stop = len(self.ledgers[ledger_id]) - 1 if last is None else last
        return self.read_window(ledger_id, metadata, first, stop, 1 << 30)[0]


def no_windows_kept() -> None:
    """The fakes here reuse ledger ids and metadata for different entries, which no cluster does:
    the windows a stream keeps per process (by ledger id and metadata) must not outlive a test."""
    stream._WINDOWS.windows.clear()
    stream._WINDOWS.size = 0


@pytest.fixture(autouse=True)
def _fresh_windows() -> None:
    no_windows_kept()


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


def decoded_whole(entries: dict[int, list[bytes]]) -> pa.Table:
    """The topic read whole in process: decoded, chunked messages reassembled without limits."""
    raw = [(lid, e, d) for lid, ds in sorted(entries.items()) for e, d in enumerate(ds)]
    table = pa.table(
        {
            "ledger_id": pa.array([r[0] for r in raw], pa.int64()),
            "entry_id": pa.array([r[1] for r in raw], pa.int64()),
            "partition": pa.array([0] * len(raw), pa.int32()),
            "data": pa.array([r[2] for r in raw], pa.binary()),
        }
    )
    return pe.reassemble_chunks(pe.decode(table), max_pending=None, expire_after_ms=None)


def reference(entries: dict[int, list[bytes]]) -> list[tuple[Any, ...]]:
    """The topic read whole in process; complete messages and plain ones (what a consumer gets)."""
    done = decoded_whole(entries)
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


# ------------------------------------------------------------------------------------- transactions

T0 = 1_700_000_000_000


def txn_message(value: bytes, txn: int, seq: int, t: int) -> bytes:
    meta = Meta(producer_name="tx", sequence_id=seq, publish_time=t, txnid_most_bits=1, txnid_least_bits=txn)
    return frame(meta, value)


def txn_marker(kind: int, txn: int, t: int) -> bytes:
    meta = Meta(producer_name="broker", publish_time=t, marker_type=kind, txnid_most_bits=1, txnid_least_bits=txn)
    return frame(meta, b"")


def txn_corpus(seed: int) -> tuple[list[bytes], dict[int, str]]:
    """Plain entries, chunked messages and the messages of transactions interleaved: transactions
    committed and aborted, some spanning many entries, one with no message here (its messages lie
    before, as for a stream started late) and one never decided; each entry 100 ms after the last."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    open_txns: list[int] = []
    fate: dict[int, str] = {}
    chunks: list[bytes] = []
    seq = 0
    for i in range(90):
        t = T0 + 100 * len(out)
        r = rnd.random()
        if r < 0.12 and len(open_txns) < 4:
            txn = 100 + i
            open_txns.append(txn)
            fate[txn] = "open"
        if open_txns and rnd.random() < 0.5:
            txn = rnd.choice(open_txns)
            seq += 1
            out.append(txn_message(f"t{txn}-{seq}".encode(), txn, seq, t))
        elif r > 0.8 and not chunks:
            seq += 1
            chunks = pe.encode_chunked({"value": bytes([i]) * 250}, chunk_size=100, producer_name="ch", sequence_id=seq)
        elif chunks:
            out.append(chunks.pop(0))
        else:
            out.append(pe.encode_entry([{"value": f"m{i}".encode()}], publish_time=t))
        if open_txns and rnd.random() < 0.1:
            txn = open_txns.pop(rnd.randrange(len(open_txns)))
            kind = rnd.choice([TXN_COMMIT, TXN_ABORT])
            fate[txn] = "committed" if kind == TXN_COMMIT else "aborted"
            out.append(txn_marker(kind, txn, T0 + 100 * len(out)))
    out.extend(chunks)
    # The rest is decided, but for one transaction that never is.
    if not open_txns:
        open_txns.append(999)
        fate[999] = "open"
        out.append(txn_message(b"t999-0", 999, 0, T0 + 100 * len(out)))
    for txn in open_txns[1:]:
        fate[txn] = "committed"
        out.append(txn_marker(TXN_COMMIT, txn, T0 + 100 * len(out)))
    # A commit whose transaction has no message here (they lie before, as for a stream started late).
    out.insert(3, txn_marker(TXN_COMMIT, 5, T0))
    return out, fate


def committed_reference(entries: dict[int, list[bytes]]) -> list[tuple[Any, ...]]:
    """What a reader through the broker is given once every transaction here is decided: the
    topic decoded whole, less the aborted transactions and the undecided one."""
    done = decoded_whole(entries)
    status = pa.compute.fill_null(done["txn_status"], "none")
    done = done.filter(pa.compute.is_in(status, pa.array(["none", "committed"])))
    return messages_of([done])


@pytest.mark.parametrize("seed", range(6))
def test_every_cut_of_the_stream_gives_committed_transactions_once_and_never_an_aborted_one(seed: int) -> None:
    rnd = random.Random(seed)
    corpus_, fate = txn_corpus(seed)
    assert {"committed", "aborted", "open"} <= set(fate.values()), fate
    entries = split(corpus_, [rnd.randint(5, 25) for _ in range(3)])
    want = committed_reference(entries)
    values = [r[3] for r in want]
    assert any(v.startswith(b"t") for v in values)
    for per_range in (1, 4, 50):
        cuts = [rnd.randint(1, 20) for _ in range(6)]
        got, _ = stream_all(entries, cuts, per_range)
        assert got == want, (seed, per_range, cuts)
    sent = {txn: sum(1 for d in corpus_ if f"t{txn}-".encode() in d) for txn in fate}
    for txn, how in fate.items():
        mine = [v for v in values if v.startswith(f"t{txn}-".encode())]
        assert len(mine) == (sent[txn] if how == "committed" else 0), (txn, how)


def test_transactional_rows_are_committed_and_markers_are_kept_only_when_asked() -> None:
    entries = {
        5: [
            txn_message(b"a", 1, 1, T0),
            pe.encode_entry([{"value": b"plain"}], publish_time=T0),
            txn_message(b"b", 2, 2, T0),
            txn_marker(TXN_ABORT, 2, T0 + 1),
            txn_marker(TXN_COMMIT, 1, T0 + 2),
            # A replication marker (REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST): no transaction's.
            frame(Meta(producer_name="broker", publish_time=T0 + 3, marker_type=10), b""),
        ]
    }
    bookies = FakeBookies(entries)
    part = Partition(TOPIC, 0, [ledger(5, 6)])
    layout = TopicLayout(TOPIC, [part], {})
    for start, keep in (((5, 2), False), ((5, 0), True)):
        ranges = plan_stream([layout], {TOPIC: start}, {TOPIC: (5, 6)}, reader_for=lambda _: bookies)
        opts = _native.DecodeOptions(keep_markers=keep)
        rows = [
            r for sr in ranges for t in stream_range(sr, reader=bookies, decode_options=opts) for r in t.to_pylist()
        ]
        got = [(r["entry_id"], r["value"], r["txn_status"], r["marker_type"]) for r in rows]
        if keep:
            # Every row from the first entry, markers too; the aborted message is not emitted.
            assert sorted((g[0], g[2], g[3]) for g in got) == [
                (0, "committed", None),
                (1, None, None),
                (3, "aborted", TXN_ABORT),
                (4, "committed", TXN_COMMIT),
                (5, None, 10),
            ]
        else:
            # From entry 2: the commit at 4 reads back for message 0, before the range.
            assert got == [(0, b"a", "committed", None)]
    # A range of the replication marker alone: nothing (markers are rows only when asked for).
    ranges = plan_stream([layout], {TOPIC: (5, 5)}, {TOPIC: (5, 6)}, reader_for=lambda _: bookies)
    assert [r for sr in ranges for t in stream_range(sr, reader=bookies) for r in t.to_pylist()] == []


def test_reading_back_for_a_committed_transaction_is_bounded_by_time_and_by_entries() -> None:
    # Transaction 7's message, then 300 plain entries 10 s apart, then its commit.
    plain = [pe.encode_entry([{"value": f"v{i}".encode()}], publish_time=T0 + 10_000 * (i + 1)) for i in range(300)]
    commit_t = T0 + 10_000 * 301
    entries = {5: [txn_message(b"x", 7, 1, T0), *plain, txn_marker(TXN_COMMIT, 7, commit_t)]}
    part = Partition(TOPIC, 0, [ledger(5, 302)])
    layout = TopicLayout(TOPIC, [part], {})

    def read(txn: TxnLimits, *, kept: bool = False) -> tuple[list[dict[str, Any]], list[tuple[int, int, int]]]:
        if not kept:
            no_windows_kept()
        bookies = FakeBookies(entries)
        ranges = plan_stream([layout], {TOPIC: (5, 301)}, {TOPIC: (5, 302)}, reader_for=lambda _: bookies, txn=txn)
        bookies.reads.clear()
        rows = [r for sr in ranges for t in stream_range(sr, reader=bookies) for r in t.to_pylist()]
        return rows, bookies.reads

    # A timeout that covers the transaction: found, 301 entries back.
    rows, reads = read(TxnLimits(timeout_ms=60 * 60_000))
    assert [(r["value"], r["txn_status"], r["error"]) for r in rows] == [(b"x", "committed", None)]
    assert sum(stop - first + 1 for _, first, stop in reads) == 302
    # Fewer entries allowed than the timeout needs: the search stops and says so at the commit.
    rows, _ = read(TxnLimits(timeout_ms=60 * 60_000, read_back=100))
    assert [r["value"] for r in rows] == [None]
    assert rows[0]["entry_id"] == 301 and "searched 100 entries back (entries from 5:201)" in rows[0]["error"]
    assert "transactionReadBack" in rows[0]["error"] and "committed at 5:301" in rows[0]["error"]
    # A 10-minute timeout: the search ends at the first window (entries 256-300, then 64 at a time) published
    # wholly more than 11 minutes before the commit, the 3rd; no error: no committed transaction reaches so far.
    rows, reads = read(TxnLimits(timeout_ms=600_000))
    assert rows == []
    assert sum(stop - first + 1 for _, first, stop in reads) == 1 + 45 + 2 * 64
    # The same range again in this process (a micro-batch re-run, or the next one reading back through the same
    # windows): the windows read back are kept, so only the range itself is read.
    rows, reads = read(TxnLimits(timeout_ms=600_000), kept=True)
    assert rows == [] and reads == [(5, 301, 301)]
    rows, reads = read(TxnLimits(timeout_ms=60 * 60_000), kept=True)
    assert [r["value"] for r in rows] == [b"x"]
    assert sum(stop - first + 1 for _, first, stop in reads) == 1 + 301 - 45 - 2 * 64


def test_a_read_back_that_fails_is_an_error_row_at_the_commit_not_a_silent_loss() -> None:
    plain = [pe.encode_entry([{"value": f"v{i}".encode()}], publish_time=T0) for i in range(100)]
    entries = {5: [txn_message(b"x", 7, 1, T0), *plain, txn_marker(TXN_COMMIT, 7, T0 + 1)]}

    class Failing(FakeBookies):
        def read_window(self, ledger_id: int, metadata: bytes, first: int, stop: int, max_bytes: int) -> Any:
            if first < 64:
                raise OSError("bookie 127.0.0.1:1 timed out")
            return super().read_window(ledger_id, metadata, first, stop, max_bytes)

    bookies = Failing(entries)
    layout = TopicLayout(TOPIC, [Partition(TOPIC, 0, [ledger(5, 102)])], {})
    ranges = plan_stream([layout], {TOPIC: (5, 101)}, {TOPIC: (5, 102)}, reader_for=lambda _: bookies)
    rows = [r for sr in ranges for t in stream_range(sr, reader=bookies) for r in t.to_pylist()]
    assert [r["entry_id"] for r in rows] == [101]
    assert rows[0]["error"].startswith("transaction (1, 7) committed at 5:101: reading back failed at 5:")
    assert "timed out" in rows[0]["error"]


def stamped(entry: bytes, broker_ms: int) -> bytes:
    """``entry`` with PIP-70 broker entry metadata (magic 0x0e02, size, ``broker_timestamp``), as a
    broker with ``brokerEntryMetadataInterceptors`` stores it."""
    md = vint(1, broker_ms)
    return b"\x0e\x02" + len(md).to_bytes(4, "big") + md + entry


def test_with_broker_timestamps_a_producer_clock_behind_does_not_cut_the_search_short() -> None:
    # Transaction 7's message, 63 plain entries, 64 from a producer whose clock is 2 hours behind, 13 more,
    # then the commit, 100 ms apart by the broker's clock. By publish time the skewed window looks older than
    # the search's bound (the commit less 60 s less a minute), so a search by publish time would stop there.
    def at(i: int) -> int:
        return T0 + 100 * i

    entries_ = [txn_message(b"x", 7, 1, at(0))]
    for i in range(1, 141):
        skew = 2 * 3_600_000 if 64 <= i < 128 else 0
        entries_.append(pe.encode_entry([{"value": f"v{i}".encode()}], publish_time=at(i) - skew))
    entries_.append(txn_marker(TXN_COMMIT, 7, at(141)))
    part = Partition(TOPIC, 0, [ledger(5, 142)])
    layout = TopicLayout(TOPIC, [part], {})

    def read(data: list[bytes]) -> list[Any]:
        no_windows_kept()
        bookies = FakeBookies({5: data})
        ranges = plan_stream([layout], {TOPIC: (5, 141)}, {TOPIC: (5, 142)}, reader_for=lambda _: bookies)
        return [
            (r["value"], r["error"]) for sr in ranges for t in stream_range(sr, reader=bookies) for r in t.to_pylist()
        ]

    assert read([stamped(e, at(i)) for i, e in enumerate(entries_)]) == [(b"x", None)]
    # Without broker timestamps only the publish times are known: the search stops at the skewed window,
    # which is why the clock margin exists (and why broker timestamps are used where there are some).
    assert read(entries_) == []


def indexed(sizes: list[int], *, start: int = 0) -> list[bytes]:
    """Entries of ``sizes`` messages each, stamped with the broker's running message index (PIP-70:
    the index of each entry's last message) from ``start``."""
    out, index = [], start - 1
    for i, n in enumerate(sizes):
        index += n
        entry = pe.encode_entry([{"value": f"e{i}m{j}".encode()} for j in range(n)], batch=True)
        md = vint(1, T0 + i) + vint(2, index)
        out.append(b"\x0e\x02" + len(md).to_bytes(4, "big") + md + entry)
    return out


def test_max_messages_per_trigger_cuts_by_the_brokers_message_index() -> None:
    rnd = random.Random(3)
    sizes = {"a": [rnd.randint(1, 5) for _ in range(40)], "b": [10] * 10}
    bookies = FakeBookies(
        {
            1: indexed(sizes["a"][:25], start=7),
            2: indexed(sizes["a"][25:], start=7 + sum(sizes["a"][:25])),
            3: indexed(sizes["b"]),
        }
    )
    parts = {
        "a": Partition("a", 0, [ledger(1, 25), ledger(2, 15)]),
        "b": Partition("b", 1, [ledger(3, 10)]),
    }
    counter = MessageCounter(lambda _: bookies)
    backlogs = {n: backlog(p, EARLIEST, bookies) for n, p in parts.items()}
    assert counter.messages(backlogs["a"]) == sum(sizes["a"]) and counter.messages(backlogs["b"]) == 100
    # The most entries whose messages fit, across the ledgers; always at least one.
    for m in (0, 1, 2, 9, 50, 71, 10**6):
        want = max(k for k in range(41) if sum(sizes["a"][:k]) <= m) if m else 0
        assert counter.entries_for(backlogs["a"], m) == (max(want, 1) if m else 0), m
    # From a later start: the index counts from the backlog's first entry.
    later = backlog(parts["a"], (1, 20), bookies)
    assert counter.messages(later) == sum(sizes["a"][20:])
    # Shared fairly: 25 messages each; b's 10-message entries fit 2 (20 messages), a's as many as fit in 25.
    counter.probes = 0
    got = admit_messages(backlogs, {"a": 40, "b": 10}, 50, counter)
    assert got["b"] == 2
    assert sum(sizes["a"][: got["a"]]) <= 25 < sum(sizes["a"][: got["a"] + 1])
    assert counter.probes < 30  # O(log n) single-entry reads, not a scan
    # An entry limit given too caps what is counted.
    assert admit_messages(backlogs, {"a": 3, "b": 10}, 10**6, counter) == {"a": 3, "b": 10}


def test_max_messages_per_trigger_without_a_message_index_is_one_clear_error() -> None:
    bookies = FakeBookies({1: [pe.encode_entry([{"value": b"v"}])] * 3})
    part = Partition("a", 0, [ledger(1, 3)])
    with pytest.raises(NoIndexError, match="a: entry 1:0 has no broker message index: maxMessagesPerTrigger needs"):
        admit_messages({"a": backlog(part, EARLIEST, bookies)}, {"a": 3}, 5, MessageCounter(lambda _: bookies))
