"""Broker entry metadata in process (PIP-70): stamping entries and seeking by
time, with times under the package's one rule (a naive datetime is UTC)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from . import _native
from ._times import Millis, as_utc


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
    timestamps = [as_utc(t) for t in timestamps] if isinstance(timestamps, (list, tuple)) else as_utc(timestamps)
    return _native.stamp(entries, start_index=start_index, timestamps=timestamps, index=index, timestamp=timestamp)


def find_position_by_time(entries: Any, time: Millis) -> _native.Position:
    """Pulsar's seek by timestamp: the entry after the newest entry whose
    broker timestamp (else publish time) is before ``time`` (ms since the
    epoch, or a datetime; a naive datetime is UTC); the first entry when none
    is. A binary search reading O(log n) entries' metadata."""
    return _native.find_position_by_time(entries, as_utc(time))
