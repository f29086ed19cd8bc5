"""Arrow between Spark and the core.

Spark's Arrow schemas differ from ours in these ways, handled here:
- Spark timestamps are microseconds, ours milliseconds (times too: Spark's
  TIME is microseconds); Avro ``fixed`` is plain binary to Spark;
- Spark has no unsigned integers (protobuf's uint32/fixed32, uint64/fixed64):
  uint8/16/32 widen to the next signed type, uint64 becomes decimal(20, 0);
- with ``spark.sql.execution.arrow.useLargeVarTypes`` Spark exchanges
  ``large_binary`` / ``large_string``; the variant is read off the input batch
  (Spark 4.3 takes them back; 4.2 wants the regular ones back).

Also the shapes every pipeline shares: the entry columns, the optional
``partition`` column, and the compacted-entry schema."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Callable

import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ._workers import use_this_python

ENTRY_COLUMNS = ("ledger_id", "entry_id", "data")

EMPTY_ENTRIES = pa.table(
    {"ledger_id": pa.array([], pa.int64()), "entry_id": pa.array([], pa.int64()), "data": pa.array([], pa.binary())}
)


def _spark_arrow_type(t: pa.DataType, large: bool) -> pa.DataType:
    """The Arrow type Spark exchanges for a column of our type ``t``."""
    if pa.types.is_timestamp(t):
        # A typed column's local timestamp (Avro local-timestamp-*) stays zone-less: TIMESTAMP_NTZ.
        return pa.timestamp("us", tz=None if t.tz is None else "UTC")
    if pa.types.is_time(t):
        return pa.time64("us")
    if pa.types.is_unsigned_integer(t):
        # Every value fits: the next wider signed type, or 20 decimal digits for uint64.
        return {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(t.bit_width, pa.decimal128(20, 0))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.large_binary() if large else pa.binary()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.large_string() if large else pa.string()
    if pa.types.is_map(t):
        return pa.map_(_spark_arrow_type(t.key_type, large), _spark_arrow_type(t.item_type, large))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_spark_arrow_type(t.value_type, large)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_spark_arrow_type(t.field(i).type, large)) for i in range(t.num_fields)])
    return t


def spark_arrow_schema(schema: pa.Schema, large: bool) -> pa.Schema:
    return pa.schema([pa.field(f.name, _spark_arrow_type(f.type, large), f.nullable) for f in schema])


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of one of our Arrow schemas. Every pipeline asks for one before it hands
    Spark a Python function, so this is also where a local session's workers are pointed at this
    interpreter (:func:`._workers.use_this_python`)."""
    use_this_python()
    return from_arrow_schema(spark_arrow_schema(schema, large=False))


def conform(batch: pa.RecordBatch, large: bool) -> pa.RecordBatch:
    """Casts one of our batches to the Arrow types Spark expects back."""
    target = spark_arrow_schema(batch.schema, large)
    if batch.schema.equals(target):
        return batch
    return batch.cast(target)


#: Whether Spark takes large var types back from a stage that sends them: 4.3 does; 4.2 checks a
#: stage's output against the regular types whatever it sends (``RESULT_COLUMN_TYPES_MISMATCH``).
LARGE_BACK = tuple(int(x) for x in re.findall(r"\d+", pyspark.__version__)[:2]) >= (4, 3)


def is_large(batch: pa.RecordBatch | pa.Table) -> bool:
    """Whether Spark takes large var types back from this stage (read off its input)."""
    return LARGE_BACK and any(
        pa.types.is_large_binary(f.type) or pa.types.is_large_string(f.type) for f in batch.schema
    )


def run_pass(core_pass: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Feeds a task's batches to a stateful core pass (``push(batch)`` and
    ``finish()``, each giving a table) and conforms its output for Spark."""
    large = False
    for batch in batches:
        large = is_large(batch)
        for out in core_pass.push(batch).to_batches():
            yield conform(out, large)
    for out in core_pass.finish().to_batches():
        yield conform(out, large)


def from_spark(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A Spark Arrow batch in our types: timestamps back to milliseconds (the
    core reads them as integers), large var types to regular ones."""
    fields = []
    for f in batch.schema:
        t = f.type
        if pa.types.is_timestamp(t):
            t = pa.timestamp("ms", tz="UTC")
        elif pa.types.is_large_binary(t):
            t = pa.binary()
        elif pa.types.is_large_string(t):
            t = pa.string()
        fields.append(pa.field(f.name, t, f.nullable))
    target = pa.schema(fields)
    return batch if batch.schema.equals(target) else batch.cast(target, safe=False)


def from_spark_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema (our types) of a DataFrame's rows."""
    empty = pa.RecordBatch.from_pylist([], schema=to_arrow_schema(df.schema, timezone="UTC"))
    return from_spark(empty).schema


def null_columns(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns, those it lacks filled with nulls."""
    n = batch.num_rows
    cols = [batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def entry_frame(df: DataFrame, carry: bool = False) -> DataFrame:
    """The entry columns of ``df`` (and ``partition`` when it has one); with
    ``carry``, every other column after them, ``error`` first."""
    missing = [c for c in ENTRY_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame needs columns {', '.join(ENTRY_COLUMNS)}; missing {', '.join(missing)}")
    twice = sorted({c for c in df.columns if df.columns.count(c) > 1})
    if twice:
        raise ValueError(f"the DataFrame has more than one column named {', '.join(repr(c) for c in twice)}")
    cols = list(ENTRY_COLUMNS) + (["partition"] if "partition" in df.columns else [])
    if carry:
        cols += (["error"] if "error" in df.columns else []) + [c for c in df.columns if c not in cols and c != "error"]
    return df.select(*cols)


def with_partition(df: DataFrame) -> DataFrame:
    """``df`` with a ``partition`` column: -1, a non-partitioned topic, when it has none."""
    if "partition" in df.columns:
        return df
    return df.withColumn("partition", F.lit(-1).cast("int"))


def compacted_schema(has_partition: bool) -> pa.Schema:
    """The compacted entries' schema: ``partition`` exactly when the input had
    it, as in-process."""
    return pa.schema(
        [pa.field("ledger_id", pa.int64(), False), pa.field("entry_id", pa.int64(), False)]
        + ([pa.field("partition", pa.int32(), False)] if has_partition else [])
        + [pa.field("data", pa.binary()), pa.field("error", pa.string())]
    )


def map_batches(
    fn: Callable[[pa.RecordBatch], pa.Table], names: list[str] | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: ``fn`` (a core function of one batch) on each
    batch of a task, keeping the columns ``names`` (all when None), conformed
    for Spark."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            large = is_large(batch)
            out = fn(batch)
            if names is not None:
                out = out.select(names)
            for b in out.to_batches():
                yield conform(b, large)

    return run
