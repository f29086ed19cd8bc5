"""Aborted transactions over a DataFrame of entries, for the compactors."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from .. import _native
from ._arrow import from_spark, spark_schema


def aborted_transactions(df: DataFrame) -> list[tuple[int, int]]:
    """The transactions that ``TXN_ABORT`` markers among the entries abort, as
    ``(most, least)`` id bits: a pass that reads only each entry's metadata
    and brings the (few) ids to the driver. The compactors skip their
    messages, as the broker's do; the markers come after the messages, so no
    single pass in topic order could skip them itself."""
    mask = (1 << 64) - 1

    def signed(v: int) -> int:
        return v - (1 << 64) if v >= 1 << 63 else v

    def find(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found = _native.aborted_transactions(from_spark(batch))
            yield pa.RecordBatch.from_pydict(
                {"most": [signed(m) for m, _ in found], "least": [signed(x) for _, x in found]},
                schema=_TXN_SCHEMA,
            )

    rows = df.select("ledger_id", "entry_id", "data").mapInArrow(find, spark_schema(_TXN_SCHEMA)).distinct().collect()
    return sorted((r["most"] & mask, r["least"] & mask) for r in rows)


_TXN_SCHEMA = pa.schema([pa.field("most", pa.int64(), False), pa.field("least", pa.int64(), False)])
