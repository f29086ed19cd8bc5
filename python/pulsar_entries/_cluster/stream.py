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
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

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

#: A position: ``(ledger_id, entry_id)``.
Position = tuple[int, int]

#: Before every entry of a partition.
EARLIEST: Position = (-1, -1)
#: Entries read back per request when a range looks for a chunked message's earlier chunks.
BACK_SLICE = 64
#: The largest entry id or ledger id a position may name (Java's ``Long.MAX_VALUE``).
_MAX_ID = 2**63 - 1


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
            out.append(StreamRange(r, layout.topic, part.partition, _tail(before, read_back)))
    return out


# ------------------------------------------------------------------------------------- reading


#: Reassembly in a stream: no expiry or eviction (see the module's docs).
def _stream_limits(limits: _native.ReassemblyOptions | None) -> _native.ReassemblyOptions:
    size = limits.max_message_size if limits is not None else None
    return _native.ReassemblyOptions(max_pending=None, expire_after_ms=None, max_message_size=size)


def _positions(messages: pa.Table) -> list[tuple[int, int]]:
    return list(zip(messages["ledger_id"].to_pylist(), messages["entry_id"].to_pylist()))


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
    for seg in reversed(sr.behind):
        if not wanted or seg.last is None:
            break
        hi = seg.last
        while hi >= seg.first and wanted:
            lo = max(seg.first, hi - BACK_SLICE + 1)
            tables = list(_segment_tables(Segment(seg.ledger, lo, hi), sr.partition, reader, fs, prefix, BACK_SLICE))
            hi = lo - 1
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
    options = Decoding(decode_options, crypto_keys)
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
        if ready.num_rows:
            yield _native.reassemble_chunks(ready, options=limits)
        pa.default_memory_pool().release_unused()
    # What is still open is left to the range that holds its last chunk.


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
