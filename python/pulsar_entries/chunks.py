"""Chunked-message reassembly, in process and in two passes for Spark.

``reassemble_chunks(messages)`` rebuilds whole messages from decoded rows in
topic order (see the README). For a partitioned input (Spark), chunks of one
message may sit in different partitions; two pure functions split the work:

1. ``reassemble_partition(rows, seeds=...)`` on each partition (a contiguous
   range of each topic partition, in topic order): returns the final rows it
   can decide on its own, and the *leftovers*: chunk rows of messages still
   open at the partition's end or continuing an earlier partition's message,
   plus value-less ``restart`` markers, with ``_watermark`` and ``_role``
   columns. ``seeds`` maps each topic partition to the largest
   ``publish_time`` in the partitions before this one.
2. ``finish_leftovers(leftovers, final_watermarks=...)`` on the leftovers
   grouped by ``(partition, uuid)`` (any grouping that keeps a uuid's rows
   together works: groups are independent). ``final_watermarks`` maps each
   topic partition to its largest ``publish_time`` overall.

The union of both results equals ``reassemble_chunks`` over the whole input
(as a set of rows; order differs), except in one case: a message pending
across a partition boundary that the in-process pass would evict because
``max_pending`` other messages started after it. The partition pass is exact
for every message that starts and ends in its partition, evictions included.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

from . import _native
from ._native import ReassemblyOptions

WATERMARK_COLUMN = "_watermark"
ROLE_COLUMN = "_role"
STATUSES = ("complete", "incomplete", "expired", "evicted", "duplicate")

# ``None`` is a value of ``max_pending`` (unlimited) and ``expire_after_ms`` (never): their keywords
# default to the core's defaults, read here; ``max_message_size=None`` means the core's default.
_DEFAULTS = ReassemblyOptions()


def reassembly_options(
    max_pending: int | None = _DEFAULTS.max_pending,
    expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
    max_message_size: int | None = None,
) -> ReassemblyOptions:
    """The limits as one checked object (an ``OptionsError`` names a bad one)."""
    return ReassemblyOptions(
        max_pending=max_pending, expire_after_ms=expire_after_ms, max_message_size=max_message_size
    )


def reassemble_chunks(
    messages: Any,
    *,
    max_pending: int | None = _DEFAULTS.max_pending,
    expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
    max_message_size: int | None = None,
) -> pa.Table:
    """Rebuilds chunked messages from decoded rows (the output of ``decode``, in topic order); see the
    README's "Chunked messages" for the statuses and the limits."""
    options = reassembly_options(max_pending, expire_after_ms, max_message_size)
    return _native.reassemble_chunks(messages, options=options)


def reassemble_partition(
    messages: Any,
    *,
    seeds: dict[int, int] | None = None,
    max_pending: int | None = _DEFAULTS.max_pending,
    expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
    max_message_size: int | None = None,
) -> tuple[pa.Table, pa.Table]:
    """The partition pass of a distributed reassembly: ``(done, leftovers)`` (see above)."""
    options = reassembly_options(max_pending, expire_after_ms, max_message_size)
    return _native.reassemble_partition(messages, seeds=seeds, options=options)


class PartitionReassembler:
    """The partition pass, streaming: feed a partition's decoded batches in topic order; memory is the
    pending messages' chunks, not the partition."""

    def __init__(
        self,
        schema: pa.Schema,
        *,
        seeds: dict[int, int] | None = None,
        max_pending: int | None = _DEFAULTS.max_pending,
        expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
        max_message_size: int | None = None,
    ) -> None:
        options = reassembly_options(max_pending, expire_after_ms, max_message_size)
        self._pass = _native.PartitionReassembler(schema, seeds=seeds, options=options)

    def push(self, batch: Any) -> tuple[pa.Table, pa.Table]:
        """``(done, leftovers)`` decided while reading ``batch``."""
        return self._pass.push(batch)

    def finish(self) -> tuple[pa.Table, pa.Table]:
        """``(done, leftovers)`` at the end of the partition."""
        return self._pass.finish()


def finish_leftovers(
    leftovers: Any,
    *,
    final_watermarks: dict[int, int] | None = None,
    max_pending: int | None = _DEFAULTS.max_pending,
    expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
    max_message_size: int | None = None,
) -> pa.Table:
    """Decides the messages handed on by ``reassemble_partition`` (see above)."""
    options = reassembly_options(max_pending, expire_after_ms, max_message_size)
    return _native.finish_leftovers(leftovers, final_watermarks=final_watermarks, options=options)


__all__ = [
    "ROLE_COLUMN",
    "STATUSES",
    "WATERMARK_COLUMN",
    "PartitionReassembler",
    "ReassemblyOptions",
    "finish_leftovers",
    "reassemble_chunks",
    "reassemble_partition",
    "reassembly_options",
]
