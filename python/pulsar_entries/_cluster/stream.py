"""A topic read as a stream, straight from storage: what
``spark.readStream.format("pulsar")`` runs, with no Spark here.

**Offsets.** A stream's offset is, per topic partition (by its full name), the
position of the next entry to read, ``{"ledgerId": L, "entryId": E}``: every
entry before it was read. The newest offset comes from the metadata store (the
ledger list, so ledger rollover and new partitions are seen) and, for a
partition's open ledger, the bookies' last-add-confirmed (v3 ``READ_LAC``):
nothing past it is read, nothing is fenced, nothing is written to the store and
no subscription is made. A position at the end of a ledger that is not its
partition's last one moves on to the next ledger's first entry, so that an
offset names a ledger with entries left to read (or the open ledger).

**Exactly once.** A micro-batch reads the entries between two offsets, cut into
ranges (:func:`plan_stream`); every entry belongs to exactly one range of one
micro-batch, and a range's output depends only on the entries stored, never on
where the micro-batches were cut, so a re-run batch gives the same rows.

**Chunked messages (PIP-107)** are emitted whole, once, by the range that holds
their *last* chunk: a range that meets a chunk whose first chunk lies before it
reads back (at most ``read_back`` entries, only that message's chunks) for the
earlier ones, and the chunks of a message still open at the range's end are left
to the range that completes it. A chunked message that never completes (its
producer stopped mid-message) is not emitted, as Pulsar's consumer does not
deliver it; a chunk whose first chunk is not found within ``read_back`` entries
is an ``incomplete`` row. Expiry and eviction of pending chunked messages
(``expireTimeOfIncompleteChunkedMessageMs``, ``maxPendingChunkedMessage``) do
not apply: they depend on where a read starts, which would break exactly once.

**Transactions are read committed**, by the same rule: a transaction's messages
are emitted whole, once, by the range that holds its *decision point*, its
``TXN_COMMIT`` marker; a range holds back the messages of transactions still
open at its end, and never emits an aborted transaction's messages. A range
that meets a commit marker reads back (:class:`_TxnBack`) for the transaction's
earlier messages: until it has passed ``TxnLimits.timeout_ms`` (the longest
transaction timeout the producers use) plus :data:`TXN_CLOCK_MARGIN_MS` before
the marker (in broker timestamps where the broker stamps entries, PIP-70, else
publish times), as the coordinator aborts a transaction not
committed within its timeout, and at most ``TxnLimits.read_back`` entries. A
search that stops at that entry bound first (or fails to read) is one ``error``
row at the marker, so that a message it may have missed is never missed
silently. Windows read back are kept per process (:data:`_WINDOWS`): a stream's
later ranges read back through the same entries. A stream that starts after some
of a transaction's messages emits them with the rest when the commit comes, as
it does a chunked message's earlier chunks. A transaction that is never decided
(no marker: its coordinator lost) is held back for good; a reader through the
broker is held at its first message instead.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries._native as _native
from pulsar_entries.auth import BookieTls

from .layout import Ledger, Partition, TopicLayout
from .read import error_rows
from .scan import (
    SLICE_ENTRIES,
    Decoding,
    EntryRange,
    Segment,
    _chunk_rows,
    _coalesced,
    _narrow,
    _segment_tables,
    decode_entries,
    ledger_last,
    open_reader,
    partition_segments,
    plan_ranges,
)
from .seek import probe_metadata

#: A position: ``(ledger_id, entry_id)``.
Position = tuple[int, int]

#: Before every entry of a partition.
EARLIEST: Position = (-1, -1)
#: Entries read back per request when a range looks for a chunked message's earlier chunks.
BACK_SLICE = 64
#: The largest entry id or ledger id a position may name (Java's ``Long.MAX_VALUE``).
_MAX_ID = 2**63 - 1
#: ``MarkerType`` values of a transaction's end (PulsarApi.proto).
TXN_COMMIT, TXN_ABORT = 21, 22
#: How far a search for a committed transaction's messages goes past its timeout: the producers'
#: and the broker's clocks may differ (without broker timestamps), and the coordinator writes
#: markers after it decides.
TXN_CLOCK_MARGIN_MS = 60_000


@dataclass(frozen=True)
class TxnLimits:
    """How far a range reads back for a committed transaction's earlier messages (see the module's
    docs): ``timeout_ms``, the longest transaction timeout the producers use (Pulsar's clients
    default to 60 s), and at most ``read_back`` entries."""

    timeout_ms: int = 60_000
    read_back: int = 100_000


class DataLossError(RuntimeError):
    """Entries a stream had not read are gone (retention deleted their ledger)."""


# ------------------------------------------------------------------------------------- offsets


def offset_json(positions: Mapping[str, Position]) -> dict[str, dict[str, int]]:
    """An offset as Spark keeps it: ``{partition name: {"ledgerId": L, "entryId": E}}``."""
    return {name: {"ledgerId": p[0], "entryId": p[1]} for name, p in sorted(positions.items())}


def _position(name: str, value: Any, what: str) -> Position | str:
    """One partition's position from an offset: an object, ``"L:E"``, or ``earliest`` / ``latest``."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("earliest", "latest"):
            return v
        parts = v.split(":")
        if len(parts) == 2 and all(p.strip().lstrip("-").isdigit() for p in parts):
            value = {"ledgerId": int(parts[0]), "entryId": int(parts[1])}
    if isinstance(value, dict) and set(value) == {"ledgerId", "entryId"}:
        ledger, entry = value["ledgerId"], value["entryId"]
        if all(isinstance(x, int) and not isinstance(x, bool) and -1 <= x <= _MAX_ID for x in (ledger, entry)):
            return (ledger, entry)
    raise ValueError(
        f"{what}: the position of {name} is {json.dumps(value)[:80]}; expected "
        '{"ledgerId": L, "entryId": E}, "L:E", "earliest" or "latest"'
    )


def positions_of(offset: Mapping[str, Any], what: str = "offset") -> dict[str, Position]:
    """An offset Spark gives back (or a user wrote) as positions; a malformed one is one ValueError."""
    if not isinstance(offset, Mapping):
        raise ValueError(f"{what}: expected a JSON object of partition -> position, not {str(offset)[:80]!r}")
    out: dict[str, Position] = {}
    for name, value in offset.items():
        p = _position(str(name), value, what)
        if isinstance(p, str):
            raise ValueError(f"{what}: {name} is {p!r}; an offset names positions")
        out[str(name)] = p
    return out


def parse_starting_offsets(value: str | None) -> str | dict[str, Position | str]:
    """The ``startingOffsets`` option: ``earliest`` (the default), ``latest``, or a JSON object of
    partition name -> position (``{"ledgerId": L, "entryId": E}``, ``"L:E"``, ``earliest``, ``latest``)."""
    if value is None:
        return "earliest"
    v = value.strip()
    if v.lower() in ("earliest", "latest"):
        return v.lower()
    try:
        got = json.loads(v)
    except ValueError as e:
        raise ValueError(
            f"option startingOffsets: not 'earliest', 'latest' or JSON ({e}); expected e.g. "
            '{"persistent://public/default/orders-partition-0": {"ledgerId": 12, "entryId": 0}}'
        ) from None
    if not isinstance(got, dict) or not got:
        raise ValueError("option startingOffsets: expected a JSON object of partition name -> position")
    return {str(k): _position(str(k), x, "option startingOffsets") for k, x in got.items()}


# ------------------------------------------------------------------------------------- positions


def _last(led: Ledger, reader: Any) -> int | None:
    return ledger_last(led, reader)


def normalize(part: Partition, pos: Position, reader: Any) -> Position:
    """``pos`` moved past the end of ledgers that are done (every ledger but the partition's
    last is): the first entry of the next ledger, so an offset names a ledger left to read."""
    ids = [led.ledger_id for led in part.ledgers]
    while pos[0] in ids:
        i = ids.index(pos[0])
        if i == len(ids) - 1:
            break
        last = _last(part.ledgers[i], reader)
        if last is None or pos[1] <= last:
            break
        pos = (ids[i + 1], 0)
    return pos


def lost_range(part: Partition, pos: Position, end: Position | None = None) -> str | None:
    """What retention deleted that a stream at ``pos`` had not read (up to ``end`` at most), or None:
    the span from ``pos`` to the next ledger still there."""
    if pos[0] < 0 or any(led.ledger_id == pos[0] for led in part.ledgers):
        return None
    later = [led.ledger_id for led in part.ledgers if led.ledger_id > pos[0]]
    stop = (later[0], 0) if later else None
    if end is not None and (stop is None or end < stop):
        stop = end
    upto = f"up to {stop[0]}:{stop[1]}" if stop is not None else "to the partition's end"
    return (
        f"{part.topic}: entries {pos[0]}:{pos[1]} {upto} are gone (ledger {pos[0]} is no longer in the metadata store)"
    )


def _resume(part: Partition, pos: Position) -> Position:
    """Where a stream whose ``pos`` names a deleted ledger goes on: the next ledger that is left."""
    later = [led.ledger_id for led in part.ledgers if led.ledger_id > pos[0]]
    return (later[0], 0) if later else (pos[0], pos[1])


@dataclass
class Backlog:
    """A partition's readable entries after a position: ``segments`` in order."""

    part: Partition
    start: Position
    segments: list[Segment]
    lost: str | None = None

    @property
    def end(self) -> Position:
        """The position after the last readable entry."""
        end = self.start
        for s in self.segments:
            if s.last is None:
                break
            end = (s.ledger.ledger_id, s.last + 1)
        return end

    @property
    def entries(self) -> int:
        n = 0
        for s in self.segments:
            if s.last is None:
                break
            n += s.last - s.first + 1
        return n

    def entry_bytes(self) -> dict[int, float]:
        """Each ledger's bytes per entry: the managed ledger's size for closed ledgers, their mean
        for the open one (1 KiB when nothing is known)."""
        known = {led.ledger_id: led.size / led.entries for led in self.part.ledgers if led.entries > 0 and led.size > 0}
        mean = sum(known.values()) / len(known) if known else 1024.0
        return {led.ledger_id: known.get(led.ledger_id, mean) for led in self.part.ledgers}

    @property
    def bytes(self) -> int:
        per = self.entry_bytes()
        total = 0.0
        for s in self.segments:
            if s.last is None:
                break
            total += (s.last - s.first + 1) * per.get(s.ledger.ledger_id, 1024.0)
        return int(total)

    def cut(self, entries: int) -> Position:
        """The position after the first ``entries`` readable entries."""
        end = self.start
        for s in self.segments:
            if s.last is None or entries <= 0:
                break
            take = min(entries, s.last - s.first + 1)
            end = (s.ledger.ledger_id, s.first + take)
            entries -= take
        return end

    def entries_within(self, budget: float) -> int:
        """How many of the first entries fit in ``budget`` bytes (estimated per ledger)."""
        per = self.entry_bytes()
        n = 0
        for s in self.segments:
            if s.last is None or budget <= 0:
                break
            size = max(per.get(s.ledger.ledger_id, 1024.0), 1.0)
            count = s.last - s.first + 1
            fit = min(count, int(budget // size))
            n += fit
            budget -= fit * size
            if fit < count:
                break
        return n


def backlog(part: Partition, start: Position, reader: Any) -> Backlog:
    """The partition's readable entries from ``start`` (the open ledger up to its last-add-confirmed)."""
    lost = lost_range(part, start)
    if lost is not None:
        start = _resume(part, start)
    start = normalize(part, start, reader)
    segs = partition_segments(part, reader, start=None if start == EARLIEST else start)
    return Backlog(part, start, segs, lost)


def partitions_of(layouts: Sequence[TopicLayout]) -> dict[str, tuple[TopicLayout, Partition]]:
    """Every topic partition of the layouts by its full name."""
    return {p.topic: (layout, p) for layout in layouts for p in layout.partitions}


def admit(
    backlogs: Mapping[str, Backlog], *, max_entries: int | None = None, max_bytes: int | None = None
) -> dict[str, int]:
    """Entries each partition may read this micro-batch: all of its backlog, or a fair share of
    ``max_entries`` / ``max_bytes`` (a partition with less than its share leaves the rest to the
    others). At least one entry when anything is readable, so a stream always moves."""
    want = {name: b.entries for name, b in backlogs.items()}
    if max_bytes is not None:
        # Bytes become entries per partition, by each partition's bytes per entry.
        share = _fair({n: b.bytes for n, b in backlogs.items()}, max_bytes)
        want = {n: min(want[n], backlogs[n].entries_within(share[n])) for n in want}
    if max_entries is not None:
        want = _fair(want, max_entries)
    if not any(want.values()):
        first = next((n for n, b in sorted(backlogs.items()) if b.entries), None)
        if first is not None:
            want[first] = 1
    return want


class NoIndexError(ValueError):
    """A message count needs the brokers' message index (PIP-70), which an entry lacks."""


@dataclass
class MessageCounter:
    """Messages in a backlog, from the brokers' message index (PIP-70's ``broker_index``, the
    topic partition's running message count that ``AppendIndexMetadataInterceptor`` stamps on
    each entry): a count reads two entries, a cut O(log n), their metadata only."""

    reader_for: Any
    offload_filesystem: Any = None
    offload_prefix: str = ""
    probes: int = 0

    def _probe(self, b: Backlog, i: int) -> tuple[int, int]:
        """``(broker index, messages)`` of the backlog's ``i``-th readable entry."""
        for s in b.segments:
            assert s.last is not None
            n = s.last - s.first + 1
            if i < n:
                break
            i -= n
        entry = s.first + i
        self.probes += 1
        reader = self.reader_for(b.part.topic)
        fs, prefix = self.offload_filesystem, self.offload_prefix
        md, why = probe_metadata(s.ledger, entry, b.part.partition, reader, fs, prefix)
        where = f"{b.part.topic}: entry {s.ledger.ledger_id}:{entry}"
        if md is None:
            raise NoIndexError(f"{where} could not be read ({why})")
        index, count = md["broker_index"][0].as_py(), md["num_messages"][0].as_py()
        if index is None or count is None:
            raise NoIndexError(
                f"{where} has no broker message index: maxMessagesPerTrigger needs the brokers' PIP-70 "
                "AppendIndexMetadataInterceptor (brokerEntryMetadataInterceptors); use maxEntriesPerTrigger"
            )
        return int(index), int(count)

    def messages(self, b: Backlog, entries: int | None = None) -> int:
        """The messages in the backlog's first ``entries`` entries (all of them: None), each chunk of
        a chunked message one, as the index counts them."""
        n = b.entries if entries is None else min(entries, b.entries)
        if n <= 0:
            return 0
        first, count = self._probe(b, 0)
        last, _ = self._probe(b, n - 1) if n > 1 else (first, count)
        return last - first + count

    def entries_for(self, b: Backlog, messages: int) -> int:
        """How many of the backlog's first entries hold at most ``messages`` messages (at least one
        when there is any, so that a stream always moves)."""
        n = b.entries
        if n == 0 or messages <= 0:
            return 0
        first, count = self._probe(b, 0)
        lo, hi = 1, n  # the answer lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            index, _ = self._probe(b, mid - 1)
            if index - first + count <= messages:
                lo = mid
            else:
                hi = mid - 1
        return lo


def admit_messages(
    backlogs: Mapping[str, Backlog], want: Mapping[str, int], max_messages: int, counter: MessageCounter
) -> dict[str, int]:
    """``want`` (entries per partition, as :func:`admit` gives them) capped so that the partitions
    together read at most ``max_messages`` messages, shared fairly; at least one entry when
    anything is readable."""
    have = {n: counter.messages(b, want[n]) for n, b in backlogs.items() if want.get(n, 0)}
    share = _fair(have, max_messages)
    out = {n: 0 for n in want}
    for n, messages in share.items():
        out[n] = min(want[n], counter.entries_for(backlogs[n], messages)) if messages else 0
    if not any(out.values()):
        first = next((n for n in sorted(want) if want[n]), None)
        if first is not None:
            out[first] = 1
    return out


def _fair(have: Mapping[str, int], total: int) -> dict[str, int]:
    """``total`` shared among ``have``'s keys, none given more than it has (max-min fairness)."""
    out = {n: 0 for n in have}
    left = total
    order = sorted(have, key=lambda n: (have[n], n))
    for i, n in enumerate(order):
        share = -(-left // (len(order) - i)) if left > 0 else 0
        out[n] = min(have[n], share)
        left -= out[n]
    return out


# ------------------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class StreamRange:
    """What one task of a micro-batch reads: a range of one partition, the entries before it it
    may read back for chunked messages, and what retention deleted before it (a status row)."""

    range: EntryRange | None
    topic: str
    partition: int
    behind: list[Segment] = field(default_factory=list)
    lost: str | None = None
    #: The entries before the range a committed transaction's messages are searched for, and
    #: whether they reach back to the partition's first entry.
    txn_behind: list[Segment] = field(default_factory=list)
    txn_behind_all: bool = True
    txn: TxnLimits = TxnLimits()


def _tail(segs: list[Segment], budget: int) -> list[Segment]:
    """The last ``budget`` entries of ``segs`` (all known-length), in order."""
    out: list[Segment] = []
    for s in reversed(segs):
        if budget <= 0 or s.last is None:
            break
        first = max(s.first, s.last - budget + 1)
        out.append(Segment(s.ledger, first, s.last))
        budget -= s.last - first + 1
    return out[::-1]


def plan_stream(
    layouts: Sequence[TopicLayout],
    start: Mapping[str, Position],
    end: Mapping[str, Position],
    *,
    reader_for: Any,
    entries_per_partition: int = 50_000,
    read_back: int = 100_000,
    txn: TxnLimits = TxnLimits(),
    offload_filesystem: Any = None,
    offload_prefix: str = "",
) -> list[StreamRange]:
    """The ranges of the micro-batch from ``start`` to ``end`` (each partition's entries
    ``start <= position < end``; a partition missing from ``start`` starts at its earliest)."""
    out: list[StreamRange] = []
    for name, (layout, part) in sorted(partitions_of(layouts).items()):
        if name not in end:
            continue
        reader = reader_for(name)
        s = start.get(name, EARLIEST)
        e = end[name]
        lost = lost_range(part, s, e)
        if lost is not None:
            s = _resume(part, s)
            out.append(StreamRange(None, layout.topic, part.partition, lost=lost))
        if e <= s:
            continue
        one = TopicLayout(layout.topic, [part], layout.bookies)
        ranges = plan_ranges(
            one,
            reader=reader,
            start=None if s == EARLIEST else s,
            end=(e[0], e[1] - 1),
            entries_per_partition=entries_per_partition,
            read_ahead=0,
            offload_filesystem=offload_filesystem,
            offload_prefix=offload_prefix,
        )
        whole = partition_segments(part, reader)
        for r in ranges:
            first = r.segments[0]
            before = _narrow(whole, None, (first.ledger.ledger_id, first.first - 1))
            txn_behind = _tail(before, txn.read_back)
            known = sum(s.last - s.first + 1 for s in before if s.last is not None)
            out.append(
                StreamRange(
                    r,
                    layout.topic,
                    part.partition,
                    _tail(before, read_back),
                    txn_behind=txn_behind,
                    txn_behind_all=known <= txn.read_back,
                    txn=txn,
                )
            )
    return out


# ------------------------------------------------------------------------------------- reading


#: Reassembly in a stream: no expiry or eviction (see the module's docs).
def _stream_limits(limits: _native.ReassemblyOptions | None) -> _native.ReassemblyOptions:
    size = limits.max_message_size if limits is not None else None
    return _native.ReassemblyOptions(max_pending=None, expire_after_ms=None, max_message_size=size)


def _back_windows(segments: list[Segment]) -> Iterator[Segment]:
    """``segments`` (the entries before a range) as windows read back newest first, cut at
    multiples of ``BACK_SLICE`` so that the ranges of a stream read back through the same windows."""
    for seg in reversed(segments):
        if seg.last is None:
            return
        hi = seg.last
        while hi >= seg.first:
            lo = max(seg.first, hi - hi % BACK_SLICE)
            yield Segment(seg.ledger, lo, hi)
            hi = lo - 1


def _read_back(
    sr: StreamRange,
    reader: Any,
    fs: Any,
    prefix: str,
    options: Decoding,
    wanted: set[str],
) -> pa.Table | None:
    """The earlier chunks of the ``wanted`` uuids, read backwards from the range's start through
    ``behind`` until each one's first chunk is found: rows in topic order, or None."""
    found: list[pa.Table] = []
    wanted = set(wanted)
    for window in _back_windows(sr.behind):
        if not wanted:
            break
        tables = list(_segment_tables(window, sr.partition, reader, fs, prefix, BACK_SLICE))
        if not tables:
            continue
        entries = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        messages = decode_entries(entries, options)
        keep: list[int] = []
        # Within the window, newest first: a uuid's rows back to its nearest first chunk.
        for i, _, uuid, chunk_id, _, _ in reversed(_chunk_rows(messages)):
            if uuid in wanted:
                keep.append(i)
                if chunk_id == 0:
                    wanted.discard(uuid)
        if keep:
            found.append(messages.take(sorted(keep)))
    if not found:
        return None
    return pa.concat_tables(found[::-1])


Txn = tuple[int, int]


def _times(table: pa.Table) -> pa.ChunkedArray:
    """Each row's time in ms: the broker's timestamp (PIP-70) where the broker stamps entries, the
    clock the markers are stamped with too, else the producer's publish time."""
    return pc.coalesce(table["broker_timestamp"], table["publish_time"]).cast(pa.int64())


def _newest_ms(messages: pa.Table) -> int | None:
    """The newest time (:func:`_times`) among ``messages``."""
    if not messages.num_rows:
        return None
    newest = pc.max(_times(messages)).as_py()
    return None if newest is None else int(newest)


def _txn_rows(messages: pa.Table) -> pa.Table:
    """The messages of ``messages`` sent in a transaction (markers not included)."""
    mask = pc.and_(pc.is_valid(messages["txnid_most_bits"]), pc.is_null(messages["marker_type"]))
    return messages.filter(mask)


@dataclass(frozen=True)
class _BackWindow:
    """What a window of entries read back holds for transactions: its transactional entries (as
    read: ``raw``; or as decoded messages: ``rows``), the transactions whose marker it holds, its
    newest publish time, its entry count, and the first error reading or decoding it (its messages
    may then be missing)."""

    rows: pa.Table | None
    ended: frozenset[Txn]
    newest_ms: int | None
    count: int
    error: str | None
    #: The rows of each transaction in ``rows`` (or in ``raw``).
    index: Mapping[Txn, list[int]] = field(default_factory=dict)
    raw: pa.Table | None = None

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (self.rows, self.raw) if t is not None)

    def messages(self, txns: set[Txn], options: Decoding) -> pa.Table | None:
        """The messages of ``txns`` in the window, in order."""
        rows = sorted(i for txn in txns & self.index.keys() for i in self.index[txn])
        if not rows:
            return None
        take = pa.array(rows, pa.int64())
        if self.rows is not None:
            return self.rows.take(take)
        assert self.raw is not None
        return _txn_rows(decode_entries(self.raw.take(take), options))


def _by_txn(most: pa.ChunkedArray | pa.Array, least: pa.ChunkedArray | pa.Array) -> dict[Txn, list[int]]:
    """Row numbers by transaction id (rows with an id only)."""
    table = pa.table({"m": most, "l": least, "i": pa.array(range(len(most)), pa.int64())})
    groups = table.filter(pc.is_valid(table["m"])).group_by(["m", "l"], use_threads=False).aggregate([("i", "list")])
    return {
        (m, lo): i for m, lo, i in zip(groups["m"].to_pylist(), groups["l"].to_pylist(), groups["i_list"].to_pylist())
    }


def _ended(most: pa.ChunkedArray | pa.Array, least: pa.ChunkedArray | pa.Array, marker: Any) -> frozenset[Txn]:
    """The transactions whose end marker is among the rows."""
    ends = pc.fill_null(pc.is_in(marker, pa.array([TXN_COMMIT, TXN_ABORT], pa.int32())), False)
    pairs = zip(most.filter(ends).to_pylist(), least.filter(ends).to_pylist())
    return frozenset((m, lo) for m, lo in pairs if m is not None)


class _WindowCache:
    """Windows read back, by ledger, first and last entry (and how they were decoded), kept per
    process: the ranges of a stream's later micro-batches read back through the same entries, and
    Spark reuses its Python workers. Entries up to the last-add-confirmed never change, so a window
    read once reads the same again; the cache only saves the reads. Least recently used first out,
    within ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self.windows: OrderedDict[tuple[Any, ...], _BackWindow] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> _BackWindow | None:
        got = self.windows.get(key)
        if got is not None:
            self.windows.move_to_end(key)
        return got

    def put(self, key: tuple[Any, ...], window: _BackWindow) -> None:
        size = window.nbytes
        if key in self.windows or size > self.budget // 4:
            return
        self.windows[key] = window
        self.size += size
        while self.size > self.budget:
            _, old = self.windows.popitem(last=False)
            self.size -= old.nbytes


#: The windows read back for transactions in this process (see :class:`_WindowCache`).
_WINDOWS = _WindowCache(64 << 20)


class _TxnBack:
    """The transactional messages before a range, found by reading back through ``txn_behind``
    newest first, only as far as the commit markers met so far need: each entry read once per
    range (and, through :data:`_WINDOWS`, mostly once per process)."""

    def __init__(self, sr: StreamRange, reader: Any, fs: Any, prefix: str, options: Decoding) -> None:
        self.sr = sr
        self.options = options
        self.reader, self.fs, self.prefix = reader, fs, prefix
        #: The windows read that hold transactional rows, newest first.
        self.found: list[_BackWindow] = []
        self.searched = 0
        #: The newest publish time of the oldest window read.
        self.oldest_ms: int | None = None
        self.exhausted = False
        #: The first error met reading back: the search is not whole.
        self.error: str | None = None
        #: Transactions whose marker lies before the range: decided by an earlier one.
        self.ended: set[Txn] = set()
        self._windows = _back_windows(sr.txn_behind)
        # Decrypted windows are not kept: the keys are the task's.
        rng = sr.range
        self._key: tuple[str, str] | None = None
        if rng is not None and options.crypto_keys is None:
            self._key = (repr(sorted(rng.bookies.items())), repr(options.options))

    def _window(self, seg: Segment) -> _BackWindow:
        # A ledger's metadata (its ensemble, creation time and token) tells a ledger from one that had
        # its id on another cluster.
        led = seg.ledger
        key = None if self._key is None else (*self._key, led.ledger_id, led.metadata, seg.first, seg.last)
        if key is not None:
            got = _WINDOWS.get(key)
            if got is not None:
                return got
        tables = list(_segment_tables(seg, self.sr.partition, self.reader, self.fs, self.prefix, BACK_SLICE))
        if not tables:
            return _BackWindow(None, frozenset(), None, 0, None)
        entries = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        window = self._from_metadata(entries) or self._decoded(entries)
        if key is not None and window.error is None:
            _WINDOWS.put(key, window)
        return window

    def _from_metadata(self, entries: pa.Table) -> _BackWindow | None:
        """The window from its entries' metadata alone, without decoding a payload: the entries of
        transactions are kept as read, and decoded only when a commit wants them. None when an entry
        could not be read or its metadata or checksum is bad: :meth:`_decoded` then says where."""
        if entries["error"].null_count != entries.num_rows or entries["data"].null_count:
            return None
        meta = _native.entry_metadata(entries["data"].combine_chunks())
        if meta["error"].null_count != meta.num_rows or not pc.all(pc.fill_null(meta["checksum_valid"], True)).as_py():
            return None
        most, least, marker = meta["txnid_most_bits"], meta["txnid_least_bits"], meta["marker_type"]
        is_txn = pc.fill_null(pc.and_(pc.is_valid(most), pc.is_null(marker)), False)
        raw = entries.filter(is_txn)
        index = _by_txn(most.filter(is_txn), least.filter(is_txn))
        newest = pc.max(_times(meta)).as_py()
        return _BackWindow(
            None,
            _ended(most, least, marker),
            None if newest is None else int(newest),
            entries.num_rows,
            None,
            index,
            raw if raw.num_rows else None,
        )

    def _decoded(self, entries: pa.Table) -> _BackWindow:
        """The window decoded whole: its transactional messages, and its first error row."""
        messages = decode_entries(entries, self.options)
        rows = _txn_rows(messages)
        bad = messages.filter(pc.is_valid(messages["error"]))
        error = None
        if bad.num_rows:
            error = f"{bad['ledger_id'][0].as_py()}:{bad['entry_id'][0].as_py()}: {bad['error'][0].as_py()}"
        return _BackWindow(
            rows if rows.num_rows else None,
            _ended(messages["txnid_most_bits"], messages["txnid_least_bits"], messages["marker_type"]),
            _newest_ms(messages),
            entries.num_rows,
            error,
            _by_txn(rows["txnid_most_bits"], rows["txnid_least_bits"]),
        )

    def reach(self, before_ms: int | None) -> str | None:
        """Read back until a window published wholly before ``before_ms`` is read (None: as far as
        the limits allow). None when the search is whole (that time was passed, or the partition's
        first entry read), else why not: the entries allowed ran out first, or a read failed."""
        while True:
            if self.error is not None:
                return f"reading back failed at {self.error}"
            if before_ms is not None and self.oldest_ms is not None and self.oldest_ms < before_ms:
                return None
            if self.exhausted:
                if self.sr.txn_behind_all:
                    return None
                return (
                    f"its messages were searched {self.searched} entries back{self._since()}, the most option "
                    f"transactionReadBack allows, without passing transactionTimeoutMs ({self.sr.txn.timeout_ms} ms) "
                    f"plus {TXN_CLOCK_MARGIN_MS} ms of publish time"
                )
            seg = next(self._windows, None)
            if seg is None:
                self.exhausted = True
                continue
            window = self._window(seg)
            self.searched += window.count
            self.error = window.error
            if window.newest_ms is not None:
                self.oldest_ms = window.newest_ms
            if window.index:
                self.found.append(window)
            self.ended |= window.ended

    def _since(self) -> str:
        first = self.sr.txn_behind[0] if self.sr.txn_behind else None
        return f" (entries from {first.ledger.ledger_id}:{first.first})" if first is not None else ""

    def messages_of(self, txns: set[Txn], skip_uuids: set[str]) -> pa.Table | None:
        """The rows found of ``txns``, oldest first, less the chunks of messages the range itself
        holds (those its chunk read-back already took)."""
        wanted = txns - self.ended
        parts = [t for w in reversed(self.found) if (t := w.messages(wanted, self.options)) is not None]
        if not parts:
            return None
        found = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if skip_uuids:
            uuids = found["uuid"].to_pylist()
            keep = [i for i, u in enumerate(uuids) if u is None or u not in skip_uuids]
            if len(keep) < found.num_rows:
                found = found.take(pa.array(keep, pa.int64()))
        return found if found.num_rows else None


class _ReadCommitted:
    """A range's filter for transactions (see the module's docs): each message of a transaction
    is held until its marker, emitted at a commit, dropped at an abort."""

    def __init__(
        self, sr: StreamRange, reader: Any, fs: Any, prefix: str, options: Decoding, keep_markers: bool
    ) -> None:
        self.sr = sr
        self.options = options
        self.keep_markers = keep_markers
        self.back = _TxnBack(sr, reader, fs, prefix, options)
        #: Transactions decided in this range: True committed, False aborted.
        self.decided: dict[Txn, bool] = {}
        #: The rows of transactions not decided yet, in order.
        self.pending: dict[Txn, list[pa.Table]] = {}
        self._released: list[pa.Table] = []

    def filter(self, ready: pa.Table, range_uuids: set[str]) -> list[pa.Table]:
        """What ``ready`` (in order, chunked messages whole) lets out now: the rows of committed
        transactions (what the range read back for them first), and the rest. A transaction's rows
        share its fate wherever they lie against its marker, so they are taken by transaction
        (grouped in Arrow), not row by row."""
        most = ready["txnid_most_bits"]
        marker = ready["marker_type"]
        if most.null_count == ready.num_rows and (self.keep_markers or marker.null_count == ready.num_rows):
            return [ready]
        index = pa.array(range(ready.num_rows), pa.int64())
        plain = pc.is_null(most)
        if not self.keep_markers:
            plain = pc.and_(plain, pc.is_null(marker))
        keep: list[pa.Array] = [pc.indices_nonzero(plain)]
        commits: dict[Txn, int] = {}
        ends = pc.fill_null(pc.is_in(marker, pa.array([TXN_COMMIT, TXN_ABORT], pa.int32())), False)
        for row in (
            ready.select(["txnid_most_bits", "txnid_least_bits", "marker_type"])
            .filter(ends)
            .append_column("i", index.filter(ends))
            .to_pylist()
        ):
            txn = (row["txnid_most_bits"], row["txnid_least_bits"])
            if row["txnid_most_bits"] is None or txn in self.decided:
                continue
            committed = row["marker_type"] == TXN_COMMIT
            self.decided[txn] = committed
            earlier = self.pending.pop(txn, [])
            if committed:
                self._released.extend(earlier)
                commits[txn] = row["i"]
        if self.keep_markers:
            keep.append(pc.indices_nonzero(pc.and_(pc.is_valid(most), pc.is_valid(marker))))
        is_txn = pc.and_(pc.is_valid(most), pc.is_null(marker))
        groups = (
            pa.table({"m": most, "l": ready["txnid_least_bits"], "i": index})
            .filter(is_txn)
            .group_by(["m", "l"], use_threads=False)
            .aggregate([("i", "list")])
        )
        for m, lo, rows in zip(groups["m"].to_pylist(), groups["l"].to_pylist(), groups["i_list"].to_pylist()):
            state = self.decided.get((m, lo))
            if state is None:
                self.pending.setdefault((m, lo), []).append(ready.take(pa.array(rows, pa.int64())))
            elif state:
                keep.append(pa.array(rows, pa.int64()))
        out: list[pa.Table] = []
        if commits:
            out.extend(self._read_back(ready, commits, range_uuids))
        out.extend(self._released)
        self._released = []
        kept = pa.concat_arrays([k.cast(pa.int64()) for k in keep])
        out.append(ready if len(kept) == ready.num_rows else ready.take(pc.take(kept, pc.sort_indices(kept))))
        return [_committed(t) for t in out if t.num_rows]

    def _read_back(self, ready: pa.Table, commits: Mapping[Txn, int], range_uuids: set[str]) -> list[pa.Table]:
        """The committed transactions' messages before the range, and an error row for each whose
        search stopped at the entries allowed before it passed the transaction's timeout."""
        times = _times(ready).to_pylist()
        margin = self.sr.txn.timeout_ms + TXN_CLOCK_MARGIN_MS
        out: list[pa.Table] = []
        short: list[tuple[Txn, int, str]] = []
        for txn, i in sorted(commits.items(), key=lambda kv: kv[1]):
            at = times[i]
            why = self.back.reach(None if at is None else at - margin)
            if why is not None:
                short.append((txn, i, why))
        found = self.back.messages_of(set(commits), range_uuids)
        if found is not None:
            out.append(found)
        for txn, i, why in short:
            out.append(self._short(ready, txn, i, why))
        return out

    def _short(self, ready: pa.Table, txn: Txn, i: int, why: str) -> pa.Table:
        ledger, entry = ready["ledger_id"][i].as_py(), ready["entry_id"][i].as_py()
        message = (
            f"transaction ({txn[0]}, {txn[1]}) committed at {ledger}:{entry}: {why}; any message of it before "
            "the range not found is not emitted"
        )
        row = decode_entries(error_rows(ledger, self.sr.partition, message), self.options)
        return row.set_column(row.schema.get_field_index("entry_id"), "entry_id", pa.array([entry], pa.int64()))


def _committed(rows: pa.Table) -> pa.Table:
    """``rows`` with ``txn_status`` 'committed' on every transactional message (a range lets out
    no other)."""
    if rows["txnid_most_bits"].null_count == rows.num_rows:
        return rows
    is_txn = pc.and_(pc.is_valid(rows["txnid_most_bits"]), pc.is_null(rows["marker_type"]))
    status = pc.if_else(is_txn, pa.scalar("committed"), rows["txn_status"])
    return rows.set_column(rows.schema.get_field_index("txn_status"), "txn_status", status)


def stream_range(
    sr: StreamRange,
    *,
    decode_options: _native.DecodeOptions | None = None,
    crypto_keys: _native.CryptoKeys | None = None,
    reassembly: _native.ReassemblyOptions | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_tls: BookieTls | None = None,
    timeout: float = 30.0,
    slice_entries: int = SLICE_ENTRIES,
    reader: Any = None,
) -> Iterator[pa.Table]:
    """The messages one range of a micro-batch emits (see the module's docs): every message whose
    entry lies in the range, chunked messages at their last chunk, whole. ``crypto_keys`` decrypts
    encrypted messages (see :func:`pulsar_entries.decode`)."""
    keep_markers = decode_options is not None and decode_options.keep_markers
    # Markers are read, whatever the caller keeps: they decide the transactions.
    options = Decoding(_with_markers(decode_options), crypto_keys)
    limits = _stream_limits(reassembly)
    if sr.lost is not None:
        yield _native.reassemble_chunks(
            decode_entries(error_rows(-1, sr.partition, f"data loss: {sr.lost}"), options), options=limits
        )
    rng = sr.range
    if rng is None:
        return
    fs, prefix = offload_filesystem, offload_prefix
    if reader is None:
        ledgers = [s.ledger for s in [*rng.segments, *sr.behind]]
        try:
            reader = open_reader(ledgers, rng.bookies, None, timeout, bookie_tls)
        except (OSError, ValueError) as e:
            failed = error_rows(rng.segments[0].ledger.ledger_id, rng.partition, str(e))
            yield _native.reassemble_chunks(decode_entries(failed, options), options=limits)
            return
    held: pa.Table | None = None
    started: set[str] = set()
    looked_back: set[str] = set()
    open_: dict[str, int] = {}
    committed = _ReadCommitted(sr, reader, fs, prefix, options, keep_markers)
    tables = (t for seg in rng.segments for t in _segment_tables(seg, rng.partition, reader, fs, prefix, slice_entries))
    for entries in _coalesced(tables, slice_entries):
        messages = decode_entries(entries, options)
        chunks = _chunk_rows(messages)
        need = {u for _, _, u, c, _, _ in chunks if c > 0 and u not in started and u not in looked_back}
        # Only the first chunk row of a uuid in this slice decides whether to look back.
        first_seen: dict[str, int] = {}
        for _, _, u, c, _, _ in chunks:
            first_seen.setdefault(u, c)
        need = {u for u in need if first_seen[u] > 0}
        if need:
            looked_back |= need
            back = _read_back(sr, reader, fs, prefix, options, need)
            if back is not None and back.num_rows:
                messages = pa.concat_tables([back, messages])
                chunks = _chunk_rows(messages)
        if held is not None and held.num_rows:
            messages = pa.concat_tables([held, messages])
            chunks = _chunk_rows(messages)
        superseded: dict[str, int] = {}
        for i, _, uuid, chunk_id, num, _ in chunks:
            if chunk_id == 0:
                if uuid in open_:
                    # A resend of a message still open: the partial one before it is dropped, as a
                    # consumer drops it (and as a range that starts after it never sees it).
                    superseded[uuid] = i
                started.add(uuid)
                open_[uuid] = num
            if uuid in open_ and num and chunk_id >= num - 1:
                del open_[uuid]
        held, ready = _split(messages, chunks, set(open_), superseded)
        for out in committed.filter(ready, started | looked_back):
            yield _native.reassemble_chunks(out, options=limits)
        pa.default_memory_pool().release_unused()
    # What is still open is left to the range that holds its last chunk.


def _with_markers(options: _native.DecodeOptions | None) -> _native.DecodeOptions:
    """``options`` that keep markers as rows."""
    o = options if options is not None else _native.DecodeOptions()
    return _native.DecodeOptions(
        verify_checksum=o.verify_checksum,
        keep_markers=True,
        max_uncompressed_size=o.max_uncompressed_size,
        utf8_errors=o.utf8_errors,
        max_output_bytes=o.max_output_bytes,
    )


def _split(
    messages: pa.Table,
    chunks: list[tuple[int, int, str, int, int, int]],
    open_: set[str],
    superseded: Mapping[str, int],
) -> tuple[pa.Table | None, pa.Table]:
    """``(held, ready)``: the chunk rows of the messages still open, and every other row (less the
    chunks of partial messages a resend superseded)."""
    if not open_ and not superseded:
        return None, messages
    held = [False] * messages.num_rows
    ready = [True] * messages.num_rows
    for i, _, uuid, _, _, _ in chunks:
        if i < superseded.get(uuid, -1):
            ready[i] = False
        elif uuid in open_:
            held[i], ready[i] = True, False
    return messages.filter(pa.array(held)), messages.filter(pa.array(ready))
