"""Spark partitions as ranges of topic positions.

Passes that carry state across entries (chunk reassembly, strategic
compaction) need each Spark partition to hold a contiguous range of each topic
partition, in topic order. A small aggregate collected to the driver says
whether they do; each task then checks that it saw the planned range."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

POSITION = ("partition", "ledger_id", "entry_id")


def topic_order(df: DataFrame) -> DataFrame:
    """Decoded messages in topic order within each Spark partition."""
    return df.sortWithinPartitions(*POSITION, "batch_index")


def partition_ranges(ordered: DataFrame, with_publish_time: bool = False) -> list[Any]:
    """Per Spark partition and topic partition: first and last position (and
    the largest publish time, in µs), a small aggregate collected to the driver."""
    pos = F.struct("ledger_id", "entry_id")
    aggs = [F.min(pos).alias("lo"), F.max(pos).alias("hi")]
    aggs.append(
        F.max(F.unix_micros("publish_time")).alias("t")
        if with_publish_time
        else F.max(F.lit(None).cast("long")).alias("t")
    )
    return (
        ordered.select(F.spark_partition_id().alias("sp"), *POSITION, *(["publish_time"] if with_publish_time else []))
        .groupBy("sp", "partition")
        .agg(*aggs)
        .collect()
    )


def contiguous_ranges(rows: list[Any]) -> dict[int, list[tuple]] | None:
    """Per topic partition, its ``(lo, hi, spark partition, max publish time ms)``
    ranges in position order; None when two Spark partitions' ranges of a topic
    partition overlap (the input is then not a set of contiguous topic ranges)."""
    by_topic: dict[int, list[tuple]] = {}
    for r in rows:
        lo, hi = (r["lo"]["ledger_id"], r["lo"]["entry_id"]), (r["hi"]["ledger_id"], r["hi"]["entry_id"])
        t = r["t"] // 1000 if r["t"] is not None else None  # Spark timestamps are microseconds
        by_topic.setdefault(r["partition"], []).append((lo, hi, r["sp"], t))
    for parts in by_topic.values():
        parts.sort()
        if any(a[1] >= b[0] for a, b in zip(parts, parts[1:])):
            return None
    return by_topic


def expected_ranges(by_topic: dict[int, list[tuple]]) -> dict[int, dict[int, tuple]]:
    """The ``(lo, hi)`` range of each topic partition that each Spark partition
    holds, from :func:`contiguous_ranges`."""
    expected: dict[int, dict[int, tuple]] = {}
    for p, parts in by_topic.items():
        for lo, hi, sp, _ in parts:
            expected.setdefault(sp, {})[p] = (lo, hi)
    return expected


def range_partitioned(df: DataFrame) -> DataFrame:
    """``df`` range-partitioned by position, as many partitions as it had:
    each Spark partition then holds contiguous topic ranges."""
    return df.repartitionByRange(max(df.rdd.getNumPartitions(), 1), *POSITION)


def plan_seeds(
    rows: list[Any],
) -> tuple[dict[int, dict[int, int]], dict[int, int], dict[int, dict[int, tuple]]] | None:
    """Seeds per Spark partition (the stream time before its range, per topic
    partition), final watermarks, and each Spark partition's expected ranges;
    None when the ranges are not contiguous."""
    by_topic = contiguous_ranges(rows)
    if by_topic is None:
        return None
    seeds: dict[int, dict[int, int]] = {}
    finals: dict[int, int] = {}
    for p, parts in by_topic.items():
        clock: int | None = None
        for _, _, sp, t in parts:
            if clock is not None:
                seeds.setdefault(sp, {})[p] = clock
            if t is not None:
                clock = t if clock is None else max(clock, t)
        if clock is not None:
            finals[p] = clock
    return seeds, finals, expected_ranges(by_topic)


def track_ranges(batch: pa.RecordBatch, seen: dict[int, list]) -> None:
    """Extends ``seen`` (topic partition → [first, last] position) with a batch
    sorted by position: each topic partition is one run of rows."""
    if batch.num_rows == 0:
        return
    runs = pc.run_end_encode(batch.column("partition"))
    ends = runs.run_ends.to_pylist()
    ledgers, entries = batch.column("ledger_id"), batch.column("entry_id")
    start = 0
    for p, end in zip(runs.values.to_pylist(), ends):
        lo = (ledgers[start].as_py(), entries[start].as_py())
        hi = (ledgers[end - 1].as_py(), entries[end - 1].as_py())
        cur = seen.get(p)
        if cur is None:
            seen[p] = [lo, hi]
        else:
            cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
        start = end


def task_partition() -> int:
    """The Spark partition this task reads."""
    ctx = TaskContext.get()
    assert ctx is not None, "runs inside a Spark task"
    return ctx.partitionId()


def check_ranges(sp: int, seen: dict[int, list], expected: dict[int, tuple]) -> None:
    """Fails the task when Spark partition ``sp`` held other positions than planned."""
    got = {p: (tuple(v[0]), tuple(v[1])) for p, v in seen.items()}
    if got != expected:
        raise RuntimeError(
            f"Spark partition {sp} holds positions {got}, not the planned {expected}: the input's "
            "partitioning changed between passes (persist the input DataFrame)"
        )
