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

from ._native import PartitionReassembler, finish_leftovers, reassemble_chunks, reassemble_partition

WATERMARK_COLUMN = "_watermark"
ROLE_COLUMN = "_role"
STATUSES = ("complete", "incomplete", "expired", "evicted", "duplicate")

__all__ = [
    "ROLE_COLUMN",
    "STATUSES",
    "WATERMARK_COLUMN",
    "PartitionReassembler",
    "finish_leftovers",
    "reassemble_chunks",
    "reassemble_partition",
]
