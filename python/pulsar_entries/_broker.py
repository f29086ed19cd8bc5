"""Broker entry metadata in process (PIP-70): stamping entries and seeking by
time, with times under the package's one rule (a naive datetime is UTC)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from . import _native
from ._times import Millis, millis


@dataclass(frozen=True)
class Position:
    """Where a seek lands."""

    __module__ = "pulsar_entries"

    #: Row in the entry table (its length when past the last entry).
    row: int
    ledger_id: int
    #: Past the end: the last entry id + 1, as Pulsar's ``Position.getNext()``.
    entry_id: int
    #: Offset seeks: the message's index in the entry holding the offset.
    batch_index: int | None
    #: Entries the binary search read.
    entries_read: int


def _timestamps(timestamps: Any) -> int | list[int] | None:
    """``None``, one time, or a sequence (or pyarrow array) of times, as milliseconds."""
    if timestamps is None:
        return None
    if hasattr(timestamps, "__index__") or (hasattr(timestamps, "timestamp") and not hasattr(timestamps, "__len__")):
        return millis(timestamps)
    if hasattr(timestamps, "to_pylist"):
        timestamps = timestamps.to_pylist()
    try:
        items = iter(timestamps)
    except TypeError:
        raise TypeError("timestamps must be None, an int, or a sequence of ints (ms)") from None
    return [millis(t) for t in items]


def stamp(
    entries: Any,
    *,
    start_index: int = -1,
    timestamps: Millis | Sequence[Millis] | pa.Array | None = None,
    index: bool = True,
    timestamp: bool = True,
) -> pa.Table:
    """Adds or replaces every entry's broker entry metadata (``0e 02`` prefix),
    in table order, as Pulsar's interceptors do. ``index`` is the offset of the
    entry's last message, counting from ``start_index``; ``broker_timestamp``
    comes from ``timestamps`` (one value, or one per entry; a naive datetime is
    UTC) or the clock. The checksummed part of each entry is kept byte for byte.
    """
    times = _timestamps(timestamps)
    return _native.stamp(entries, start_index=start_index, timestamps=times, index=index, timestamp=timestamp)


def find_position_by_time(entries: Any, time: Millis) -> Position:
    """Pulsar's seek by timestamp: the entry after the newest entry whose
    broker timestamp (else publish time) is before ``time`` (ms since the
    epoch, or a datetime; a naive datetime is UTC); the first entry when none
    is. A binary search reading O(log n) entries' metadata."""
    return Position(*_native.find_position_by_time(entries, millis(time)))


def find_position_by_offset(entries: Any, offset: int) -> Position:
    """KoP's seek by continuous offset: a binary search on the broker index."""
    return Position(*_native.find_position_by_offset(entries, offset))
