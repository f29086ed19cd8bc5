"""Strategic compaction (PIP-215) on Spark: see :func:`compact_with_strategy`.

The stages are the Rust core's ``compaction::strategic_distributed`` blocks:

1. a partition pass (``mapInArrow`` over each Spark partition, in topic
   order) reads complete messages as the in-process compactor does and emits
   keyed messages with their values, per-entry plans (kept whole with a note,
   retained key-less slots), and the chunks of chunked messages that cross
   the partition's boundary (with restart markers);
2. a shuffle by ``(partition, key)`` sorted in topic order, where the core
   finishes those chunked messages and folds each key with the strategy;
3. plans grouped per original entry, joined with the entries, and every
   entry that keeps something rebuilt by the in-process phase two.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import _native
from ..strategies import native_strategy
from ._arrow import compacted_schema, entry_frame, map_batches, run_pass, spark_schema, with_partition
from ._ranges import (
    POSITION,
    check_ranges,
    contiguous_ranges,
    expected_ranges,
    partition_ranges,
    range_partitioned,
    task_partition,
    track_ranges,
)
from ._transactions import aborted_transactions


def compact_with_strategy(
    df: DataFrame,
    strategy: Any,
    *,
    order: str | None = None,
    retain_null_key: bool | None = None,
    verify_checksum: bool | None = None,
    max_uncompressed_size: int | None = None,
) -> DataFrame:
    """Strategic compaction of a DataFrame of entries, with exactly the rows of
    ``pulsar_entries.compact(entries, strategy=strategy, ...)`` in topic order.

    Reached through ``pulsar_entries.spark.compact(df, strategy=...)``.

    The strategy runs on the executors: it is pickled (with Spark's
    cloudpickle) on the driver and unpickled in each task. The built-ins of
    :mod:`pulsar_entries.strategies` travel as they are. A strategy class of
    your own must be importable on the executors (a module installed there or
    shipped with ``spark.sparkContext.addPyFile``), or be defined in
    ``__main__`` / registered with ``cloudpickle.register_pickle_by_value`` so
    that it travels by value. Each key is folded in a separate task, one key at
    a time, so ``should_keep_left`` and ``merge`` must depend only on their
    arguments (a strategy that counts calls across keys sees other counts than
    in-process).

    Memory per task is one Arrow batch of entries plus the chunked messages
    still assembling in it, and, in the fold, one key's kept value and its
    chunked messages under assembly. The input may be partitioned in any way:
    when the Spark partitions are not contiguous ranges of each topic
    partition (e.g. after a hash repartition), it is range-partitioned by
    position first. Strategic compaction works in publishing order only;
    ``order="event_time"`` raises ``ValueError`` as in-process.
    """
    # Building the options checks them (an OptionsError); they travel to the executors pickled.
    options = _native.CompactionOptions(
        order=order,
        retain_null_key=retain_null_key,
        verify_checksum=verify_checksum,
        max_uncompressed_size=max_uncompressed_size,
    )
    # The in-process errors, on the driver: event-time order, a non-strategy.
    native_strategy(strategy)
    _native.StrategicPartitionPass(options=options)
    try:
        shipped = cloudpickle.dumps(strategy)
    except Exception as e:
        raise TypeError(
            f"the strategy {type(strategy).__name__} cannot be pickled to run on Spark executors: {e}"
        ) from e

    entries = entry_frame(df)
    has_partition = "partition" in entries.columns
    entries = with_partition(entries)
    ordered, expected = _topic_ranges(entries)
    # Skipped as the broker's strategic compactor never receives them.
    aborted = aborted_transactions(entries)

    row_schema = _native.StrategicPartitionPass(options=options).finish().schema
    spark_rows = spark_schema(row_schema)

    def partition_pass(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sp = task_partition()
        seen: dict[int, list] = {}

        def tracked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                if expected is not None:
                    track_ranges(batch, seen)
                yield batch

        yield from run_pass(
            _native.StrategicPartitionPass(options=options, aborted_transactions=aborted), tracked(batches)
        )
        if expected is not None:
            check_ranges(sp, seen, expected.get(sp, {}))

    def fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        folder = _native.StrategicFolder(native_strategy(pickle.loads(shipped)), options=options)
        yield from run_pass(folder, batches)

    rows = ordered.mapInArrow(partition_pass, spark_rows)
    # Plan rows have no key: spread them by entry (the fold passes them through).
    spread = F.coalesce(F.col("key"), F.concat_ws(":", F.lit("\0entry"), "ledger_id", "entry_id"))
    plans = (
        rows.repartition("partition", spread)
        .sortWithinPartitions("partition", "key", "ledger_id", "entry_id", "batch_index", "kind")
        .mapInArrow(fold, spark_rows)
    )
    per_entry = plans.groupBy(*POSITION).agg(
        F.max("note").alias("note"),
        F.collect_list(F.when(F.col("note").isNull(), F.struct("batch_index", "value"))).alias("slots"),
    )
    out_schema = compacted_schema(has_partition)
    rebuild = partial(_native.strategic_rebuild, options=options)
    joined = entries.join(per_entry, list(POSITION), "inner")
    rebuilt = joined.select("ledger_id", "entry_id", "partition", "data", "note", "slots").mapInArrow(
        map_batches(rebuild, out_schema.names), spark_schema(out_schema)
    )
    # Compacted entries in topic order, as a compacted ledger holds them.
    return rebuilt.orderBy(*([c for c in ("partition",) if has_partition] + ["ledger_id", "entry_id"]))


def _topic_ranges(entries: DataFrame) -> tuple[DataFrame, dict[int, dict[int, tuple]] | None]:
    """The entries sorted in topic order within Spark partitions that each hold
    contiguous ranges of the topic partitions, and the ranges each Spark
    partition must hold (``None`` when the entries were range-partitioned
    here: any range partitioning is right)."""
    ordered = entries.sortWithinPartitions(*POSITION)
    by_topic = contiguous_ranges(partition_ranges(ordered))
    if by_topic is None:
        return range_partitioned(entries).sortWithinPartitions(*POSITION), None
    return ordered, expected_ranges(by_topic)


__all__ = ["compact_with_strategy"]
