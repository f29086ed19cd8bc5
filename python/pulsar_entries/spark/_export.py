"""A topic kept as a Delta table by Spark: ``spark.readStream.format("pulsar")`` into Delta Lake,
exactly once, in append or upsert mode (:func:`export_topic`).

Each micro-batch is written by ``foreachBatch`` with Delta's idempotent writes: the commit carries
the streaming query's id as its application id and the batch id as its version, so a batch Spark
runs again after a crash (it does so from its checkpoint) is skipped by Delta, never written twice.
The dead-letter table commits before the main one, each under its own application id.

* **append**: every message a row; tombstones (an empty or null value) are rows whose typed columns
  are null, as in process.
* **upsert**: per batch, each (partition, key)'s message at the highest position, then one Delta
  ``MERGE`` on (partition, key): a tombstone deletes, anything else updates or inserts. Messages
  without a key are not kept.

What goes to the dead-letter table (``<table>_dead_letters``): messages the topic's schema cannot
read, with their bytes and error, and data the retention deleted under the query
(``failOnDataLoss=false``). An entry that cannot be read fails the batch (so nothing is lost: the
query can be restarted once it is fixed) unless ``on_entry_error="dead-letter"``.

This needs Delta's Spark jars (``delta-spark``) on the session, with its SQL extension and catalog:
:data:`DELTA_PACKAGE` is the version this package is tested with (Delta 4.4 supports Spark 4.2 and
fails on 4.3). Iceberg is written in process (:func:`pulsar_entries.export.export_topic`): no
released ``iceberg-spark-runtime`` supports Spark 4.2 yet.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _native
from .._cluster.scan import output_schema
from ..export._run import DEAD_LETTER_SCHEMA, MESSAGE_COLUMNS, ExportStats
from ..export._tables import DELTA_CONF, DELTA_PACKAGE, ExportError, TableTarget

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


#: The columns of the source that are not the topic schema's (what the typed columns are added to).
_SOURCE_COLUMNS = frozenset(output_schema(_native.DecodeOptions(keep_markers=True), reassemble=True).names) | {"topic"}

_TOMBSTONE = "__pulsar_entries_tombstone"
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

    def __init__(self, target: TableTarget, mode: str, on_entry_error: str, keep_value: bool) -> None:
        self.target, self.mode, self.on_entry_error, self.keep_value = target, mode, on_entry_error, keep_value
        self.dead = target.dead_letters()
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
                dead_rows = df.filter(status | failed).unionByName(messages.filter(untyped))
                dead_rows = dead_rows.select(
                    *[
                        (F.col(f.name) if f.name in df.columns else F.lit(None)).cast(_spark_type(f.type)).alias(f.name)
                        for f in DEAD_LETTER_SCHEMA
                    ]
                )
                stats.dead_letters = dead_rows.count()
                if stats.dead_letters:
                    self._append(dead_rows, self.dead.location, app + ":dead_letters", batch_id)
                cols = self.columns(df)
                rows = messages.filter(~untyped).select(*cols, tomb.alias(_TOMBSTONE))
                if self.mode == "append":
                    out = rows.drop(_TOMBSTONE)
                    stats.rows = out.count()
                    self._append(out, self.target.location, app, batch_id)
                else:
                    stats.deleted = rows.filter(F.col(_TOMBSTONE)).count()
                    stats.rows = rows.count() - stats.deleted
                    self._merge(rows, cols, app, batch_id)
            finally:
                if self.mode == "upsert":
                    messages.unpersist()
            with self.lock:
                self.total.add(stats)
        finally:
            df.unpersist()

    @staticmethod
    def _append(rows: DataFrame, path: str, app: str, version: int) -> None:
        (
            rows.write.format("delta")
            .mode("append")
            .option("txnAppId", app)
            .option("txnVersion", str(version))
            .option("mergeSchema", "true")
            .save(path)
        )

    def _merge(self, latest: DataFrame, cols: list[str], app: str, version: int) -> None:
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
) -> ExportStats:
    """Exports ``topic`` into the Delta table ``table`` (``delta:<path or URI>``) on ``spark``, by a
    streaming query, and returns what it wrote.

    ``options`` are ``spark.readStream.format("pulsar")``'s (``metadataUrl`` or ``adminUrl``,
    ``maxEntriesPerTrigger``, ``failOnDataLoss``, security, ...). ``checkpoint`` is the query's
    checkpoint location (by default ``_pulsar_entries_checkpoint`` inside the table's folder, which
    Delta ignores); running again with the same checkpoint goes on from where the last run stopped.
    Without ``follow`` the query reads what the topic holds when it starts (``Trigger.AvailableNow``)
    and stops; with it, a micro-batch every ``poll_interval`` seconds until ``should_stop()`` is true
    or Ctrl-C.
    """
    target = TableTarget.parse(table)
    if target.format != "delta":
        raise ExportError(
            f"export to {target} on Spark: only Delta tables are written on Spark (no released "
            "iceberg-spark-runtime supports Spark 4.2); export Iceberg tables in process"
        )
    if "://" not in target.location:
        # A path Spark resolves the same way on every node, and that Delta's SQL takes as a path.
        target = TableTarget("delta", os.path.abspath(target.location))
    if mode not in ("append", "upsert"):
        raise ValueError(f"mode: expected 'append' or 'upsert', got {mode!r}")
    if on_entry_error not in ("stop", "dead-letter"):
        raise ValueError(f"on_entry_error: expected 'stop' or 'dead-letter', got {on_entry_error!r}")
    if not _has_delta(spark):
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
    batches = _Batches(target, mode, on_entry_error, keep_value)
    writer = stream.writeStream.foreachBatch(batches).option("checkpointLocation", location)
    writer = writer.trigger(processingTime=f"{poll_interval} seconds") if follow else writer.trigger(availableNow=True)
    query = writer.start()
    batches.query_id = str(query.id)
    batches.started.set()
    from pyspark.errors import StreamingQueryException

    # Ctrl-C is noted and acted on between waits: raised inside a call to the JVM, it would break the
    # gateway's connection (and py4j logs that with a traceback).
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
    finally:
        # The micro-batch under way is stopped; its Delta commit lands whole or not at all.
        if query.isActive:
            query.stop()
        if main:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
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
