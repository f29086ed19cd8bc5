"""Seek by time (PIP-70) on Spark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import _native
from .._times import to_millis
from ._arrow import entry_frame, with_partition
from ._ranges import POSITION


def find_position_by_time(df: DataFrame, time: Any) -> DataFrame:
    """Pulsar's seek by timestamp on Spark: per topic partition, the entry after
    the last entry whose broker timestamp (else publish time) is before
    ``time`` (ms since the epoch, or a ``datetime``, UTC when naive); the first entry when none
    is, and the last entry id + 1 when all are — as
    :func:`pulsar_entries.find_position_by_time` answers for monotonic entry
    times (broker timestamps are). Reads only each entry's prefix and metadata.

    Returns one row per topic partition: ``partition``, ``ledger_id``,
    ``entry_id``.
    """
    t = to_millis(time)
    entries = with_partition(entry_frame(df))
    times_schema = "partition int, ledger_id long, entry_id long, t long"

    def entry_times(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            md = _native.entry_metadata(batch.column("data"))
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("partition").cast(pa.int32()),
                    batch.column("ledger_id"),
                    batch.column("entry_id"),
                    md.column("entry_timestamp").cast(pa.int64()).combine_chunks(),
                ],
                names=["partition", "ledger_id", "entry_id", "t"],
            )

    times = entries.select(*POSITION, "data").mapInArrow(entry_times, times_schema)
    pos = F.struct("ledger_id", "entry_id")
    bounds = times.groupBy("partition").agg(
        F.max(F.when(F.col("t") < F.lit(t), pos)).alias("before"), F.max(pos).alias("last")
    )
    after = (
        times.join(bounds.select("partition", "before"), "partition")
        .filter(F.col("before").isNull() | (pos > F.col("before")))
        .groupBy("partition")
        .agg(F.min(pos).alias("next"))
    )
    return (
        bounds.join(after, "partition", "left")
        .select(
            "partition",
            F.coalesce(F.col("next.ledger_id"), F.col("last.ledger_id")).alias("ledger_id"),
            F.coalesce(F.col("next.entry_id"), F.col("last.entry_id") + 1).alias("entry_id"),
        )
        .orderBy("partition")
    )
