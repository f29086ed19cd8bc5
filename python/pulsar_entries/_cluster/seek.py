"""The seek by time of a topic read: two binary searches over a partition's
planned segments, each probe reading one entry's metadata, that narrow the
entries a read plans (``spark.read.format("pulsar")`` with a time filter).
Split from :mod:`pulsar_entries._cluster.scan`, whose segments it searches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries._native as _native

from .layout import Ledger, Partition
from .read import read_ledger
from .scan import ReadCounter, Segment, partition_segments


def probe_metadata(
    led: Ledger, entry: int, partition: int, reader: Any, fs: Any, prefix: str
) -> tuple[pa.Table | None, str | None]:
    """One entry's metadata (``entry_metadata``'s row), read alone; or None and why it could not be read."""
    table = read_ledger(led, partition, reader, entry, entry, fs, prefix)
    good = table.filter(pc.is_valid(table["data"]))
    if good.num_rows == 0:
        errors = table["error"].to_pylist()
        return None, errors[0] if errors and errors[0] else "no entry"
    return _native.entry_metadata(good["data"].combine_chunks()), None


def _probe_time(led: Ledger, entry: int, partition: int, reader: Any, column: str, fs: Any, prefix: str) -> int | None:
    md, _ = probe_metadata(led, entry, partition, reader, fs, prefix)
    if md is None:
        return None
    value = md[column][0].as_py()
    if value is None:
        return None
    return int(value.timestamp() * 1000) if hasattr(value, "timestamp") else int(value)


def seek_by_time(
    segments: Sequence[Segment],
    partition: int,
    reader: Any,
    *,
    column: str = "publish_time",
    lower: tuple[int, bool] | None = None,
    upper: tuple[int, bool] | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    counter: ReadCounter | None = None,
) -> tuple[tuple[int, int] | None, tuple[int, int] | None] | None:
    """Positions bounding the entries whose ``column`` (``publish_time`` or
    ``broker_timestamp``, ms) is in ``lower`` / ``upper`` (``(ms, inclusive)``): two
    binary searches reading O(log n) entries, which assume the entries' times grow
    with their position (as Pulsar's seek by time does). An unreadable probe counts
    as inside the range, so the bounds only widen. Returns ``(first, last)``
    positions, a bound None when it does not cut, or None when no entry can match."""
    segs = [s for s in segments if s.last is not None and not s.compacted]
    sizes = [s.last - s.first + 1 for s in segs if s.last is not None]
    total = sum(sizes)
    if total == 0:
        return (None, None)

    def at(i: int) -> tuple[Segment, int]:
        for s, n in zip(segs, sizes):
            if i < n:
                return s, s.first + i
            i -= n
        raise IndexError(i)

    def time(i: int) -> int | None:
        s, e = at(i)
        if counter is not None:
            counter.probes += 1
        return _probe_time(s.ledger, e, partition, reader, column, offload_filesystem, offload_prefix)

    def first_where(pred: Any) -> int:
        lo, hi = 0, total
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(time(mid)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    first, last = 0, total - 1
    if lower is not None:
        t, inclusive = lower
        # The first entry at or after the lower bound (unknown times are inside).
        first = first_where(lambda v: v is None or (v >= t if inclusive else v > t))
    if upper is not None:
        t, inclusive = upper
        # The last entry at or before the upper bound: one before the first past it.
        last = first_where(lambda v: v is not None and (v > t if inclusive else v >= t)) - 1
    if first > last:
        return None
    s0, e0 = at(first)
    s1, e1 = at(last)
    return ((s0.ledger.ledger_id, e0), (s1.ledger.ledger_id, e1))


#: A partition's ``(first, last)`` positions for a read; a bound None when it does not cut.
Positions = tuple[tuple[int, int] | None, tuple[int, int] | None]
#: ``(ms, inclusive)`` lower and upper bounds of one time column.
ColumnBounds = tuple[tuple[int, bool] | None, tuple[int, bool] | None]


def seek_partitions(
    partitions: Sequence[Partition],
    reader: Any,
    columns: Mapping[str, ColumnBounds],
    *,
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    counter: ReadCounter | None = None,
) -> dict[int, Positions | None]:
    """For each partition, the positions bounding the entries whose time ``columns`` all fall within
    their bounds (:func:`seek_by_time` per column, the narrowest of them kept), or None when no entry
    of the partition can match."""
    out: dict[int, Positions | None] = {}
    for part in partitions:
        segs = partition_segments(part, reader, start=start, end=end, counter=counter)
        lo: tuple[int, int] | None = None
        hi: tuple[int, int] | None = None
        found: Positions | None = (None, None)
        for column, (lower, upper) in columns.items():
            found = seek_by_time(
                segs,
                part.partition,
                reader,
                column=column,
                lower=lower,
                upper=upper,
                offload_filesystem=offload_filesystem,
                offload_prefix=offload_prefix,
                counter=counter,
            )
            if found is None:
                break
            a, b = found
            if a is not None and (lo is None or a > lo):
                lo = a
            if b is not None and (hi is None or b < hi):
                hi = b
        out[part.partition] = None if found is None else (lo, hi)
    return out
