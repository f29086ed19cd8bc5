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

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from . import _native
from .strategies import native_strategy

_POSITION = ("partition", "ledger_id", "entry_id")


def compact_with_strategy(
    df: Any,
    strategy: Any,
    *,
    order: str = "publish",
    retain_null_key: bool = False,
    verify_checksum: bool = True,
    max_uncompressed_size: int = _native.DEFAULT_MAX_UNCOMPRESSED_SIZE,
) -> Any:
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
    from pyspark import cloudpickle
    from pyspark.sql import functions as F

    from . import spark as pes

    opts: dict[str, Any] = dict(
        order=order,
        retain_null_key=retain_null_key,
        verify_checksum=verify_checksum,
        max_uncompressed_size=max_uncompressed_size,
    )
    # The in-process errors, on the driver: a bad order, a non-strategy.
    native_strategy(strategy)
    _native.StrategicPartitionPass(**opts)
    try:
        shipped = cloudpickle.dumps(strategy)
    except Exception as e:
        raise TypeError(
            f"the strategy {type(strategy).__name__} cannot be pickled to run on Spark executors: {e}"
        ) from e

    entries = pes._entry_frame(df)
    has_partition = "partition" in entries.columns
    if not has_partition:
        entries = entries.withColumn("partition", F.lit(-1).cast("int"))
    ordered, expected = _topic_ranges(entries)

    row_schema = _native.StrategicPartitionPass(**opts).finish().schema
    spark_rows = pes.spark_schema(row_schema)

    def partition_pass(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from pulsar_entries import _native as native
        from pulsar_entries.spark import _track_ranges, run_pass

        ctx = TaskContext.get()
        assert ctx is not None, "runs inside a Spark task"
        sp = ctx.partitionId()
        seen: dict[int, list] = {}

        def tracked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                if expected is not None:
                    _track_ranges(batch, seen)
                yield batch

        yield from run_pass(native.StrategicPartitionPass(**opts), tracked(batches))
        if expected is not None:
            got = {k: (tuple(v[0]), tuple(v[1])) for k, v in seen.items()}
            if got != expected.get(sp, {}):
                raise RuntimeError(
                    f"Spark partition {sp} holds positions {got}, not the planned {expected.get(sp, {})}: "
                    "the input's partitioning changed between passes (persist the input DataFrame)"
                )

    def fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pickle

        from pulsar_entries import _native as native
        from pulsar_entries.spark import run_pass
        from pulsar_entries.strategies import native_strategy as to_native

        yield from run_pass(native.StrategicFolder(to_native(pickle.loads(shipped)), **opts), batches)

    rows = ordered.mapInArrow(partition_pass, spark_rows)
    # Plan rows have no key: spread them by entry (the fold passes them through).
    spread = F.coalesce(F.col("key"), F.concat_ws(":", F.lit("\0entry"), "ledger_id", "entry_id"))
    plans = (
        rows.repartition("partition", spread)
        .sortWithinPartitions("partition", "key", "ledger_id", "entry_id", "batch_index", "kind")
        .mapInArrow(fold, spark_rows)
    )
    per_entry = plans.groupBy(*_POSITION).agg(
        F.max("note").alias("note"),
        F.collect_list(F.when(F.col("note").isNull(), F.struct("batch_index", "value"))).alias("slots"),
    )
    out_schema = pa.schema(
        [pa.field("ledger_id", pa.int64(), False), pa.field("entry_id", pa.int64(), False)]
        + ([pa.field("partition", pa.int32(), False)] if has_partition else [])
        + [pa.field("data", pa.binary()), pa.field("error", pa.string())]
    )
    names = out_schema.names
    rebuild_opts: dict[str, Any] = dict(verify_checksum=verify_checksum, max_uncompressed_size=max_uncompressed_size)

    def rebuild(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as native
        from pulsar_entries.spark import _is_large, conform

        for batch in batches:
            large = _is_large(batch)
            for out in native.strategic_rebuild(batch, **rebuild_opts).to_batches():
                yield conform(out.select(names), large)

    joined = entries.join(per_entry, list(_POSITION), "inner")
    rebuilt = joined.select("ledger_id", "entry_id", "partition", "data", "note", "slots").mapInArrow(
        rebuild, pes.spark_schema(out_schema)
    )
    # Compacted entries in topic order, as a compacted ledger holds them.
    return rebuilt.orderBy(*([c for c in ("partition",) if has_partition] + ["ledger_id", "entry_id"]))


def _topic_ranges(entries: Any) -> tuple[Any, dict[int, dict[int, tuple]] | None]:
    """The entries sorted in topic order within Spark partitions that each hold
    contiguous ranges of the topic partitions, and the ranges each Spark
    partition must hold (``None`` when the entries were range-partitioned
    here: any range partitioning is right)."""
    from . import spark as pes

    ordered = entries.sortWithinPartitions(*_POSITION)
    by_topic = pes._contiguous_ranges(pes._partition_ranges(ordered))
    if by_topic is None:
        n = max(entries.rdd.getNumPartitions(), 1)
        return entries.repartitionByRange(n, *_POSITION).sortWithinPartitions(*_POSITION), None
    expected: dict[int, dict[int, tuple]] = {}
    for p, parts in by_topic.items():
        for lo, hi, sp, _ in parts:
            expected.setdefault(sp, {})[p] = (lo, hi)
    return ordered, expected


__all__ = ["compact_with_strategy"]
