"""A topic kept as a Delta or Iceberg table by Spark: ``spark.readStream.format("pulsar")`` into
the table, exactly once, in append or upsert mode (:func:`export_topic`).

Each micro-batch is written by ``foreachBatch`` under the streaming query's id and the batch's id,
so a batch Spark runs again after a crash (it does so from its checkpoint) is skipped, never written
twice. The dead-letter table commits before the main one, each under its own application id.

* **Delta**: Delta's own Spark writer (``delta-spark``), its idempotent writes (``txnAppId`` /
  ``txnVersion``) and, for upsert, its SQL ``MERGE``.
* **Iceberg**: no released ``iceberg-spark-runtime`` supports Spark 4.2 (``-4.1`` 1.12.0 is the
  newest, and fails on 4.2), so the executors read and type each micro-batch and the driver commits
  it through pyiceberg, as the in-process export does, with the query and batch ids in the
  snapshot's properties. A micro-batch passes through the driver's memory: ``maxEntriesPerTrigger``
  bounds it.

* **append**: every message a row; tombstones (an empty or null value) are rows whose typed columns
  are null, as in process.
* **upsert**: per batch, each (partition, key)'s message at the highest position, then one Delta
  ``MERGE`` on (partition, key) (Iceberg: a delete of the keys' rows and an append, in one commit):
  a tombstone deletes, anything else updates or inserts. Messages without a key are not kept.

What goes to the dead-letter table (``<table>_dead_letters``): messages the topic's schema cannot
read, with their bytes and error, and data the retention deleted under the query
(``failOnDataLoss=false``). An entry that cannot be read fails the batch (so nothing is lost: the
query can be restarted once it is fixed) unless ``on_entry_error="dead-letter"``.

Delta needs Delta's Spark jars (``delta-spark``) on the session, with its SQL extension and catalog:
:data:`DELTA_PACKAGE` is the version this package is tested with (Delta 4.4 supports Spark 4.2 and
fails on 4.3). Iceberg needs the ``iceberg`` extra on the driver.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _native
from .._cluster.scan import output_schema
from ..export._run import DEAD_LETTER_SCHEMA, MESSAGE_COLUMNS, ExportStats, fold_strategy
from ..export._tables import (
    DELTA_CONF,
    DELTA_PACKAGE,
    TOMBSTONE,
    ExportError,
    IcebergTable,
    TableTarget,
    conform,
)
from ..strategies import _Adapter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


#: The columns of the source that are not the topic schema's (what the typed columns are added to).
_SOURCE_COLUMNS = frozenset(output_schema(_native.DecodeOptions(keep_markers=True), reassemble=True).names) | {"topic"}

_TOMBSTONE = TOMBSTONE
#: What a strategy's fold reads of the table's rows.
_FOLD_COLUMNS = ("partition", "key", "ledger_id", "entry_id", "batch_index", "value")
_WRITE_TXN = ("spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion")


def _has_delta(spark: SparkSession) -> bool:
    """Whether the session has Delta's extension configured and its classes loadable (by Spark's
    class loader, which sees ``spark.jars``)."""
    if "DeltaSparkSessionExtension" not in (spark.conf.get("spark.sql.extensions", "") or ""):
        return False
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: the server's classpath decides; Delta says so at the first write.
        return True
    try:
        jvm.org.apache.spark.util.Utils.classForName("io.delta.sql.DeltaSparkSessionExtension", True, False)
    except Exception:
        return False
    return True


def _quote(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _Batches:
    """The ``foreachBatch`` function: splits a micro-batch into the main and dead-letter rows and
    commits them, each write idempotent under (query id, batch id)."""

    def __init__(
        self,
        sink: _DeltaSink | _IcebergSink,
        mode: str,
        on_entry_error: str,
        keep_value: bool,
        strategy: Any = None,
        source: Mapping[str, str] | None = None,
    ) -> None:
        self.sink, self.mode, self.on_entry_error = sink, mode, on_entry_error
        #: With a strategy the table keeps each key's value bytes too: what the strategy sees next.
        self.keep_value = keep_value or strategy is not None
        #: The PIP-215 strategy of upsert mode, as raw bytes in and out; ``source`` the stream's options
        #: (the topic's schema is looked up from them when a merged value must be typed).
        self.strategy = None if strategy is None else _Adapter(strategy)
        self.source = dict(source or {})
        self._schema: Any = None
        self.query_id: str | None = None
        self.started = threading.Event()
        self.total = ExportStats()
        self.lock = threading.Lock()

    def columns(self, df: DataFrame) -> list[str]:
        typed = [c for c in df.columns if c not in _SOURCE_COLUMNS]
        return [*MESSAGE_COLUMNS, *(typed if typed and not self.keep_value else [*typed, "value"])]

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        if not self.started.wait(120) or self.query_id is None:
            raise ExportError("export: the streaming query's id was not known in time")
        app = f"pulsar-entries:{self.query_id}"
        df = df.persist()
        try:
            status = F.col("ledger_id") == -1
            failed = F.col("error").isNotNull() & F.col("value").isNull() & F.col("num_messages").isNull() & ~status
            if self.on_entry_error == "stop":
                bad = df.filter(failed).select("partition", "ledger_id", "entry_id", "error").limit(1).collect()
                if bad:
                    r = bad[0]
                    raise ExportError(
                        f"export of micro-batch {batch_id}: entry {r['ledger_id']}:{r['entry_id']} of partition "
                        f"{r['partition']} cannot be read ({r['error']}); nothing of this batch was written "
                        "(on_entry_error='dead-letter' writes such entries to the dead-letter table)"
                    )
            messages = df.filter(~status & ~failed)
            stats = ExportStats(commits=1)
            if self.strategy is not None:
                self._strategic(df.filter(status | failed), messages, app, batch_id, stats)
                with self.lock:
                    self.total.add(stats)
                return
            if self.mode == "upsert":
                # Each key's latest message, then (as in process) that message typed or dead-lettered.
                stats.keyless = messages.filter(F.col("key").isNull()).count()
                order = [F.col(c).desc_nulls_last() for c in ("ledger_id", "entry_id", "batch_index")]
                rank = F.row_number().over(Window.partitionBy("partition", "key").orderBy(*order))
                messages = (
                    messages.filter(F.col("key").isNotNull())
                    .withColumn("__pulsar_entries_rank", rank)
                    .filter(F.col("__pulsar_entries_rank") == 1)
                    .drop("__pulsar_entries_rank")
                )
            # Upsert reads its ranked rows several times: kept once. Append's are a filter of the kept batch.
            messages = messages.persist() if self.mode == "upsert" else messages
            try:
                tomb = F.coalesce(F.length("value"), F.lit(0)) == 0
                untyped = F.col("error").isNotNull() & ~tomb
                dead_rows = _dead_letter_frame(df.filter(status | failed).unionByName(messages.filter(untyped)))
                stats.dead_letters = dead_rows.count()
                if stats.dead_letters:
                    self.sink.append(dead_rows, app + ":dead_letters", batch_id, dead=True)
                cols = self.columns(df)
                rows = messages.filter(~untyped).select(*cols, tomb.alias(_TOMBSTONE))
                if self.mode == "append":
                    out = rows.drop(_TOMBSTONE)
                    stats.rows = out.count()
                    self.sink.append(out, app, batch_id)
                else:
                    stats.deleted = rows.filter(F.col(_TOMBSTONE)).count()
                    stats.rows = rows.count() - stats.deleted
                    self.sink.merge(rows, cols, app, batch_id)
            finally:
                if self.mode == "upsert":
                    messages.unpersist()
            with self.lock:
                self.total.add(stats)
        finally:
            df.unpersist()

    def _strategic(self, broken: DataFrame, messages: DataFrame, app: str, batch_id: int, stats: ExportStats) -> None:
        """Upsert with a PIP-215 strategy, on the driver: the batch's keyed messages and the table's
        rows for their keys, folded as the in-process export folds them (:func:`fold_strategy`);
        a merged value is typed again by the topic's schema. The winners go to the table in one
        ``MERGE`` (Iceberg: one delete-and-append commit), those the schema cannot read to the
        dead-letter table."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql import functions as F

        assert self.strategy is not None
        spark = messages.sparkSession
        stats.keyless = messages.filter(F.col("key").isNull()).count()
        keyed = messages.filter(F.col("key").isNotNull())
        cols = self.columns(messages)
        extra = [c for c in ("error", "schema_version", "key_b64_encoded") if c in messages.columns and c not in cols]
        rows = keyed.select(*cols, *extra).toArrow()
        current = self.sink.current(keyed, rows, _FOLD_COLUMNS)
        if current is None:
            raise ExportError(
                f"{self.sink.target}: kept without a strategy (it has no value column); a strategy needs a table "
                "it kept from the start"
            )
        won, merged = fold_strategy(rows, current, self.strategy, f"export of micro-batch {batch_id}")
        if any(merged):
            won = self._retyped(won, merged, cols)
        size = pc.binary_length(won["value"])
        tomb = pc.fill_null(pc.or_(pc.is_null(won["value"]), pc.equal(size, 0)), True)
        untyped = pc.and_(pc.is_valid(won["error"]), pc.invert(tomb))
        dead_rows = _dead_letter_frame(broken)
        if pc.any(untyped).as_py():
            failed = won.filter(untyped)
            failed = failed.select([c for c in DEAD_LETTER_SCHEMA.names if c in failed.column_names])
            dead_rows = dead_rows.unionByName(_dead_letter_frame(spark.createDataFrame(failed)))
        stats.dead_letters = dead_rows.count()
        if stats.dead_letters:
            self.sink.append(dead_rows, app + ":dead_letters", batch_id, dead=True)
        keep = pc.invert(untyped)
        out = won.filter(keep).select(cols).append_column(_TOMBSTONE, tomb.filter(keep))
        stats.deleted = pc.sum(pc.cast(out[_TOMBSTONE], pa.int64())).as_py() or 0
        stats.rows = out.num_rows - stats.deleted
        self.sink.merge_arrow(spark, out, cols, app, batch_id)

    def _retyped(self, won: Any, merged: list[bool], cols: list[str]) -> Any:
        """``won`` with the rows whose value a strategy merged typed again, by the topic's schema
        (looked up once, on the driver, from the stream's options)."""
        columns = [c for c in cols if c not in MESSAGE_COLUMNS and c != "value"]
        if not columns:
            return won
        if self._schema is None:
            from ._topic_options import TopicOptions, resolve_layouts, resolve_schema

            opts = TopicOptions.parse(self.source)
            schemas = resolve_schema(opts, [layout.topic for layout in resolve_layouts(opts)])
            if not schemas:
                raise ExportError("export: a strategy merged a value, but the topic has no schema to type it with")
            self._schema = next(iter(schemas.values()))
        return retype(won, merged, columns, self._schema)


def retype(rows: Any, merged: Sequence[bool], columns: Sequence[str], schema: Any) -> Any:
    """``rows`` (Arrow: messages with their ``value``, typed ``columns`` and ``error``) with those
    flagged in ``merged`` typed again from their (merged) value by ``schema``, as the in-process
    export types the winners after the fold. The rows come back unmerged first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..schemas import typed

    flags = pa.array(list(merged), pa.bool_())
    again = typed(rows.filter(flags).drop_columns([*columns, "error"]), schema, value_column=True)
    again = again.select(rows.column_names).cast(rows.schema)
    return pa.concat_tables([rows.filter(pc.invert(flags)), again])


def _dead_letter_frame(rows: DataFrame) -> DataFrame:
    """``rows`` as the dead-letter table's columns, with its types."""
    from pyspark.sql import functions as F

    return rows.select(
        *[
            (F.col(f.name) if f.name in rows.columns else F.lit(None)).cast(_spark_type(f.type)).alias(f.name)
            for f in DEAD_LETTER_SCHEMA
        ]
    )


class _DeltaSink:
    """Micro-batches into a Delta table by Delta's Spark writer."""

    def __init__(self, target: TableTarget) -> None:
        self.target, self.dead = target, target.dead_letters()

    def append(self, rows: DataFrame, app: str, version: int, *, dead: bool = False) -> None:
        path = (self.dead if dead else self.target).location
        (
            rows.write.format("delta")
            .mode("append")
            .option("txnAppId", app)
            .option("txnVersion", str(version))
            .option("mergeSchema", "true")
            .save(path)
        )

    def current(self, keyed: DataFrame, rows: Any, cols: Sequence[str]) -> Any:
        """The table's rows (``cols`` of them, as Arrow) for the keys of ``keyed``; None when the
        table lacks one of ``cols``."""
        import pyarrow as pa

        spark = keyed.sparkSession
        path = self.target.location
        if not _delta_table_exists(spark, path):
            return pa.table({c: rows[c].slice(0, 0) for c in cols})
        table = spark.read.format("delta").load(path)
        if any(c not in table.columns for c in cols):
            return None
        keys = keyed.select("partition", "key").distinct()
        return table.join(keys, ["partition", "key"], "left_semi").select(*cols).toArrow()

    def merge_arrow(self, spark: SparkSession, latest: Any, cols: list[str], app: str, version: int) -> None:
        """:meth:`merge` of rows the driver holds (Arrow)."""
        self.merge(spark.createDataFrame(latest), cols, app, version)

    def merge(self, latest: DataFrame, cols: list[str], app: str, version: int) -> None:
        """One MERGE of each (partition, key)'s latest message, committed under (``app``, ``version``)."""
        spark = latest.sparkSession
        path = self.target.location
        if not _delta_table_exists(spark, path):
            # The table's columns, with no row: MERGE needs a table (creating it twice is harmless).
            latest.select(*cols).limit(0).write.format("delta").mode("append").save(path)
        view = f"pulsar_entries_upsert_{version}"
        latest.createOrReplaceTempView(view)
        on = " AND ".join(f"t.{_ident(c)} <=> s.{_ident(c)}" for c in ("partition", "key"))
        sets = ", ".join(f"t.{_ident(c)} = s.{_ident(c)}" for c in cols)
        names = ", ".join(_ident(c) for c in cols)
        values = ", ".join(f"s.{_ident(c)}" for c in cols)
        sql = (
            f"MERGE INTO {_quote(path)} t USING {view} s ON {on} "
            f"WHEN MATCHED AND s.{_TOMBSTONE} THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND NOT s.{_TOMBSTONE} THEN INSERT ({names}) VALUES ({values})"
        )
        settings = {
            _WRITE_TXN[0]: app,
            _WRITE_TXN[1]: str(version),
            "spark.databricks.delta.schema.autoMerge.enabled": "true",
        }
        before = {k: spark.conf.get(k, None) for k in settings}
        for k, v in settings.items():
            spark.conf.set(k, v)
        try:
            spark.sql(sql)
        finally:
            for k, old in before.items():
                if old is None:
                    spark.conf.unset(k)
                else:
                    spark.conf.set(k, old)
            spark.catalog.dropTempView(view)


class _IcebergSink:
    """Micro-batches into an Iceberg table, committed by the driver through pyiceberg (see the module's
    text): each batch's rows as Arrow, under (query id, batch id) in the snapshot's properties."""

    def __init__(self, target: TableTarget, catalog: Mapping[str, Any]) -> None:
        self.target = target
        self.main = IcebergTable(target, **catalog)
        self.dead = IcebergTable(target.dead_letters(), **catalog)

    def append(self, rows: DataFrame, app: str, version: int, *, dead: bool = False) -> None:
        (self.dead if dead else self.main).commit_batch(conform(rows.toArrow(), "iceberg"), app, version)

    def current(self, keyed: DataFrame, rows: Any, cols: Sequence[str]) -> Any:
        self.main.refresh()
        return self.main.current(rows, cols)

    def merge(self, latest: DataFrame, cols: list[str], app: str, version: int) -> None:
        self.merge_arrow(latest.sparkSession, latest.select(*cols, _TOMBSTONE).toArrow(), cols, app, version)

    def merge_arrow(self, spark: SparkSession, latest: Any, cols: list[str], app: str, version: int) -> None:
        """Rows the driver holds (Arrow, with the tombstone flag) committed as they are: no trip
        through Spark."""
        rows = conform(latest.select([*cols, _TOMBSTONE]), "iceberg")
        self.main.commit_batch(rows, app, version, upsert=True)


def _delta_table_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a Delta table: a ``_delta_log`` with files (Delta's own test)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is not None:
        log = jvm.org.apache.hadoop.fs.Path(path.rstrip("/") + "/_delta_log")
        fs = log.getFileSystem(spark._jsc.hadoopConfiguration())
        return bool(fs.exists(log)) and len(fs.listStatus(log)) > 0
    try:
        spark.sql(f"DESCRIBE DETAIL {_quote(path)}").collect()
    except Exception:
        return False
    return True


def _spark_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return "timestamp"
    return {
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.string(): "string",
        pa.binary(): "binary",
    }[t]


def export_topic(
    spark: SparkSession,
    topic: str,
    table: str,
    *,
    checkpoint: str | None = None,
    mode: str = "append",
    options: Mapping[str, str] | None = None,
    follow: bool = False,
    poll_interval: float = 1.0,
    on_entry_error: str = "stop",
    should_stop: Callable[[], bool] | None = None,
    on_batch: Callable[[ExportStats], None] | None = None,
    strategy: Any = None,
    catalog_uri: str | None = None,
    warehouse: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
) -> ExportStats:
    """Exports ``topic`` into the table ``table`` (``delta:<path or URI>`` or
    ``iceberg:<catalog>.<namespace>.<table>``) on ``spark``, by a streaming query, and returns what it
    wrote.

    ``options`` are ``spark.readStream.format("pulsar")``'s (``metadataUrl`` or ``adminUrl``,
    ``maxEntriesPerTrigger``, ``failOnDataLoss``, security, ...). ``checkpoint`` is the query's
    checkpoint location (by default ``_pulsar_entries_checkpoint`` inside the table's folder, which
    Delta ignores); running again with the same checkpoint goes on from where the last run stopped.
    Without ``follow`` the query reads what the topic holds when it starts (``Trigger.AvailableNow``)
    and stops; with it, a micro-batch every ``poll_interval`` seconds until ``should_stop()`` is true
    or Ctrl-C. ``on_batch`` is called on this thread with the totals so far after micro-batches
    commit (``lag_entries``: the backlog, in entries, when the latest one was planned).

    ``strategy`` (upsert mode only) is a PIP-215 compaction strategy, as in process: each micro-batch's
    keyed messages are folded onto the table's values for their keys on the driver, with the same
    semantics as ``compact(strategy=...)``, and the table keeps each key's ``value`` bytes.

    ``catalog_uri``, ``warehouse`` and ``catalog_properties`` are an Iceberg table's catalog, as in
    :func:`pulsar_entries.export.export_topic`; the driver opens it. An Iceberg export's checkpoint
    is by default ``_pulsar_entries_checkpoints/<catalog>.<namespace>.<table>`` in the warehouse of
    the default catalog (SQLite); with another catalog, give one.
    """
    target = TableTarget.parse(table)
    if target.format == "delta" and "://" not in target.location:
        # A path Spark resolves the same way on every node, and that Delta's SQL takes as a path.
        target = TableTarget("delta", os.path.abspath(target.location))
    if mode not in ("append", "upsert"):
        raise ValueError(f"mode: expected 'append' or 'upsert', got {mode!r}")
    if on_entry_error not in ("stop", "dead-letter"):
        raise ValueError(f"on_entry_error: expected 'stop' or 'dead-letter', got {on_entry_error!r}")
    if strategy is not None and mode != "upsert":
        raise ValueError("strategy: a compaction strategy decides between a key's values: give mode='upsert'")
    if target.format == "iceberg" and checkpoint is None:
        if catalog_uri is not None or catalog_properties:
            raise ValueError(f"export to {target} on Spark: give the streaming query a checkpoint location")
        where = os.path.abspath(warehouse or "warehouse")
        checkpoint = os.path.join(where, "_pulsar_entries_checkpoints", target.location)
    if target.format == "delta" and not _has_delta(spark):
        raise ExportError(
            f"export to {target} on Spark needs Delta Lake on the session: start Spark with "
            f"spark.jars.packages={DELTA_PACKAGE} and " + ", ".join(f"{k}={v}" for k, v in DELTA_CONF.items())
        )
    opts = {k: str(v) for k, v in (options or {}).items()}
    if any(k.lower() in ("topics", "topicspattern") for k in opts):
        raise ValueError("export writes one topic: give it as topic, not in options")
    # The value bytes are read here whatever is asked (tombstones, dead letters); the table keeps them
    # only when asked (by default only a topic without a schema's).
    asked = [opts.pop(k) for k in [k for k in opts if k.lower() == "valuecolumn"]]
    keep_value = bool(asked) and asked[-1].strip().lower() == "true"
    opts["valueColumn"] = "true"
    location = checkpoint or target.location.rstrip("/") + "/_pulsar_entries_checkpoint"
    stream = spark.readStream.format("pulsar").option("topic", topic).options(**opts).load()
    sink: _DeltaSink | _IcebergSink
    if target.format == "delta":
        sink = _DeltaSink(target)
    else:
        catalog = {"catalog_uri": catalog_uri, "warehouse": warehouse, "catalog_properties": catalog_properties}
        sink = _IcebergSink(target, catalog)
    batches = _Batches(sink, mode, on_entry_error, keep_value, strategy, {**opts, "topic": topic})
    writer = stream.writeStream.foreachBatch(batches).option("checkpointLocation", location)
    writer = writer.trigger(processingTime=f"{poll_interval} seconds") if follow else writer.trigger(availableNow=True)
    query = writer.start()
    batches.query_id = str(query.id)
    batches.started.set()
    from pyspark.errors import StreamingQueryException

    # Ctrl-C is noted and acted on between waits: raised inside a call to the JVM, it would break the
    # gateway's connection (and py4j logs that with a traceback).
    reported = 0
    interrupted = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set()) if main else None
    try:
        while query.isActive and not interrupted.is_set():
            if should_stop is not None and should_stop():
                break
            try:
                query.awaitTermination(1)
            except StreamingQueryException:
                break  # said below, in one line
            if on_batch is not None:
                reported = _report(batches, query, reported, on_batch)
    finally:
        # The micro-batch under way is stopped; its Delta commit lands whole or not at all.
        if query.isActive:
            query.stop()
        if main:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if on_batch is not None:
        _report(batches, query, reported, on_batch)
    if interrupted.is_set():
        raise KeyboardInterrupt
    error = query.exception()
    if error is not None:
        raise ExportError(f"export of {topic} to {target} on Spark: {_first_line(error)}") from None
    done = batches.total
    progress = query.lastProgress
    if progress:
        done.positions = {}
        for source in progress.get("sources", []):
            end = source.get("endOffset")
            end = json.loads(end) if isinstance(end, str) else end
            if isinstance(end, dict):
                done.positions.update(
                    {
                        k: (v["ledgerId"], v["entryId"])
                        for k, v in end.items()
                        if isinstance(v, dict) and "ledgerId" in v
                    }
                )
    return done


def _report(batches: _Batches, query: Any, reported: int, on_batch: Callable[[ExportStats], None]) -> int:
    """Calls ``on_batch`` with the totals when micro-batches committed since the last call; returns
    how many have been reported."""
    with batches.lock:
        if batches.total.commits <= reported:
            return reported
        total = ExportStats()
        total.add(batches.total)
    progress = query.lastProgress or {}
    for source in progress.get("sources", []):
        latest = source.get("latestOffset")
        latest = json.loads(latest) if isinstance(latest, str) else latest
        if isinstance(latest, dict):
            total.lag_entries += sum(int(v.get("backlogEntries", 0)) for v in latest.values() if isinstance(v, dict))
    on_batch(total)
    return total.commits


_RAISED = re.compile(r"^\s*(?:E\s+)?([\w.]*(?:Error|Exception)): (.+)$")


def _first_line(error: Any) -> str:
    """What failed, in one line, from a failed query's error: the exception the micro-batch raised
    (its message alone when it is ours), not Spark's wrapping of it."""
    text = str(getattr(error, "desc", None) or error)
    raised = []
    for line in text.split("=== Streaming Query ===")[0].splitlines():
        m = _RAISED.match(line)
        if m and not m.group(1).endswith("StreamingQueryException"):
            raised.append((m.group(1), m.group(2).strip()))
    if not raised:
        return text.strip().splitlines()[0] if text.strip() else type(error).__name__
    name, message = raised[-1]
    return message if name.endswith("ExportError") else f"{name.rsplit('.', 1)[-1]}: {message}"
