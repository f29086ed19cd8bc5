"""pulsar-entries on Spark.

Pipelines run the Rust core on Arrow record batches inside ``mapInArrow``, so
entries go from the JVM to the core and back without pandas in between.

Spark's Arrow schemas differ from ours in two ways, handled here:
- Spark timestamps are microseconds, ours milliseconds;
- with ``spark.sql.execution.arrow.useLargeVarTypes`` Spark exchanges
  ``large_binary`` / ``large_string``; the variant is read off the input batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from . import _native
from .chunks import ROLE_COLUMN, WATERMARK_COLUMN

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
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_spark_arrow_type(t.value_type, large)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_spark_arrow_type(t.field(i).type, large)) for i in range(t.num_fields)])
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


def _is_large(batch: pa.RecordBatch | pa.Table) -> bool:
    """Whether Spark exchanges large var types in this stage (read off its input)."""
    return any(pa.types.is_large_binary(f.type) or pa.types.is_large_string(f.type) for f in batch.schema)


def run_pass(core_pass: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Feeds a task's batches to a stateful core pass (``push(batch)`` and
    ``finish()``, each giving a table) and conforms its output for Spark."""
    large = False
    for batch in batches:
        large = _is_large(batch)
        for out in core_pass.push(batch).to_batches():
            yield conform(out, large)
    for out in core_pass.finish().to_batches():
        yield conform(out, large)


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
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """Decodes a DataFrame of entries (``ledger_id``, ``entry_id``, ``data``,
    optional ``partition``) into one row per message, as :func:`pulsar_entries.decode`.

    ``processors`` (PIP-96) are shipped to the executors with the function, so
    user processors written in Python must be picklable.

    ``columns`` keeps only those output columns, chosen inside the Python
    worker: Spark cannot prune a ``mapInArrow`` output, and moving the rows
    back to the JVM costs in proportion to their bytes (keep ``error`` to see
    bad entries)."""
    schema = message_schema()
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ValueError(f"unknown decode columns {unknown}; the columns are {schema.names}")
        schema = StructType([schema[c] for c in columns])
    names = list(columns) if columns is not None else None
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
            # Slices keep a task's memory flat: Spark hands over up to
            # maxRecordsPerBatch entries, whose messages can be many times that.
            for part in slices(batch):
                decoded = native.decode(part, **options)
                if names is not None:
                    decoded = decoded.select(names)
                for out in decoded.to_batches():
                    yield conform(out, large)

    return _entry_frame(df).mapInArrow(run, schema)


SLICE_ENTRIES = 1024
SLICE_BYTES = 4 << 20


def slices(
    batch: pa.RecordBatch, max_rows: int = SLICE_ENTRIES, max_bytes: int = SLICE_BYTES
) -> Iterator[pa.RecordBatch]:
    """Zero-copy slices of an entry batch of at most ``max_rows`` entries and
    about ``max_bytes`` of entry data (at least one entry each)."""
    import pyarrow.compute as pc

    n = batch.num_rows
    if n <= max_rows and batch.column("data").nbytes <= max_bytes:
        yield batch
        return
    sizes = pc.fill_null(pc.binary_length(batch.column("data")), 0).cast(pa.int64())
    ends = pc.cumulative_sum(sizes).to_numpy()
    start = 0
    while start < n:
        base = ends[start - 1] if start else 0
        # The last row whose cumulative size stays within the budget, at least one row.
        stop = int(ends[start : min(n, start + max_rows)].searchsorted(base + max_bytes, side="right")) + start
        stop = max(stop, start + 1)
        yield batch.slice(start, stop - start)
        start = stop


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


def last_batch_index(col: Any):
    """The last message's batch index of each compacted entry, by PIP-429's
    rules: the last of ``compacted_batch_indexes`` without touching the payload,
    ``num_messages_in_batch − 1`` for an encrypted batch, else a scan of the
    decompressed records for the last one not compacted out; −1 for a
    non-batched entry. Null when it cannot be found (unreadable entry, every
    slot compacted out); :func:`pulsar_entries.last_message_position` gives the
    reason."""
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import IntegerType

    @pandas_udf(IntegerType())  # type: ignore[call-overload]
    def udf(data):
        import pandas as pd

        from pulsar_entries import _native as native

        col = native.last_batch_indexes(pa.array(data, type=pa.binary())).column("last_batch_index")
        return col.to_pandas(types_mapper={pa.int32(): pd.Int32Dtype()}.get)

    return udf(col)


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
    strategy: Any = None,
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

    if strategy is not None:
        from .spark_strategic import compact_with_strategy

        return compact_with_strategy(
            df,
            strategy,
            order=order,
            retain_null_key=retain_null_key,
            verify_checksum=verify_checksum,
            max_uncompressed_size=max_uncompressed_size,
        )
    opts: dict[str, Any] = dict(
        retain_null_key=retain_null_key, verify_checksum=verify_checksum, max_uncompressed_size=max_uncompressed_size
    )
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
        from pulsar_entries.spark import run_pass

        yield from run_pass(n.SurvivorFolder(order=order), batches)

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


# ----------------------------------------------------------------------------- arrow from Spark


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


def _null_columns(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns, those it lacks filled with nulls."""
    n = batch.num_rows
    cols = [batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


# ----------------------------------------------------------------------------- chunks (PIP-107)

_POSITION = ("partition", "ledger_id", "entry_id")


def _topic_order(df: DataFrame) -> DataFrame:
    return df.sortWithinPartitions(*_POSITION, "batch_index")


def _partition_ranges(ordered: DataFrame, with_publish_time: bool = False) -> list[Any]:
    """Per Spark partition and topic partition: first and last position (and
    the largest publish time, in µs), a small aggregate collected to the driver."""
    from pyspark.sql import functions as F

    pos = F.struct("ledger_id", "entry_id")
    aggs = [F.min(pos).alias("lo"), F.max(pos).alias("hi")]
    aggs.append(
        F.max(F.unix_micros("publish_time")).alias("t")
        if with_publish_time
        else F.max(F.lit(None).cast("long")).alias("t")
    )
    return (
        ordered.select(F.spark_partition_id().alias("sp"), *_POSITION, *(["publish_time"] if with_publish_time else []))
        .groupBy("sp", "partition")
        .agg(*aggs)
        .collect()
    )


def _contiguous_ranges(rows: list[Any]) -> dict[int, list[tuple]] | None:
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


def _plan_seeds(
    rows: list[Any],
) -> tuple[dict[int, dict[int, int]], dict[int, int], dict[int, dict[int, tuple]]] | None:
    """Seeds per Spark partition (the stream time before its range, per topic
    partition), final watermarks, and each Spark partition's expected ranges;
    None when the ranges are not contiguous."""
    by_topic = _contiguous_ranges(rows)
    if by_topic is None:
        return None
    seeds: dict[int, dict[int, int]] = {}
    finals: dict[int, int] = {}
    ranges: dict[int, dict[int, tuple]] = {}
    for p, parts in by_topic.items():
        clock: int | None = None
        for lo, hi, sp, t in parts:
            if clock is not None:
                seeds.setdefault(sp, {})[p] = clock
            ranges.setdefault(sp, {})[p] = (lo, hi)
            if t is not None:
                clock = t if clock is None else max(clock, t)
        if clock is not None:
            finals[p] = clock
    return seeds, finals, ranges


def reassemble_chunks(
    df: DataFrame,
    *,
    max_pending: int | None = 100,
    expire_after_ms: int | None = 60_000,
    max_message_size: int = _native.DEFAULT_MAX_UNCOMPRESSED_SIZE,
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
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if "partition" not in df.columns:
        df = df.withColumn("partition", F.lit(-1).cast("int"))
    opts: dict[str, Any] = dict(
        max_pending=max_pending, expire_after_ms=expire_after_ms, max_message_size=max_message_size
    )
    ordered = _topic_order(df)
    plan = _plan_seeds(_partition_ranges(ordered, with_publish_time=True))
    if plan is None:
        n = max(df.rdd.getNumPartitions(), 1)
        ordered = _topic_order(df.repartitionByRange(n, *_POSITION)).persist(StorageLevel.MEMORY_AND_DISK)
        plan = _plan_seeds(_partition_ranges(ordered, with_publish_time=True))
        if plan is None:  # cannot happen: range partitions are disjoint
            raise RuntimeError("range partitioning did not give disjoint topic ranges")
    seeds, finals, ranges = plan

    empty = pa.RecordBatch.from_pylist([], schema=from_spark_schema(ordered))
    out_schema = _native.reassemble_chunks(empty).schema
    bookkeeping = [pa.field(WATERMARK_COLUMN, pa.int64()), pa.field(ROLE_COLUMN, pa.string())]
    left_schema = pa.schema(list(empty.schema) + bookkeeping)
    tagged_schema = pa.schema(list(out_schema) + bookkeeping)

    def partition_pass(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from pulsar_entries import _native as native

        ctx = TaskContext.get()
        assert ctx is not None, "runs inside a Spark task"
        sp = ctx.partitionId()
        expected = ranges.get(sp, {})
        r = None
        large = False
        seen: dict[int, list] = {}
        for batch in batches:
            large = _is_large(batch)
            batch = from_spark(batch)
            _track_ranges(batch, seen)
            if r is None:
                r = native.PartitionReassembler(batch.schema, seeds=seeds.get(sp, {}), **opts)
            yield from _tagged(r.push(batch), tagged_schema, large)
        if r is not None:
            yield from _tagged(r.finish(), tagged_schema, large)
        got = {p: (tuple(v[0]), tuple(v[1])) for p, v in seen.items()}
        if got != expected:
            raise RuntimeError(
                f"Spark partition {sp} holds positions {got}, not the planned {expected}: the input's "
                "partitioning changed between passes (persist the input DataFrame)"
            )

    tagged = ordered.mapInArrow(partition_pass, spark_schema(tagged_schema)).persist(StorageLevel.MEMORY_AND_DISK)
    out_names = out_schema.names
    done = tagged.filter(F.col(ROLE_COLUMN).isNull()).select(*out_names)

    def finish(table: pa.Table) -> pa.Table:
        from pulsar_entries import _native as native

        large = _is_large(table)
        batches = [from_spark(b) for b in table.to_batches()]
        if not batches:
            return _spark_arrow_schema(out_schema, large).empty_table()
        result = native.finish_leftovers(pa.Table.from_batches(batches), final_watermarks=finals, **opts)
        target = _spark_arrow_schema(out_schema, large)
        return pa.Table.from_batches([_null_columns(b, target) for b in result.to_batches()], schema=target)

    leftovers = tagged.filter(F.col(ROLE_COLUMN).isNotNull()).select(*left_schema.names)
    finished = leftovers.groupBy("partition", "uuid").applyInArrow(finish, spark_schema(out_schema))
    return done.unionByName(finished)


def from_spark_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema (our types) of a DataFrame's rows."""
    from pyspark.sql.pandas.types import to_arrow_schema

    empty = pa.RecordBatch.from_pylist([], schema=to_arrow_schema(df.schema, timezone="UTC"))
    return from_spark(empty).schema


def _track_ranges(batch: pa.RecordBatch, seen: dict[int, list]) -> None:
    """Extends ``seen`` (topic partition → [first, last] position) with a batch
    sorted by position: each topic partition is one run of rows."""
    if batch.num_rows == 0:
        return
    import pyarrow.compute as pc

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


def _tagged(parts: tuple[pa.Table, pa.Table], schema: pa.Schema, large: bool) -> Iterator[pa.RecordBatch]:
    done, leftovers = parts
    for b in done.to_batches():
        yield conform(_null_columns(b, schema), large)
    for b in leftovers.to_batches():
        yield conform(_null_columns(b, schema), large)


# ----------------------------------------------------------------------------- seek (PIP-70)


def find_position_by_time(df: DataFrame, time: Any) -> DataFrame:
    """Pulsar's seek by timestamp on Spark: per topic partition, the entry after
    the last entry whose broker timestamp (else publish time) is before
    ``time`` (ms since the epoch, or a ``datetime``); the first entry when none
    is, and the last entry id + 1 when all are — as
    :func:`pulsar_entries.find_position_by_time` answers for monotonic entry
    times (broker timestamps are). Reads only each entry's prefix and metadata.

    Returns one row per topic partition: ``partition``, ``ledger_id``,
    ``entry_id``.
    """
    from pyspark.sql import functions as F

    t = _millis(time)
    entries = _entry_frame(df)
    if "partition" not in entries.columns:
        entries = entries.withColumn("partition", F.lit(-1).cast("int"))
    times_schema = "partition int, ledger_id long, entry_id long, t long"

    def entry_times(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as native

        for batch in batches:
            md = native.entry_metadata(batch.column("data"))
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("partition").cast(pa.int32()),
                    batch.column("ledger_id"),
                    batch.column("entry_id"),
                    md.column("entry_timestamp").cast(pa.int64()).combine_chunks(),
                ],
                names=["partition", "ledger_id", "entry_id", "t"],
            )

    times = entries.select(*_POSITION, "data").mapInArrow(entry_times, times_schema)
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


def _millis(time: Any) -> int:
    import datetime as dt

    if isinstance(time, dt.datetime):
        if time.tzinfo is None:
            raise ValueError("a naive datetime is ambiguous: give one with a timezone, or ms since the epoch")
        return int(time.timestamp() * 1000)
    return int(time)


# ----------------------------------------------------------------------------- compacted outputs


def to_ledger_records(df: DataFrame) -> DataFrame:
    """Each compacted entry in Pulsar's compacted-ledger record form,
    ``[u32 idLen][MessageIdData][u32 len][entry]``, as
    :func:`pulsar_entries.to_ledger_records`: ``ledger_id``, ``entry_id``, ``record``."""
    cols = [c for c in ("ledger_id", "entry_id", "partition", "data") if c in df.columns]
    empty = pa.table(
        {"ledger_id": pa.array([], pa.int64()), "entry_id": pa.array([], pa.int64()), "data": pa.array([], pa.binary())}
    )
    schema = _native.to_ledger_records(empty).schema

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_entries import _native as native

        for batch in batches:
            large = _is_large(batch)
            for out in native.to_ledger_records(from_spark(batch)).to_batches():
                yield conform(out, large)

    return df.select(*cols).mapInArrow(run, spark_schema(schema))


def compacted_view(df: DataFrame) -> DataFrame:
    """The key → latest value view of entries (typically a compaction's
    output), as :class:`pulsar_entries.TableView` gives it with the default
    strategy: ``key``, ``value``, ``ledger_id``, ``entry_id``, ``batch_index``,
    ``publish_time`` (ms), sorted by key. Chunked messages are reassembled
    first; an empty or null value deletes its key; entries in another format
    (KoP's Kafka batches) are not Pulsar messages and are left out."""
    from pyspark.sql import functions as F

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
