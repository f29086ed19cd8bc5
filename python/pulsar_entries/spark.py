"""pulsar-entries on Spark.

Pipelines run the Rust core on Arrow record batches inside ``mapInArrow``, so
entries go from the JVM to the core and back without pandas in between.

Spark's Arrow schemas differ from ours in two ways, handled here:
- Spark timestamps are microseconds, ours milliseconds;
- with ``spark.sql.execution.arrow.useLargeVarTypes`` Spark exchanges
  ``large_binary`` / ``large_string``; the variant is read off the input batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from . import _native

ENTRY_COLUMNS = ("ledger_id", "entry_id", "data")


def _spark_arrow_type(t: pa.DataType, large: bool) -> pa.DataType:
    """The Arrow type Spark exchanges for a column of our type ``t``."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.large_binary() if large else pa.binary()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.large_string() if large else pa.string()
    if pa.types.is_map(t):
        return pa.map_(_spark_arrow_type(t.key_type, large), _spark_arrow_type(t.item_type, large))
    return t


def _spark_arrow_schema(schema: pa.Schema, large: bool) -> pa.Schema:
    return pa.schema([pa.field(f.name, _spark_arrow_type(f.type, large), f.nullable) for f in schema])


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of one of our Arrow schemas."""
    return from_arrow_schema(_spark_arrow_schema(schema, large=False))


def conform(batch: pa.RecordBatch, large: bool) -> pa.RecordBatch:
    """Casts one of our batches to the Arrow types Spark expects back."""
    target = _spark_arrow_schema(batch.schema, large)
    if batch.schema.equals(target):
        return batch
    return batch.cast(target)


def _is_large(batch: pa.RecordBatch) -> bool:
    """Whether Spark exchanges large var types in this stage (read off its input)."""
    return any(pa.types.is_large_binary(f.type) or pa.types.is_large_string(f.type) for f in batch.schema)


def _entry_frame(df: DataFrame) -> DataFrame:
    missing = [c for c in ENTRY_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame needs columns {', '.join(ENTRY_COLUMNS)}; missing {', '.join(missing)}")
    cols = list(ENTRY_COLUMNS) + (["partition"] if "partition" in df.columns else [])
    return df.select(*cols)


def message_schema() -> StructType:
    """Spark schema of :func:`decode`'s output."""
    return spark_schema(_native.decode(pa.table({c: pa.array([], t) for c, t in _ENTRY_TYPES.items()})).schema)


_ENTRY_TYPES = {"ledger_id": pa.int64(), "entry_id": pa.int64(), "data": pa.binary()}


def decode(
    df: DataFrame,
    *,
    verify_checksum: bool = True,
    keep_markers: bool = False,
    max_uncompressed_size: int = _native.DEFAULT_MAX_UNCOMPRESSED_SIZE,
    processors: Any = None,
) -> DataFrame:
    """Decodes a DataFrame of entries (``ledger_id``, ``entry_id``, ``data``,
    optional ``partition``) into one row per message, as :func:`pulsar_entries.decode`.

    ``processors`` (PIP-96) are shipped to the executors with the function, so
    user processors written in Python must be picklable."""
    options: dict[str, Any] = dict(
        verify_checksum=verify_checksum,
        keep_markers=keep_markers,
        max_uncompressed_size=max_uncompressed_size,
        processors=processors,
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as native

        for batch in batches:
            large = _is_large(batch)
            for out in native.decode(batch, **options).to_batches():
                yield conform(out, large)

    return _entry_frame(df).mapInArrow(run, message_schema())


# ----------------------------------------------------------------------------- column functions
#
# Arrow-vectorized pandas UDFs: Spark hands each one a pandas Series of entry
# bytes per Arrow batch; the Rust core reads every entry's metadata in one call.


def _metadata_of(series: Any) -> pa.Table:
    from pulsar_entries import _native as native

    return native.entry_metadata(pa.array(series, type=pa.binary()))


def _column_udf(column: str, return_type: Any, doc: str):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf(return_type)  # type: ignore[call-overload]
    def udf(data):  # pandas Series of bytes -> pandas Series
        col = _metadata_of(data).column(column)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz="UTC"))
        return col.to_pandas()

    udf.__doc__ = doc
    return udf


def _metadata_struct_schema() -> StructType:
    from pulsar_entries import _native as native

    empty = native.entry_metadata(pa.array([], pa.binary()))
    return spark_schema(empty.schema)


def entry_metadata(col: Any):
    """A struct of every MessageMetadata field of each entry (null when absent),
    plus broker entry metadata, checksum and ``error``."""
    from pyspark.sql.functions import pandas_udf

    schema = _metadata_struct_schema()

    @pandas_udf(schema)  # type: ignore[call-overload]
    def udf(data):
        table = _metadata_of(data)
        target = _spark_arrow_schema(table.schema, large=False)
        return table.cast(target).to_pandas(maps_as_pydicts="lossy")

    return udf(col)


def entry_timestamp(col: Any):
    """The broker timestamp of each entry, else its publish time."""
    from pyspark.sql.types import TimestampType

    return _column_udf("entry_timestamp", TimestampType(), entry_timestamp.__doc__ or "")(col)


def is_batch(col: Any):
    """Whether each entry uses batch framing (``num_messages_in_batch`` present)."""
    from pyspark.sql.types import BooleanType

    return _column_udf("is_batch", BooleanType(), is_batch.__doc__ or "")(col)


def num_messages(col: Any):
    """Messages in each entry: ``num_messages_in_batch``, else 1."""
    from pyspark.sql.types import IntegerType

    return _column_udf("num_messages", IntegerType(), num_messages.__doc__ or "")(col)


def verify_checksum(col: Any):
    """True when the stored CRC32C matches, False when not, null without a checksum."""
    from pyspark.sql.types import BooleanType

    return _column_udf("checksum_valid", BooleanType(), verify_checksum.__doc__ or "")(col)


# ----------------------------------------------------------------------------- data source


def register(spark: Any) -> None:
    """Registers ``spark.read.format("pulsar-entries")`` on a session."""
    from .datasource import PulsarEntriesDataSource

    spark.dataSource.register(PulsarEntriesDataSource)


def read_entries(spark: Any, path: str) -> DataFrame:
    """Entries under ``path`` (files or directories of Parquet / Arrow entry tables)."""
    register(spark)
    return spark.read.format("pulsar-entries").load(path)


# ----------------------------------------------------------------------------- compaction (PIP-215, PIP-429)


def _arrow_schema_of(fn: Any, sample: pa.Table, **kw: Any) -> pa.Schema:
    return fn(sample, **kw).schema


_EMPTY_ENTRIES = pa.table(
    {"ledger_id": pa.array([], pa.int64()), "entry_id": pa.array([], pa.int64()), "data": pa.array([], pa.binary())}
)


def compact(
    df: DataFrame,
    *,
    order: str = "publish",
    retain_null_key: bool = False,
    verify_checksum: bool = True,
    max_uncompressed_size: int = _native.DEFAULT_MAX_UNCOMPRESSED_SIZE,
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
    from pyspark.sql import functions as F

    from . import _native as native

    opts = dict(retain_null_key=retain_null_key, verify_checksum=verify_checksum, max_uncompressed_size=max_uncompressed_size)
    entries = _entry_frame(df)
    has_partition = "partition" in entries.columns
    if not has_partition:
        entries = entries.withColumn("partition", F.lit(-1).cast("int"))

    cand_schema = native.compaction_candidates(_EMPTY_ENTRIES, **opts).schema

    def candidates(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as n

        for batch in batches:
            large = _is_large(batch)
            for out in n.compaction_candidates(batch, **opts).to_batches():
                yield conform(out, large)

    cands = entries.mapInArrow(candidates, spark_schema(cand_schema))
    survivor_schema = native.SurvivorFolder(order=order).finish().schema

    def fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as n

        folder = n.SurvivorFolder(order=order)
        large = False
        for batch in batches:
            large = _is_large(batch)
            for out in folder.push(batch).to_batches():
                yield conform(out, large)
        for out in folder.finish().to_batches():
            yield conform(out, large)

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
    # The output has `partition` exactly when the input did, as in-process.
    out_schema = pa.schema(
        [pa.field("ledger_id", pa.int64(), False), pa.field("entry_id", pa.int64(), False)]
        + ([pa.field("partition", pa.int32(), False)] if has_partition else [])
        + [pa.field("data", pa.binary()), pa.field("error", pa.string())]
    )
    names = out_schema.names

    def rebuild(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as n

        for batch in batches:
            large = _is_large(batch)
            for out in n.rebuild_entries(batch, **opts).to_batches():
                yield conform(out.select(names), large)

    joined = entries.join(retained, ["partition", "ledger_id", "entry_id"], "inner")
    rebuilt = joined.select("ledger_id", "entry_id", "data", "partition", "retained").mapInArrow(
        rebuild, spark_schema(out_schema)
    )
    # Compacted entries in topic order, as a compacted ledger holds them.
    return rebuilt.orderBy(*([c for c in ("partition",) if has_partition] + ["ledger_id", "entry_id"]))


def last_message_position(df: DataFrame) -> Any:
    """The last-message position of compacted entries (PIP-429), as
    :func:`pulsar_entries.last_message_position`: only the last entry is read."""
    from . import compaction

    cols = [c for c in ("ledger_id", "entry_id", "data", "partition") if c in df.columns]
    order = [F_desc(c) for c in ("partition", "ledger_id", "entry_id") if c in cols]
    last = df.select(*cols).orderBy(*order).limit(1).toArrow()
    return compaction.last_message_position(last)


def F_desc(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col(name).desc()
