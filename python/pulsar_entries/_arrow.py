"""Arrow helpers below every layer."""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa


def as_table(data: Any) -> pa.Table:
    """A table from what the core returns (a pyarrow Table or RecordBatch). Not ``pa.table(data)``:
    it asks pandas whether ``data`` is a DataFrame first, which imports pandas when it is installed
    (about 40 MiB of memory that reading a topic does not need)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return pa.table(data)


def repeat_int32(value: int, n: int) -> pa.Array:
    """``n`` copies of ``value`` as an int32 array (built from its buffer: ``pa.array`` and
    ``pa.scalar`` would ask pandas first, see :func:`as_table`)."""
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(struct.pack("<i", value) * n)])


def repeat_bool(value: bool, n: int) -> pa.Array:
    """``n`` copies of ``value`` as a boolean array (from its bitmap, as :func:`repeat_int32`)."""
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer((b"\xff" if value else b"\x00") * ((n + 7) // 8))])
