"""One rule for times everywhere: a naive ``datetime`` is UTC, as Pulsar's
timestamps are (milliseconds since the epoch, UTC). In process, on Spark and in
the CLI alike; an aware ``datetime`` keeps its zone."""

from __future__ import annotations

import datetime as dt
import math
import operator
from typing import Any, Union

#: Milliseconds since the epoch, or a datetime (naive: UTC).
Millis = Union[int, dt.datetime]


def as_utc(value: Any) -> Any:
    """``value`` with UTC attached when it is a naive datetime; anything else unchanged."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value


def to_millis(value: Millis) -> int:
    """Milliseconds since the epoch of an int or a datetime (naive: UTC),
    rounded half away from zero as the core rounds."""
    if isinstance(value, dt.datetime):
        ms = as_utc(value).timestamp() * 1000
        return int(math.copysign(math.floor(abs(ms) + 0.5), ms))
    return int(value)


def millis(value: Any) -> int:
    """Milliseconds since the epoch of an int or of anything with ``.timestamp()`` (a datetime;
    naive: UTC), rounded as :func:`to_millis` rounds; a TypeError for anything else."""
    if isinstance(value, dt.datetime):
        return to_millis(value)
    if hasattr(value, "timestamp") and not isinstance(value, int):
        ms = value.timestamp() * 1000
        return int(math.copysign(math.floor(abs(ms) + 0.5), ms))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("expected an int (milliseconds) or a datetime") from None


def parse_time(text: str) -> int:
    """Milliseconds since the epoch from digits or ISO-8601 (naive: UTC).

    Raises ``ValueError`` for anything else."""
    if text.lstrip("-").isdigit():
        return int(text)
    return to_millis(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
