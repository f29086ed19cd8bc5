"""Compaction on Spark (PIP-215, PIP-429) and its outputs: compacted-ledger
records and the compacted view."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import _compaction as in_process
from .. import _native
from ._arrow import (
    EMPTY_ENTRIES,
    compacted_schema,
    entry_frame,
    from_spark,
    map_batches,
    run_pass,
    spark_schema,
    with_partition,
)
from ._chunks import reassemble_chunks
from ._decode import decode
from ._strategic import compact_with_strategy
from ._transactions import aborted_transactions


def compact(
    df: DataFrame,
    *,
    order: str | None = None,
    strategy: Any = None,
    retain_null_key: bool | None = None,
    verify_checksum: bool | None = None,
    max_uncompressed_size: int | None = None,
) -> DataFrame:
    """Compacts a DataFrame of entries as :func:`pulsar_entries.compact` does,
    with the same result, rows in any order.

    Phase one decodes in ``mapInArrow`` into one candidate row per keyed
    message; Spark shuffles candidates by ``(partition, key)`` and sorts them in
    topic order, and the core folds each key to its survivor. Phase two groups
    survivors per original entry and rebuilds each entry that keeps something.
    Memory per task is bounded by one Arrow batch plus one key's candidates.
    The result is in topic order.
    """
    if strategy is not None:
        return compact_with_strategy(
            df,
            strategy,
            order=order,
            retain_null_key=retain_null_key,
            verify_checksum=verify_checksum,
            max_uncompressed_size=max_uncompressed_size,
        )
    # Building the options checks them (an OptionsError); they travel to the executors pickled.
    options = _native.CompactionOptions(
        order=order,
        retain_null_key=retain_null_key,
        verify_checksum=verify_checksum,
        max_uncompressed_size=max_uncompressed_size,
    )
    entries = entry_frame(df)
    has_partition = "partition" in entries.columns
    entries = with_partition(entries)

    candidates = partial(
        _native.compaction_candidates, options=options, aborted_transactions=aborted_transactions(entries)
    )
    cands = entries.mapInArrow(map_batches(candidates), spark_schema(candidates(EMPTY_ENTRIES).schema))
    survivor_schema = _native.SurvivorFolder(order=options.order).finish().schema

    def fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from run_pass(_native.SurvivorFolder(order=options.order), batches)

    keyed = (
        cands.filter(F.col("key").isNotNull())
        .repartition("partition", "key")
        .sortWithinPartitions("partition", "key", "ledger_id", "entry_id", "batch_index")
        .mapInArrow(fold, spark_schema(survivor_schema))
    )
    keyless = cands.filter(F.col("key").isNull()).select(*survivor_schema.names)
    retained = (
        keyed.unionByName(keyless)
        .groupBy("partition", "ledger_id", "entry_id")
        .agg(F.sort_array(F.collect_set("batch_index")).alias("retained"))
    )
    out_schema = compacted_schema(has_partition)
    rebuild = partial(_native.rebuild_entries, options=options)
    joined = entries.join(retained, ["partition", "ledger_id", "entry_id"], "inner")
    rebuilt = joined.select("ledger_id", "entry_id", "data", "partition", "retained").mapInArrow(
        map_batches(rebuild, out_schema.names), spark_schema(out_schema)
    )
    # Compacted entries in topic order, as a compacted ledger holds them.
    return rebuilt.orderBy(*([c for c in ("partition",) if has_partition] + ["ledger_id", "entry_id"]))


def last_message_position(df: DataFrame) -> in_process.MessagePosition:
    """The last-message position of compacted entries (PIP-429), as
    :func:`pulsar_entries.last_message_position`: only the last entry is read."""
    cols = [c for c in ("ledger_id", "entry_id", "data", "partition") if c in df.columns]
    order = [_desc(c) for c in ("partition", "ledger_id", "entry_id") if c in cols]
    last = df.select(*cols).orderBy(*order).limit(1).toArrow()
    return in_process.last_message_position(last)


def _desc(name: str) -> Any:
    """``name`` descending (a column expression)."""
    return F.col(name).desc()


def to_ledger_records(df: DataFrame) -> DataFrame:
    """Each compacted entry in Pulsar's compacted-ledger record form,
    ``[u32 idLen][MessageIdData][u32 len][entry]``, as
    :func:`pulsar_entries.to_ledger_records`: ``ledger_id``, ``entry_id``, ``record``."""
    cols = [c for c in ("ledger_id", "entry_id", "partition", "data") if c in df.columns]
    schema = _native.to_ledger_records(EMPTY_ENTRIES).schema
    return df.select(*cols).mapInArrow(map_batches(_records_of_spark_batch), spark_schema(schema))


def _records_of_spark_batch(batch: pa.RecordBatch) -> pa.Table:
    return _native.to_ledger_records(from_spark(batch))


def compacted_view(df: DataFrame) -> DataFrame:
    """The key → latest value view of entries (typically a compaction's
    output), as :class:`pulsar_entries.TableView` gives it with the default
    strategy: ``key``, ``value``, ``ledger_id``, ``entry_id``, ``batch_index``,
    ``publish_time`` (ms), sorted by key. Chunked messages are reassembled
    first; an empty or null value deletes its key; entries in another format
    (KoP's Kafka batches) are not Pulsar messages and are left out."""
    messages = reassemble_chunks(decode(df), max_pending=None, expire_after_ms=None)
    live = messages.filter(
        F.col("error").isNull()
        & F.col("key").isNotNull()
        & ~F.coalesce(F.col("compacted_out"), F.lit(False))
        & F.col("marker_type").isNull()
        # Pulsar messages only: records a payload processor (KoP) decoded are not
        # what a Pulsar TableView reads.
        & (F.col("processor") == "pulsar")
        & (F.col("status").isNull() | (F.col("status") == "complete"))
    )
    last = F.max_by(
        F.struct("value", "ledger_id", "entry_id", "batch_index", "publish_time"),
        F.struct("partition", "ledger_id", "entry_id", "batch_index"),
    )
    return (
        live.groupBy("key")
        .agg(last.alias("m"))
        .filter(F.col("m.value").isNotNull() & (F.length("m.value") > 0))
        .select(
            "key",
            "m.value",
            "m.ledger_id",
            "m.entry_id",
            "m.batch_index",
            F.unix_millis("m.publish_time").alias("publish_time"),
        )
        .orderBy("key")
    )
