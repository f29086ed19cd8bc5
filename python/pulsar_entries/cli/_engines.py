"""Where the CLI's work runs: one interface, two engines.

:class:`LocalEngine` runs in process on Arrow tables and needs no pyspark;
:class:`SparkEngine` runs the same steps with :mod:`pulsar_entries.spark` on a
session (embedded ``local[*]`` unless ``--master`` says otherwise), started
only when a step needs it. Commands call the interface and never ask which
engine they have.
"""

from __future__ import annotations

import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import _native
from .._broker import find_position_by_time
from .._carry import decode_carrying
from .._compaction import Compactor, MessagePosition, last_message_position, to_ledger_records
from .._crypto import load_key_files
from .._inputs import inputs_schema, list_inputs, read_file
from .._install import install_hint
from .._table_view import TableView
from ._errors import CliError
from ._output import marked
from ._progress import Bar, data_bytes
from ._report import Stats, stats_from_arrow
from ._topic import ClusterTopic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SeekResult:
    """Where a consumer seeking by time lands, in one topic partition (-1: not partitioned)."""

    partition: int
    ledger_id: int
    entry_id: int
    note: str = ""


@dataclass(frozen=True)
class Compacted:
    """What a compaction did: a summary line, the keys in its view and the view's first rows."""

    summary: str
    keys: int
    view_head: list[dict]


def compaction_summary(stats: dict, took: float) -> str:
    rate = stats["messages_read"] / took if took else float("inf")
    return (
        f"{stats['entries_read']:,} entries ({stats['messages_read']:,} messages, {stats['keys']:,} keys) -> "
        f"{stats['entries_written']:,} entries ({stats['messages_written']:,} messages) "
        f"in {took * 1000:.0f} ms ({rate:,.0f} messages/s); "
        f"{stats['tombstones']:,} tombstones, {stats['null_key_dropped']:,} key-less dropped, "
        f"{stats['markers']:,} markers; kept unchanged: {stats.get('kafka_entries', 0):,} Kafka-on-Pulsar entries, "
        f"{stats['unreadable_entries']:,} unreadable"
    )


class Engine(ABC):
    """The steps the commands run. Sources are entry files (Parquet / Arrow),
    offload objects, or directories of them, or a :class:`ClusterTopic` (read
    from the cluster's storage on this machine); outputs are Parquet."""

    #: Several workers, each on part of the topic: worth checking against the in-process answer.
    distributed = False
    #: Whether ``decode`` writes a directory (Spark's parts) rather than one file.
    directory_outputs = False

    def __init__(self, progress: bool) -> None:
        self.progress = progress

    def reuse_inputs(self) -> None:
        """Keeps each input read once for the later steps that read it again (the demo's several
        steps over one small topic). Not for one-step commands: a large input is read once.
        In process each step reads its input from disk, which is fast: nothing is kept."""
        return None

    @abstractmethod
    def describe(self) -> str:
        """Where the work runs, for the demo's headings."""

    @abstractmethod
    def output(self, out: Path, name: str) -> Path:
        """The path of output ``name`` under ``out``: a file locally, a directory on Spark."""

    @abstractmethod
    def dataset(self, out: Path, name: str) -> Path:
        """Where output ``name`` goes in the directory ``out / name``: one file
        in it locally, the directory itself (of Spark's parts) on Spark."""

    @abstractmethod
    def read(self, source: str | Path) -> pa.Table:
        """Every entry under ``source``, as one Arrow table (``ledger_id``, ``entry_id``, ``data``)."""

    @abstractmethod
    def decode(self, source: str | Path, out: str | Path, *, count: bool = True, **options: Any) -> tuple[int, int]:
        """Decodes ``source`` into Parquet at ``out``: (rows, error rows), or (-1, -1) when not
        ``count`` and counting would take another pass (on Spark)."""

    @abstractmethod
    def stats(self, source: str | Path, messages: str | Path | None = None) -> Stats:
        """The inspect figures of ``source``; of already decoded ``messages`` when given."""

    @abstractmethod
    def compact(self, source: str | Path, outputs: dict[str, Path], *, head: int = 0, **options: Any) -> Compacted:
        """Compacts ``source`` (``options`` as :class:`pulsar_entries.Compactor`'s);
        writes the compacted entries (``outputs["compacted"]``), their
        compacted-ledger records (``"records"``) and the key -> value view
        (``"view"``) where ``outputs`` says; ``head`` rows of the view come back."""

    @abstractmethod
    def reassemble_chunks(self, messages: str | Path) -> pa.Table:
        """The chunked messages of decoded ``messages``, reassembled: rows with a ``status``."""

    @abstractmethod
    def seek(self, source: str | Path, t: int) -> list[SeekResult]:
        """Seek by broker time (ms) in each topic partition (PIP-70)."""

    @abstractmethod
    def last_message_position(
        self,
        source: str | Path,
        *,
        topic: str | Path | None = None,
        read_compacted: bool = True,
        horizon: tuple[int, int] | None = None,
    ) -> MessagePosition:
        """The last message position of the compacted entries under ``source`` (PIP-429)."""


# ----------------------------------------------------------------------------- local


def read_entries(source: str | Path | ClusterTopic, keep_errors: bool = False) -> pa.Table:
    """Every entry under ``source`` in process (``ledger_id``, ``entry_id``,
    ``data``, then ``partition`` and the inputs' other columns; ``error``, the
    reader's diagnostic, with ``keep_errors``)."""
    if isinstance(source, ClusterTopic):
        table = source.entries()
    else:
        files = entry_files(source)
        schema = inputs_schema(files)
        table = pa.Table.from_batches([b for item in files for b in read_file(*item, schema=schema)], schema=schema)
    return table if keep_errors else table.drop_columns(["error"])


def entry_files(source: str | Path) -> list[tuple[str, ...]]:
    """The inputs under ``source``: entry tables and offload objects."""
    try:
        return list_inputs(str(source))
    except FileNotFoundError as e:
        raise CliError(str(e)) from None


def entry_batches(files: list[tuple[str, ...]]) -> Iterator[pa.RecordBatch]:
    """Entry batches (``ledger_id``, ``entry_id``, ``data`` and ``partition``
    when the inputs have it), one input at a time."""
    schema = inputs_schema(files)
    names = compaction_input_schema(files).names
    for item in files:
        for batch in read_file(*item, schema=schema):
            yield batch.select(names)


def compaction_input_schema(files: list[tuple[str, ...]]) -> pa.Schema:
    """The columns compaction reads: the ids, ``partition`` when the inputs have it, and ``data``."""
    schema = inputs_schema(files)
    return pa.schema([schema.field(c) for c in ("ledger_id", "entry_id", "partition", "data") if c in schema.names])


class LocalEngine(Engine):
    """In process, on Arrow tables: for inputs that fit in memory. Needs no pyspark."""

    def describe(self) -> str:
        return "in-process (no Spark)"

    def output(self, out: Path, name: str) -> Path:
        return out / f"{name}.parquet"

    def dataset(self, out: Path, name: str) -> Path:
        return out / name / "part-0.parquet"

    def read(self, source: str | Path) -> pa.Table:
        return read_entries(source)

    def decode_table(self, entries: pa.Table, **options: Any) -> pa.Table:
        """Decode in slices, with a progress bar on a terminal."""
        processors = options.pop("processors", None)
        keys = load_key_files(tuple(sorted((options.pop("crypto_key_files", None) or {}).items())))
        opts = _native.DecodeOptions(**options)
        step = 4096
        parts = []
        with Bar(self.progress, "decode", total=entries.num_rows) as bar:
            for start in range(0, max(entries.num_rows, 1), step):
                piece = entries.slice(start, step)
                parts.append(decode_carrying(piece, options=opts, processors=processors, crypto_keys=keys))
                bar.update(piece.num_rows, data_bytes(piece))
        return pa.concat_tables(parts)

    def decode(self, source: str | Path, out: str | Path, *, count: bool = True, **options: Any) -> tuple[int, int]:
        messages = self.decode_table(read_entries(source, keep_errors=True), **options)
        pq.write_table(marked(messages), out)
        return messages.num_rows, messages.num_rows - messages["error"].null_count

    def stats(self, source: str | Path, messages: str | Path | None = None) -> Stats:
        entries = read_entries(source, keep_errors=True)
        decoded = pq.read_table(messages) if messages is not None else self.decode_table(entries)
        return stats_from_arrow(entries.drop_columns(["error"]), decoded)

    def compact(self, source: str | Path, outputs: dict[str, Path], *, head: int = 0, **options: Any) -> Compacted:
        started = time.perf_counter()
        if isinstance(source, ClusterTopic):
            table = read_entries(source)
            batches: Any = table.to_batches
            empty = table.schema
        else:
            files = entry_files(source)
            empty = compaction_input_schema(files)

            def batches() -> Iterator[pa.RecordBatch]:
                return entry_batches(files)

        # The TXN_ABORT markers come after their messages: find the aborted transactions first (a pass
        # over the entries' metadata), so that their messages are skipped as `compact` skips them.
        def passes(what: str, total: int | None) -> Iterator[pa.RecordBatch]:
            with Bar(self.progress, what, total=total) as bar:
                for batch in batches():
                    yield batch
                    bar.update(batch.num_rows, data_bytes(batch))

        aborted: set[tuple[int, int]] = set()
        count = 0
        for batch in passes("compact 1/3: transactions", None):
            aborted.update(_native.aborted_transactions(batch))
            count += batch.num_rows
        compactor = Compactor(**options, aborted_transactions=sorted(aborted))
        # Two passes over the files: memory is bounded by the number of keys, not the topic.
        for batch in passes("compact 2/3: latest per key", count):
            compactor.observe(batch)
        parts = [compactor.write(batch) for batch in passes("compact 3/3: write", count)]
        if not parts:  # no entries: empty outputs, as on Spark
            parts = [compactor.write(pa.RecordBatch.from_pylist([], schema=empty))]
        compacted = pa.concat_tables(parts)
        view = TableView.from_entries(compacted).to_arrow()
        tables = {"compacted": compacted, "records": to_ledger_records(compacted), "view": view}
        for name, path in outputs.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(tables[name], path)
        took = time.perf_counter() - started
        if options.get("strategy") is None:
            summary = compaction_summary(compactor.stats(), took)
        else:
            summary = f"{compacted.num_rows:,} entries in {took * 1000:.0f} ms"
        return Compacted(summary, view.num_rows, view.slice(0, head).to_pylist())

    def reassemble_chunks(self, messages: str | Path) -> pa.Table:
        return _native.reassemble_chunks(pq.read_table(messages))

    def seek(self, source: str | Path, t: int) -> list[SeekResult]:
        if isinstance(source, ClusterTopic) and len(source.layout().partitions) > 1:
            return self._seek_partitions(source, t)
        entries = read_entries(source).sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
        if entries.num_rows == 0:
            raise CliError(f"{source}: no entries")
        pos = find_position_by_time(entries, t)
        where = "past the last entry" if pos.row >= entries.num_rows else f"row {pos.row:,}"
        note = f"({where}; read {pos.entries_read} of {entries.num_rows:,} entries)"
        return [SeekResult(-1, pos.ledger_id, pos.entry_id, note)]

    def _seek_partitions(self, source: ClusterTopic, t: int) -> list[SeekResult]:
        """Seek in each partition of a partitioned cluster topic (each in topic order already)."""
        import pyarrow.compute as pc

        entries = read_entries(source)
        out = []
        for part in source.layout().partitions:
            mine = entries.filter(pc.equal(entries["partition"], part.partition))
            if mine.num_rows == 0:
                continue
            pos = find_position_by_time(mine, t)
            where = "past the last entry" if pos.row >= mine.num_rows else f"row {pos.row:,}"
            note = f"({where}; read {pos.entries_read} of {mine.num_rows:,} entries)"
            out.append(SeekResult(part.partition, pos.ledger_id, pos.entry_id, note))
        if not out:
            raise CliError(f"{source}: no entries")
        return out

    def last_message_position(
        self,
        source: str | Path,
        *,
        topic: str | Path | None = None,
        read_compacted: bool = True,
        horizon: tuple[int, int] | None = None,
    ) -> MessagePosition:
        return last_message_position(
            read_entries(source),
            topic_entries=read_entries(topic) if topic is not None else None,
            read_compacted=read_compacted,
            horizon=horizon,
        )


# ----------------------------------------------------------------------------- Spark


class SparkEngine(Engine):
    """On Spark with :mod:`pulsar_entries.spark`; the session starts at the first step that needs it."""

    distributed = True
    directory_outputs = True

    def __init__(self, progress: bool, master: str, debug: bool = False, conf: dict[str, str] | None = None) -> None:
        super().__init__(progress)
        self.master = master
        self.debug = debug
        #: Settings the session starts with (``export --spark-conf``).
        self.conf = dict(conf or {})
        self._session: SparkSession | None = None
        self._kept: dict[str, DataFrame] | None = None

    @property
    def spark(self) -> SparkSession:
        """The Spark session for this run: embedded `local[*]` unless --master says otherwise."""
        if self._session is None:
            try:
                from pyspark.sql import SparkSession
            except ImportError as e:
                raise CliError(f"the spark engine needs pyspark: {install_hint('spark')}, or use --engine local") from e
            from pyspark.errors import PySparkRuntimeError

            if self.master.startswith("local"):
                # Executors on this machine run this interpreter, which has pulsar_entries.
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
                os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = (
                SparkSession.builder.master(self.master)
                .appName("pulsar-entries")
                .config("spark.ui.showConsoleProgress", "true" if self.progress else "false")
                .config("spark.sql.shuffle.partitions", str(max(4, os.cpu_count() or 4)))
            )
            for key, value in self.conf.items():
                builder = builder.config(key, value)
            if not self.debug:
                # Spark's log noise (startup warnings, each failed task's stack
                # traces) stays out of the way; the error line says what failed.
                options = f"-Dlog4j2.configurationFile={quiet_log_config()}"
                builder = builder.config("spark.driver.extraJavaOptions", options)
                builder = builder.config("spark.executor.extraJavaOptions", options)
            try:
                if self.debug:
                    spark = builder.getOrCreate()
                else:
                    with filtered_jvm_stderr():
                        spark = builder.getOrCreate()
            except PySparkRuntimeError as e:
                condition = getattr(e, "getCondition", e.getErrorClass)()
                if condition == "JAVA_GATEWAY_EXITED":
                    java = os.environ.get("JAVA_HOME")
                    where = f"JAVA_HOME={java}" if java else "java on the PATH"
                    raise CliError(
                        f"could not start Spark: its Java process exited at once ({where}); Spark needs Java 17 or "
                        "21: install it and set JAVA_HOME, or use --engine local (no Spark, no Java)"
                    ) from e
                raise
            if not self.debug:
                spark.sparkContext.setLogLevel("OFF")
            self._session = spark
        return self._session

    @property
    def ps(self) -> ModuleType:
        """:mod:`pulsar_entries.spark`, once the session is up (which says what is missing)."""
        if self._session is None:
            self.spark  # noqa: B018 - first: without pyspark, a one-line error that says what to install
        from .. import spark

        return spark

    def reuse_inputs(self) -> None:
        # Each input path's DataFrame is planned once and cached by the first action that reads it:
        # the demo reads its entries in five steps.
        self._kept = {}

    def entries(self, source: str | Path | ClusterTopic) -> DataFrame:
        ps = self.ps
        if isinstance(source, ClusterTopic):
            # Read from the cluster on the driver (bookies, tiered storage), then handed to Spark; one
            # chunk per column (PySpark 4.3's createDataFrame drops the rows after an empty record batch).
            return self.spark.createDataFrame(source.entries().combine_chunks())
        if self._kept is None:
            return ps.read_entries(self.spark, str(source))
        key = str(source)
        if key not in self._kept:
            self._kept[key] = ps.read_entries(self.spark, key).cache()
        return self._kept[key]

    def _written(self, path: str | Path) -> None:
        """``path`` was just (re)written: what was kept of it is stale."""
        if self._kept is not None and str(path) in self._kept:
            self._kept.pop(str(path)).unpersist()

    def describe(self) -> str:
        return "embedded Spark " + self.master

    def output(self, out: Path, name: str) -> Path:
        return out / name

    def dataset(self, out: Path, name: str) -> Path:
        return out / name

    def read(self, source: str | Path) -> pa.Table:
        return self.entries(source).drop("error").toArrow()

    def decode(self, source: str | Path, out: str | Path, *, count: bool = True, **options: Any) -> tuple[int, int]:
        ps = self.ps
        ps.decode(self.entries(source), **options).write.mode("overwrite").parquet(str(out))
        self._written(out)
        if not count:
            return -1, -1
        from pyspark.sql import functions as F

        rows, errors = self.spark.read.parquet(str(out)).agg(F.count("*"), F.count("error")).collect()[0]
        return rows, errors

    def stats(self, source: str | Path, messages: str | Path | None = None) -> Stats:
        from ._report import stats_from_spark

        ps = self.ps
        entries = self.entries(source)
        decoded = self.spark.read.parquet(str(messages)) if messages is not None else ps.decode(entries)
        return stats_from_spark(entries, decoded)

    def compact(self, source: str | Path, outputs: dict[str, Path], *, head: int = 0, **options: Any) -> Compacted:
        ps = self.ps
        started = time.perf_counter()
        path = outputs["compacted"]
        ps.compact(self.entries(source).drop("error"), **options).write.mode("overwrite").parquet(str(path))
        self._written(path)
        written = self.entries(path)
        if "records" in outputs:
            ps.to_ledger_records(written).write.mode("overwrite").parquet(str(outputs["records"]))
        view = ps.compacted_view(written)
        if "view" in outputs:
            view.write.mode("overwrite").parquet(str(outputs["view"]))
            keys = self.spark.read.parquet(str(outputs["view"])).count()
        else:
            keys = view.count()
        rows = written.count()
        took = time.perf_counter() - started
        view_head = view.limit(head).toArrow().to_pylist() if head else []
        return Compacted(f"{rows:,} entries in {took:.1f}s", keys, view_head)

    def reassemble_chunks(self, messages: str | Path) -> pa.Table:
        ps = self.ps
        # Ledgers are files, so Spark partitions: messages crossing a ledger go through the shuffle.
        return ps.reassemble_chunks(self.spark.read.parquet(str(messages))).filter("status IS NOT NULL").toArrow()

    def seek(self, source: str | Path, t: int) -> list[SeekResult]:
        ps = self.ps
        rows = ps.find_position_by_time(self.entries(source), t).collect()
        if not rows:
            raise CliError(f"{source}: no entries")
        return [SeekResult(r["partition"], r["ledger_id"], r["entry_id"]) for r in rows]

    def last_message_position(
        self,
        source: str | Path,
        *,
        topic: str | Path | None = None,
        read_compacted: bool = True,
        horizon: tuple[int, int] | None = None,
    ) -> MessagePosition:
        if topic is not None or horizon is not None:
            # Choosing between the topic and its compacted ledger reads a few
            # entries of each: in process.
            return LocalEngine(self.progress).last_message_position(
                source, topic=topic, read_compacted=read_compacted, horizon=horizon
            )
        ps = self.ps
        return ps.last_message_position(self.entries(source))


#: ``--engine auto`` runs in process when the input is at most this many bytes: 1 GiB, or a sixteenth of
#: this machine's memory when that is less. The local engine holds the input and its decoded rows (about
#: three to four times the input) in memory, and starts in well under a second where Spark takes ten or
#: more; past this size Spark's partitioned, spilling plan is the safer choice.
LOCAL_MAX_BYTES = 2**30


def local_limit() -> int:
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return LOCAL_MAX_BYTES
    return min(LOCAL_MAX_BYTES, max(memory // 16, 64 * 2**20))


def mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def input_size(source: str | Path | ClusterTopic) -> tuple[int, str]:
    """The bytes ``source`` holds and what was measured: the entry files and offload objects under a
    path, or a topic's ledgers as the metadata store sizes them (an open ledger counts 0 there: its
    size is written when it closes)."""
    if isinstance(source, ClusterTopic):
        ledgers = [ledger for part in source.layout().partitions for ledger in part.ledgers]
        return sum(max(0, ledger.size) for ledger in ledgers), f"topic of {len(ledgers)} ledgers"
    import pyarrow.fs as pafs

    from .._inputs import filesystem_for

    fs, root = filesystem_for(str(source))
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.File:
        return info.size or 0, "input"
    found = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    return sum(i.size or 0 for i in found if i.type == pafs.FileType.File), "input"


def pick_engine(
    requested: str, *, command: str, master_given: bool, source: str | Path | ClusterTopic | None
) -> tuple[str, str]:
    """The engine to run on and why. ``auto`` (the default) runs on Spark when ``--master`` is given or
    for the demo (it shows the Spark path), and otherwise in process when pyspark is missing or the
    input is at most :func:`local_limit` bytes, on Spark when it is larger."""
    if requested != "auto":
        return requested, f"--engine {requested}"
    if master_given:
        return "spark", "--master given"
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        return "local", "auto: pyspark is not installed"
    if command == "demo" or source is None:
        return "spark", "auto: the demo runs its steps on Spark; --engine local runs them in process"
    size, what = input_size(source)
    limit = local_limit()
    if size <= limit:
        return "local", f"auto: {what} {mib(size)}, at most {mib(limit)}; --engine spark runs it on Spark"
    return "spark", f"auto: {what} {mib(size)}, over {mib(limit)}; --engine local runs it in process"


def engine_for(name: str, *, progress: bool, master: str, debug: bool = False) -> Engine:
    """The engine ``--engine`` names."""
    if name == "local":
        return LocalEngine(progress)
    return SparkEngine(progress, master, debug)


#: What the JVM prints at startup whatever its log configuration says; dropped unless --debug.
JVM_STARTUP_NOISE = (
    b"WARNING: Using incubator modules: ",
    b"Setting default log level to ",
    b"To adjust logging level use ",
)


def _is_noise(line: bytes) -> bool:
    return line.lstrip(b"\r").startswith(JVM_STARTUP_NOISE)


def _may_become_noise(partial: bytes) -> bool:
    text = partial.lstrip(b"\r")
    return any(n.startswith(text) or text.startswith(n) for n in JVM_STARTUP_NOISE)


@contextmanager
def filtered_jvm_stderr() -> Iterator[None]:
    """Starts the Spark JVM (in the block) with its stderr through a filter.
    What it prints while starting is held back: passed on (less the lines of
    :data:`JVM_STARTUP_NOISE`) once it has started, dropped when starting
    failed (the error line says why). After that its output (progress bars)
    passes as it comes, less those lines. The JVM inherits fd 2 when it
    starts; this process's own fd 2 is restored when the block ends."""
    import threading

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2: nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    lock = threading.Lock()
    live = [False]
    held: list[bytes] = []

    def emit(data: bytes) -> None:
        with lock:
            if live[0]:
                os.write(saved, data)
            else:
                held.append(data)

    def forward() -> None:
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as source:
            while True:
                chunk = source.read(65536)
                if not chunk:
                    if pending and not _is_noise(pending):
                        emit(pending)
                    return
                *lines, pending = (pending + chunk).split(b"\n")
                kept = b"".join(line + b"\n" for line in lines if not _is_noise(line))
                if pending and not _may_become_noise(pending):  # a progress bar: pass it on now
                    kept, pending = kept + pending, b""
                if kept:
                    emit(kept)

    threading.Thread(target=forward, name="pulsar-entries-jvm-stderr", daemon=True).start()
    os.dup2(write_end, 2)
    os.close(write_end)
    started = False
    try:
        yield
        started = True
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        with lock:
            startup = b"".join(held) if started else b""
            held.clear()
            live[0] = True
            if startup:
                os.write(saved, startup)


QUIET_LOG4J2 = """\
# pulsar-entries: Spark's logs off unless --debug; errors reach the user as one line.
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
rootLogger.level = off
rootLogger.appenderRef.console.ref = console
"""


def quiet_log_config() -> str:
    """A log4j2 configuration that silences Spark's JVM (written once per user to the temp directory)."""
    import tempfile

    user = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"pulsar-entries-log4j2-quiet-{user}.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J2:
        tmp = path.with_name(f"{path.name}.{os.getpid()}")
        tmp.write_text(QUIET_LOG4J2)
        os.replace(tmp, path)
    return str(path)
