"""Chunked-message reassembly (PIP-107) on Spark."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import _native
from ..chunks import _DEFAULTS, ROLE_COLUMN, WATERMARK_COLUMN, reassembly_options
from ._arrow import (
    conform,
    from_spark,
    from_spark_schema,
    is_large,
    null_columns,
    spark_arrow_schema,
    spark_schema,
    with_partition,
)
from ._ranges import (
    check_ranges,
    partition_ranges,
    plan_seeds,
    range_partitioned,
    task_partition,
    topic_order,
    track_ranges,
)


def reassemble_chunks(
    df: DataFrame,
    *,
    max_pending: int | None = _DEFAULTS.max_pending,
    expire_after_ms: int | None = _DEFAULTS.expire_after_ms,
    max_message_size: int | None = None,
) -> DataFrame:
    """Rebuilds chunked messages (PIP-107) from decoded messages, as
    :func:`pulsar_entries.reassemble_chunks` does, with the same rows (in any order).

    Each Spark partition is reassembled on its own, in topic order, wherever a
    message is whole in it; only the chunks of messages that cross a partition
    boundary (and restart markers) are shuffled, keyed by ``(partition,
    uuid)``, and finished there. A small aggregate first gives each partition
    the stream time before it (expiry is by publish-time stream time). When the
    partitions are not contiguous ranges of the topic (e.g. after a shuffle),
    the input is first range-partitioned by position.

    The partition pass's output is persisted (memory and disk) so that it runs
    once for both branches; it stays cached until Spark evicts it or
    ``spark.catalog.clearCache()``.
    """
    df = with_partition(df)
    # Building the options checks them (an OptionsError); they travel to the executors pickled.
    options = reassembly_options(max_pending, expire_after_ms, max_message_size)
    ordered = topic_order(df)
    plan = plan_seeds(partition_ranges(ordered, with_publish_time=True))
    if plan is None:
        ordered = topic_order(range_partitioned(df)).persist(StorageLevel.MEMORY_AND_DISK)
        plan = plan_seeds(partition_ranges(ordered, with_publish_time=True))
        if plan is None:  # cannot happen: range partitions are disjoint
            raise RuntimeError("range partitioning did not give disjoint topic ranges")
    seeds, finals, ranges = plan

    empty = pa.RecordBatch.from_pylist([], schema=from_spark_schema(ordered))
    out_schema = _native.reassemble_chunks(empty).schema
    bookkeeping = [pa.field(WATERMARK_COLUMN, pa.int64()), pa.field(ROLE_COLUMN, pa.string())]
    left_schema = pa.schema(list(empty.schema) + bookkeeping)
    tagged_schema = pa.schema(list(out_schema) + bookkeeping)

    def partition_pass(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sp = task_partition()
        r = None
        large = False
        seen: dict[int, list] = {}
        for batch in batches:
            large = is_large(batch)
            batch = from_spark(batch)
            track_ranges(batch, seen)
            if r is None:
                r = _native.PartitionReassembler(batch.schema, seeds=seeds.get(sp, {}), options=options)
            yield from tagged_batches(r.push(batch), tagged_schema, large)
        if r is not None:
            yield from tagged_batches(r.finish(), tagged_schema, large)
        check_ranges(sp, seen, ranges.get(sp, {}))

    tagged = ordered.mapInArrow(partition_pass, spark_schema(tagged_schema)).persist(StorageLevel.MEMORY_AND_DISK)
    out_names = out_schema.names
    done = tagged.filter(F.col(ROLE_COLUMN).isNull()).select(*out_names)

    def finish(table: pa.Table) -> pa.Table:
        large = is_large(table)
        batches = [from_spark(b) for b in table.to_batches()]
        if not batches:
            return spark_arrow_schema(out_schema, large).empty_table()
        result = _native.finish_leftovers(pa.Table.from_batches(batches), final_watermarks=finals, options=options)
        target = spark_arrow_schema(out_schema, large)
        return pa.Table.from_batches([null_columns(b, target) for b in result.to_batches()], schema=target)

    leftovers = tagged.filter(F.col(ROLE_COLUMN).isNotNull()).select(*left_schema.names)
    finished = leftovers.groupBy("partition", "uuid").applyInArrow(finish, spark_schema(out_schema))
    return done.unionByName(finished)


def tagged_batches(parts: tuple[pa.Table, pa.Table], schema: pa.Schema, large: bool) -> Iterator[pa.RecordBatch]:
    """A reassembler's output, messages done and leftovers alike, in ``schema``
    (the two kinds' columns, bookkeeping included)."""
    done, leftovers = parts
    for b in done.to_batches():
        yield conform(null_columns(b, schema), large)
    for b in leftovers.to_batches():
        yield conform(null_columns(b, schema), large)
