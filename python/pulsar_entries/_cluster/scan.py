"""A topic read in parallel, straight from storage: ranges of entries planned
once (the layout, the last-add-confirmed of open ledgers, offload block
boundaries, a seek by time), then each range read and decoded on its own with
nothing but what the range carries.

This is what ``spark.read.format("pulsar")`` runs (one range per Spark
partition), and it needs no Spark: :func:`plan_ranges` on the driver,
:func:`scan_range` in each task.

Chunked messages (PIP-107) come out whole across range boundaries: the range
holding a message's first chunk owns the message and, when the message is
still open at the range's end, reads on past it (only that message's chunks,
at most ``read_ahead`` entries) until the message is decided; a range that is
not the first of its topic partition drops the continuation chunks whose first
chunk it did not read (an earlier range owns them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries._native as _native

from .._carry import decode_carrying
from ..auth import BookieTls, bookie_client_options
from .files import BookieFiles
from .layout import Ledger, Partition, TopicLayout
from .read import (
    ENTRY_SCHEMA,
    NO_METADATA,
    bookie_windows,
    compacted_entries,
    compacted_to,
    error_rows,
    from_offload,
    offload_path,
    read_ledger,
    with_partition,
)

#: Entries a range reads from a bookie per request and decodes at once (the entries of
#: consecutive small ledgers are decoded together), at most about SLICE_BYTES of them: a task's
#: memory. The same slices as ``pulsar_entries.spark.decode``'s, so ``txn_status`` is decided over
#: the same spans (a transaction's end marker is seen when it lies in the same slice).
SLICE_ENTRIES = 1024
SLICE_BYTES = 4 << 20
#: Entries each read-ahead request fetches past a range's end.
AHEAD_SLICE = 64
#: Ranges one ledger is cut into at most: past that, the rest of a claimed ledger is one range
#: (which stops at the first long run of entries no bookie holds). A ledger of 10,000 ranges of
#: 50,000 entries is far beyond any real one; a claim of 10^12 entries plans in bounded memory.
MAX_RANGES_PER_LEDGER = 10_000


@dataclass(frozen=True)
class Segment:
    """Entries ``first..=last`` of one ledger (``last`` None: up to what the
    ledger holds); ``compacted`` marks the compacted ledger of a compacted read."""

    ledger: Ledger
    first: int
    last: int | None
    compacted: bool = False

    @property
    def count(self) -> int | None:
        return None if self.last is None else self.last - self.first + 1


@dataclass(frozen=True)
class EntryRange:
    """What one task reads: consecutive segments of one topic partition, and
    the segments after them it may read ahead into for chunked messages."""

    topic: str
    partition: int
    segments: list[Segment]
    #: The first range of its topic partition in this read: it keeps continuation
    #: chunks whose first chunk was not read (as ``reassemble_chunks`` reports them).
    first: bool
    ahead: list[Segment] = field(default_factory=list)
    #: Bookie id -> ``host:port``.
    bookies: dict[str, str] = field(default_factory=dict)

    @property
    def entries(self) -> int | None:
        counts = [s.count for s in self.segments]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


@dataclass
class ReadCounter:
    """Entries read by the planner (the seek's probes and the last-add-confirmed look-ups)."""

    probes: int = 0
    lac_lookups: int = 0


# ------------------------------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Decoding:
    """How a range's entries are decoded: the decode options, and the private keys that decrypt
    end-to-end encrypted messages (``None``: they stay encrypted)."""

    options: _native.DecodeOptions | None = None
    crypto_keys: _native.CryptoKeys | None = None


def decode_entries(entries: pa.Table, decoding: Decoding) -> pa.Table:
    """Entries (``ledger_id, entry_id, partition, data, error``) to messages, as
    ``decoding`` says: the one place a range's entries are decoded."""
    return decode_carrying(entries, options=decoding.options, crypto_keys=decoding.crypto_keys)


def output_schema(options: _native.DecodeOptions | None, *, reassemble: bool = True) -> pa.Schema:
    """The schema of what :func:`scan_range` yields with these options."""
    decoded = decode_entries(ENTRY_SCHEMA.empty_table(), Decoding(options))
    return _native.reassemble_chunks(decoded).schema if reassemble else decoded.schema


# ------------------------------------------------------------------------------------- planning


def ledger_last(led: Ledger, reader: Any, counter: ReadCounter | None = None) -> int | None:
    """The last readable entry of a ledger: its count from the managed ledger, else
    (the open ledger) the bookies' last-add-confirmed; None when unknown."""
    raw = led.info.get("last_entry_id")
    closed = raw if isinstance(raw, int) and led.info.get("state") == "CLOSED" else None
    if led.entries > 0:
        # Evidence, not a claim: a closed ledger holds no more than its metadata's last entry.
        return led.entries - 1 if closed is None else min(led.entries - 1, closed)
    if led.metadata is None or reader is None:
        return None
    if closed is not None:
        return closed
    try:
        if counter is not None:
            counter.lac_lookups += 1
        return int(reader.last_readable(led.ledger_id, led.metadata))
    except OSError:
        return None


def _block_starts(led: Ledger, fs: Any, prefix: str) -> list[int]:
    """The first entry of every block of an offloaded ledger (its offload index), [0] when unknown."""
    from ..offload import list_blocks

    try:
        blocks = list_blocks(offload_path(led, prefix) + "-index", ledger_id=led.ledger_id, filesystem=fs)
    except Exception:
        return [0]
    starts = sorted({b.first_entry_id for b in blocks if b.ledger_id in (None, led.ledger_id)})
    return starts or [0]


def partition_segments(
    part: Partition,
    reader: Any,
    *,
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
    counter: ReadCounter | None = None,
) -> list[Segment]:
    """The segments of a topic partition between ``start`` and ``end`` (inclusive), the
    open ledger bounded by its last-add-confirmed."""
    out = []
    for led in part.ledgers:
        first, last = 0, ledger_last(led, reader, counter)
        if start is not None:
            if led.ledger_id < start[0]:
                continue
            if led.ledger_id == start[0]:
                first = max(first, start[1])
        if end is not None:
            if led.ledger_id > end[0]:
                break
            if led.ledger_id == end[0]:
                last = end[1] if last is None else min(last, end[1])
        if last is not None and last < first:
            continue
        out.append(Segment(led, first, last))
    return out


def _cut(seg: Segment, size: int, fs: Any, prefix: str) -> list[Segment]:
    """A segment cut into pieces of about ``size`` entries; an offloaded ledger read
    from tiered storage only at its blocks' boundaries (each piece whole blocks)."""
    if seg.last is None or seg.count is None or seg.count <= size:
        return [seg]
    if from_offload(seg.ledger, fs) and fs is not None:
        cuts = [s for s in _block_starts(seg.ledger, fs, prefix) if seg.first < s <= seg.last]
        pieces, lo = [], seg.first
        for s in cuts:
            if s - lo >= size:
                pieces.append(Segment(seg.ledger, lo, s - 1))
                lo = s
        pieces.append(Segment(seg.ledger, lo, seg.last))
        return pieces
    return [Segment(seg.ledger, lo, min(lo + size - 1, seg.last)) for lo in range(seg.first, seg.last + 1, size)]


def plan_ranges(
    layout: TopicLayout,
    *,
    reader: Any = None,
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
    bounds: Mapping[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] | None = None,
    read_compacted: bool = False,
    entries_per_partition: int = 50_000,
    read_ahead: int = 100_000,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    counter: ReadCounter | None = None,
) -> list[EntryRange]:
    """Ranges of at most ``entries_per_partition`` entries (small ledgers share a range,
    large ones are cut; offloaded ones along their blocks), in topic order per partition.

    ``reader`` answers the open ledgers' last-add-confirmed (None: a stopped cluster,
    read up to what the files hold). ``bounds`` narrows each topic partition further
    (``(lower, upper)`` positions, e.g. from :func:`~pulsar_entries._cluster.seek.seek_by_time`); ``read_ahead``
    bounds the entries a range may read past its end for a chunked message."""
    if entries_per_partition < 1:
        raise ValueError(f"entriesPerPartition must be at least 1, not {entries_per_partition}")
    out: list[EntryRange] = []
    for part in layout.partitions:
        lower, upper = start, end
        ranges: list[list[Segment]] = []
        if read_compacted and part.compacted is not None:
            ranges.append([Segment(part.compacted, 0, None, compacted=True)])
            horizon = part.horizon or (compacted_to(part.compacted) if part.compacted.metadata else None)
            if horizon is not None:
                after = (horizon[0], horizon[1] + 1)
                lower = after if lower is None else max(lower, after)
        whole = partition_segments(part, reader, start=lower, end=upper, counter=counter)
        full = whole
        if bounds and part.partition in bounds:
            low, high = bounds[part.partition]
            full = _narrow(whole, low, high)
        current: list[Segment] = []
        size = 0
        for seg in full:
            if seg.last is not None and not from_offload(seg.ledger, offload_filesystem):
                # Bookie ledgers fill each range to the entry.
                lo = seg.first
                cut = 0
                while lo <= seg.last:
                    if size >= entries_per_partition:
                        ranges.append(current)
                        current, size = [], 0
                    cut += 1
                    hi = min(seg.last, lo + entries_per_partition - size - 1)
                    if cut >= MAX_RANGES_PER_LEDGER:
                        hi = seg.last
                    current.append(Segment(seg.ledger, lo, hi))
                    size += hi - lo + 1
                    lo = hi + 1
                continue
            for piece in _cut(seg, entries_per_partition, offload_filesystem, offload_prefix):
                n = piece.count if piece.count is not None else entries_per_partition
                if current and size + n > entries_per_partition:
                    ranges.append(current)
                    current, size = [], 0
                current.append(piece)
                size += n
        if current:
            ranges.append(current)
        for i, segs in enumerate(ranges):
            # Read-ahead goes past a time bound (a chunked message's chunks share its
            # publish time, but other producers' entries may sit between them), never
            # past ``end``.
            ahead = [] if segs[-1].compacted else _take(_after(segs[-1], whole), read_ahead)
            out.append(EntryRange(part.topic, part.partition, segs, i == 0, ahead, dict(layout.bookies)))
    return out


def _narrow(segs: list[Segment], lo: tuple[int, int] | None, hi: tuple[int, int] | None) -> list[Segment]:
    out = []
    for s in segs:
        first, last = s.first, s.last
        lid = s.ledger.ledger_id
        if lo is not None:
            if lid < lo[0]:
                continue
            if lid == lo[0]:
                first = max(first, lo[1])
        if hi is not None:
            if lid > hi[0]:
                break
            if lid == hi[0]:
                last = hi[1] if last is None else min(last, hi[1])
        if last is None or last >= first:
            out.append(Segment(s.ledger, first, last, s.compacted))
    return out


def _after(last: Segment, later: list[Segment]) -> list[Segment]:
    """The positions after ``last``'s end, in order, each once."""
    pos = (last.ledger.ledger_id, last.last if last.last is not None else 2**62)
    out: list[Segment] = []
    for s in later:
        lid = s.ledger.ledger_id
        first = s.first
        if lid < pos[0]:
            continue
        if lid == pos[0]:
            first = max(first, pos[1] + 1)
        if s.last is not None and s.last < first:
            continue
        out.append(Segment(s.ledger, first, s.last))
        pos = (lid, s.last if s.last is not None else 2**62)
    return out


def _take(segs: list[Segment], budget: int) -> list[Segment]:
    out = []
    for s in segs:
        if budget <= 0:
            break
        last = s.first + budget - 1 if s.last is None else min(s.last, s.first + budget - 1)
        out.append(Segment(s.ledger, s.first, last))
        budget -= last - s.first + 1
    return out


# ------------------------------------------------------------------------------------- reading


def open_reader(
    rng_ledgers: Sequence[Ledger],
    bookies: Mapping[str, str],
    bookie_dirs: Sequence[str] | None,
    timeout: float,
    bookie_tls: BookieTls | None = None,
) -> Any:
    """The ledger source of a task: the bookies (over TLS with ``bookie_tls``), or the bookies' files."""
    if bookie_dirs is not None:
        return BookieFiles(bookie_dirs, rng_ledgers)
    return _native.BookieReader(dict(bookies), options=bookie_client_options(timeout, bookie_tls))


def _segment_tables(seg: Segment, partition: int, reader: Any, fs: Any, prefix: str, step: int) -> Iterator[pa.Table]:
    """A segment's entries, ``step`` at a time from the bookies (whole, from tiered storage)."""
    led = seg.ledger
    if seg.compacted:
        if led.metadata is None:
            yield error_rows(led.ledger_id, partition, f"compacted ledger {led.ledger_id}: {NO_METADATA}")
            return
        try:
            records = reader.read_ledger(led.ledger_id, led.metadata)
        except OSError as e:
            yield error_rows(led.ledger_id, partition, str(e))
            return
        fake = Partition("", partition, [])
        yield from compacted_entries(records, fake)
        return
    if seg.last is None or from_offload(led, fs) or led.metadata is None or not hasattr(reader, "read_window"):
        yield read_ledger(led, partition, reader, seg.first, seg.last, fs, prefix)
        return
    lo = seg.first
    while lo <= seg.last:
        hi = min(lo + step - 1, seg.last)
        table, ended = _bookie_slice(led, partition, reader, lo, hi)
        yield table
        if ended:
            # The bookies hold nothing past a long run of missing entries (or the deadline passed):
            # the slice's last row stands for the rest.
            return
        lo = hi + 1


def _bookie_slice(led: Ledger, partition: int, reader: Any, lo: int, hi: int) -> tuple[pa.Table, bool]:
    """Entries ``lo..=hi`` of a bookie ledger, and whether the read ended before ``hi``."""
    tables = []
    for table, ended in bookie_windows(led, partition, reader, lo, hi, SLICE_BYTES):
        tables.append(with_partition(table, partition))
        if ended:
            return pa.concat_tables(tables), True
    return (pa.concat_tables(tables) if tables else ENTRY_SCHEMA.empty_table()), False


def _coalesced(tables: Iterator[pa.Table], max_rows: int, max_bytes: int = SLICE_BYTES) -> Iterator[pa.Table]:
    """Entry tables joined into slices of about ``max_rows`` entries / ``max_bytes`` of data."""
    held: list[pa.Table] = []
    rows = size = 0
    for t in tables:
        if not t.num_rows:
            continue
        held.append(t)
        rows += t.num_rows
        size += t["data"].nbytes
        if rows >= max_rows or size >= max_bytes:
            yield pa.concat_tables(held) if len(held) > 1 else held[0]
            held, rows, size = [], 0, 0
    if held:
        yield pa.concat_tables(held) if len(held) > 1 else held[0]


def _chunk_rows(messages: pa.Table) -> list[tuple[int, int, str, int, int, int]]:
    """``(row, partition, uuid, chunk_id, num_chunks, publish ms)`` of the chunk rows."""
    is_chunk = pc.and_(pc.is_valid(messages["chunk_id"]), pc.is_valid(messages["uuid"]))
    idx = pc.indices_nonzero(pc.fill_null(is_chunk, False)).to_pylist()
    if not idx:
        return []
    take = messages.select(["partition", "uuid", "chunk_id", "num_chunks", "publish_time"]).take(idx).to_pylist()
    out = []
    for i, r in zip(idx, take):
        t = r["publish_time"]
        ms = int(t.timestamp() * 1000) if t is not None else 0
        out.append((i, r["partition"], r["uuid"], r["chunk_id"], r["num_chunks"] or 0, ms))
    return out


@dataclass
class _Pending:
    """The chunked messages open so far (our model, to choose where to cut the stream)."""

    max_pending: int | None
    expire_after_ms: int | None
    open: dict[tuple[int, str], int] = field(default_factory=dict)
    stream_time: int = 0

    def see(self, key: tuple[int, str], chunk_id: int, num_chunks: int, t: int) -> None:
        self.stream_time = max(self.stream_time, t)
        if chunk_id == 0:
            self.open.pop(key, None)
            self.open[key] = t
        if key in self.open and num_chunks and chunk_id >= num_chunks - 1:
            del self.open[key]
        if self.max_pending is not None:
            while len(self.open) > self.max_pending:
                del self.open[next(iter(self.open))]

    def tick(self, t: int) -> None:
        self.stream_time = max(self.stream_time, t)
        if self.expire_after_ms is not None:
            for key, started in list(self.open.items()):
                if self.stream_time - started > self.expire_after_ms:
                    del self.open[key]


def _max_time(messages: pa.Table) -> int | None:
    t = pc.max(messages["publish_time"]).as_py()
    return None if t is None else int(t.timestamp() * 1000)


def scan_range(
    rng: EntryRange,
    *,
    decode_options: _native.DecodeOptions | None = None,
    crypto_keys: _native.CryptoKeys | None = None,
    reassemble: bool = True,
    reassembly: _native.ReassemblyOptions | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    bookie_tls: BookieTls | None = None,
    timeout: float = 30.0,
    slice_entries: int = SLICE_ENTRIES,
    reader: Any = None,
) -> Iterator[pa.Table]:
    """The messages of one range: read, decoded and (``reassemble``) with chunked
    messages whole, as :func:`pulsar_entries.reassemble_chunks` gives them over the
    topic. Tables of at most about ``slice_entries`` entries' messages, except while
    a chunked message is open (its span is held). ``crypto_keys`` decrypts encrypted
    messages (see :func:`pulsar_entries.decode`)."""
    options = Decoding(decode_options, crypto_keys)
    limits = reassembly or _native.ReassemblyOptions()
    if reader is None:
        ledgers = [s.ledger for s in [*rng.segments, *rng.ahead]]
        try:
            reader = open_reader(ledgers, rng.bookies, bookie_dirs, timeout, bookie_tls)
        except (OSError, ValueError) as e:
            failed = decode_entries(error_rows(rng.segments[0].ledger.ledger_id, rng.partition, str(e)), options)
            # The row has the columns of every other table the range yields.
            yield _native.reassemble_chunks(failed, options=limits) if reassemble else failed
            return
    fs, prefix = offload_filesystem, offload_prefix
    if not reassemble:
        for entries in _coalesced(
            (t for seg in rng.segments for t in _segment_tables(seg, rng.partition, reader, fs, prefix, slice_entries)),
            slice_entries,
        ):
            yield decode_entries(entries, options)
        return

    pending = _Pending(limits.max_pending, limits.expire_after_ms)
    started: set[tuple[int, str]] = set()
    window: list[pa.Table] = []

    def flush() -> Iterator[pa.Table]:
        if window:
            table = pa.concat_tables(window) if len(window) > 1 else window[0]
            window.clear()
            if table.num_rows:
                yield _native.reassemble_chunks(table, options=limits)
            # What the slice held goes back to the system, not to the allocator's caches: a task's
            # memory stays that of a slice, however long its range.
            pa.default_memory_pool().release_unused()

    for entries in _coalesced(
        (t for seg in rng.segments for t in _segment_tables(seg, rng.partition, reader, fs, prefix, slice_entries)),
        slice_entries,
    ):
        messages = decode_entries(entries, options)
        chunks = _chunk_rows(messages)
        drop = []
        for i, p, uuid, chunk_id, num, t in chunks:
            key = (p, uuid)
            if chunk_id == 0:
                started.add(key)
            elif key not in started and not rng.first:
                # Its first chunk lies before this range: an earlier range owns the message.
                drop.append(i)
                continue
            pending.see(key, chunk_id, num, t)
        if drop:
            mask = [True] * messages.num_rows
            for i in drop:
                mask[i] = False
            messages = messages.filter(pa.array(mask))
        latest = _max_time(messages) if messages.num_rows else None
        if latest is not None:
            pending.tick(latest)
        window.append(messages)
        if not pending.open:
            yield from flush()
    if pending.open and rng.ahead:
        yield from _read_ahead(rng, reader, fs, prefix, options, pending, window)
    yield from flush()


def _read_ahead(
    rng: EntryRange,
    reader: Any,
    fs: Any,
    prefix: str,
    options: Decoding,
    pending: _Pending,
    window: list[pa.Table],
) -> Iterator[pa.Table]:
    """Past the range's end: only the chunks of the messages open at its end, until
    each is decided (its last chunk, a new first chunk of its uuid, expiry) or the
    read-ahead segments end."""
    for seg in rng.ahead:
        for entries in _segment_tables(seg, rng.partition, reader, fs, prefix, AHEAD_SLICE):
            if not entries.num_rows:
                continue
            messages = decode_entries(entries, options)
            keep = []
            for i, p, uuid, chunk_id, num, t in _chunk_rows(messages):
                key = (p, uuid)
                if key not in pending.open:
                    continue
                if chunk_id == 0:
                    # A new message of the same uuid: it belongs to a later range.
                    del pending.open[key]
                    continue
                keep.append(i)
                pending.see(key, chunk_id, num, t)
            if keep:
                window.append(messages.take(keep))
            latest = _max_time(messages) if messages.num_rows else None
            if latest is not None:
                pending.tick(latest)
            if not pending.open:
                return
    yield from ()
