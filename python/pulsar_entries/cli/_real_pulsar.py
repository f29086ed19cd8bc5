"""A real Apache Pulsar standalone from the CLI: ``pulsar-entries standalone`` and the demo's
real-Pulsar step (a topic written through the broker by Pulsar's own Python client, then read from
storage with the ``format("pulsar")`` source, or ``read_topic`` on the local engine)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from .._install import install_hint
from .._standalone import PULSAR_VERSION, Standalone, StandaloneError, missing_tools, resolve_lib
from ._engines import Engine, SparkEngine
from ._errors import CliError

#: The demo topic: written by pulsar-client with an AVRO schema, keys and properties.
DEMO_TOPIC = "persistent://public/default/demo-orders"
DEMO_MESSAGES = 3000
_CUSTOMERS = 40
_REGIONS = ("eu-west", "us-east", "ap-south")


def _broker_config() -> dict[str, Any]:
    # No transactions (a quicker start) and no chunking; ledgers of 10 entries (Standalone's
    # default), so the topic spans a few.
    return {"transactionCoordinatorEnabled": "false", "maxMessageSize": 5 * 1024 * 1024}


def _start(lib: Path, workdir: Path, say: Callable[[str], None]) -> Standalone:
    standalone = Standalone(lib, workdir, max_entries_per_ledger=10, config=_broker_config())
    say(f"starting Apache Pulsar {PULSAR_VERSION} standalone on 127.0.0.1 (RocksDB metadata store) ...")
    standalone.start()
    say(
        f"standalone up in {standalone.ready_seconds:.1f}s (pid {standalone.pid}): {standalone.service_url}, "
        f"{standalone.web_url}"
    )
    return standalone


def cmd_standalone(args: argparse.Namespace) -> None:
    """Starts a standalone on loopback, prints its URLs and waits; Ctrl-C (or SIGTERM) stops it."""
    missing = missing_tools()
    if missing:
        raise CliError(f"the standalone needs {' and '.join(missing)} on PATH (Java 17+, Maven 3.8+)")
    try:
        lib = resolve_lib(Path(args.cache_dir) if args.cache_dir else None, progress=print)
    except StandaloneError as e:
        raise CliError(str(e)) from None
    own = args.dir is None
    workdir = Path(tempfile.mkdtemp(prefix="pulsar-standalone-")) if own else Path(args.dir)
    standalone = None
    # SIGINT too: a shell starts background jobs with SIGINT ignored, which Python then keeps.
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            standalone = _start(lib, workdir, print)
        except StandaloneError as e:
            raise CliError(str(e)) from None
        print(f"service URL {standalone.service_url}")
        print(f"admin URL   {standalone.web_url}")
        if not own:
            print(f"metadata    rocksdb:{standalone.metadata_dir} (readable once the standalone is stopped)")
        print(f"log         {standalone.log_path}")
        print("Ctrl-C stops it", flush=True)
        while standalone.proc is not None and standalone.proc.poll() is None:
            time.sleep(0.5)
        raise CliError(f"the standalone exited with {standalone.proc.returncode if standalone.proc else '?'}")
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if standalone is not None:
            standalone.stop()
            print(f"standalone stopped (pid {standalone.pid})")
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def skip_reason(args: argparse.Namespace) -> str | None:
    """Why the demo's real-Pulsar step does not run here, or None when it can."""
    if getattr(args, "no_real_pulsar", False):
        return "--no-real-pulsar"
    missing = missing_tools()
    if missing:
        return f"{' and '.join(missing)} not on PATH"
    try:
        import pulsar.schema

        if not hasattr(pulsar.schema, "AvroSchema"):
            return "pulsar-client has no AVRO support (pip install 'pulsar-client[avro]')"
    except ImportError:
        return f"pulsar-client is not installed ({install_hint('spark')})"
    return None


def demo_real_pulsar(
    args: argparse.Namespace, runner: Engine, out: Path, shown: Callable[[Path], Path]
) -> pa.Table | None:
    """The demo's real-Pulsar step, or one line saying why it is skipped; the rows it read, if it ran."""
    reason = skip_reason(args)
    if reason is not None:
        print(f"== real Pulsar: skipped ({reason}); the demo ran on generated sample data only")
        return None
    print(f"== real Pulsar: a topic written through a {PULSAR_VERSION} standalone, read from its storage")
    try:
        lib = resolve_lib(progress=lambda line: print(f"   {line}", flush=True))
    except (StandaloneError, OSError) as e:
        print(f"   skipped (Maven could not resolve the Pulsar jars: {e}); the demo ran on generated sample data only")
        return None
    print(f"   jars: {lib} ({sum(1 for _ in lib.glob('*.jar'))} jars)")
    workdir = Path(tempfile.mkdtemp(prefix="pulsar-entries-demo-"))
    standalone = None
    try:
        try:
            standalone = _start(lib, workdir, lambda line: print(f"   {line}", flush=True))
        except StandaloneError as e:
            raise CliError(str(e)) from None
        written = _produce(standalone.service_url, DEMO_TOPIC, DEMO_MESSAGES)
        started = time.perf_counter()
        rows, how = _read(runner, standalone.web_url, DEMO_TOPIC)
        reads = 1
        # Read live: a reader sees the open ledger up to its last-add-confirmed, which the bookie
        # learns with the next add or the broker's explicit-LAC tick; read again until it caught up.
        while rows.num_rows < len(written) and time.perf_counter() - started < 30:
            time.sleep(0.5)
            rows, how = _read(runner, standalone.web_url, DEMO_TOPIC)
            reads += 1
        took = time.perf_counter() - started
        print(
            f"   read live with {how} in {took:.1f}s ({reads} read{'s' if reads > 1 else ''}): {rows.num_rows:,} rows, "
            "typed columns from the AVRO schema"
        )
        _print_rows(rows)
        _reconcile(written, rows)
        path = out / "real-pulsar-topic.parquet"
        import pyarrow.parquet as pq

        pq.write_table(rows, path)
        print(f"   typed rows written to {shown(path)}")
        total = len(written)
        if isinstance(runner, SparkEngine):
            _stream(runner, standalone, len(written), out, shown)
            total += STREAM_MESSAGES
        _export(standalone, total, out, shown)
        return rows
    finally:
        if standalone is not None:
            standalone.stop()
            print(f"   standalone stopped (pid {standalone.pid})")
        shutil.rmtree(workdir, ignore_errors=True)


#: Messages the demo writes while its stream runs.
STREAM_MESSAGES = 300


def _stream(runner: SparkEngine, standalone: Standalone, before: int, out: Path, shown: Callable[[Path], Path]) -> None:
    """A few seconds of ``spark.readStream.format("pulsar")``: the topic from its start while more
    messages are written, into a Parquet sink, until every message is there once."""
    spark = runner.spark
    sink, checkpoint = out / "real-pulsar-stream", out / "real-pulsar-stream-checkpoint"
    query = (
        spark.readStream.format("pulsar")
        .option("adminUrl", standalone.web_url)
        .option("topic", DEMO_TOPIC)
        .option("valueColumn", "false")
        .option("maxEntriesPerTrigger", "20")
        .load()
        .writeStream.format("parquet")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start(str(sink))
    )
    started = time.perf_counter()
    try:
        _produce(standalone.service_url, DEMO_TOPIC, STREAM_MESSAGES, first=before)
        total = before + STREAM_MESSAGES
        rows = 0
        while time.perf_counter() - started < 90:
            if query.exception() is not None:
                raise CliError(f"the stream failed: {str(query.exception()).splitlines()[0]}")
            # A file is there before its micro-batch commits it to the sink's log, and a read of the sink
            # reads only what the log holds (nothing: no schema to infer); read once a batch is in the log.
            if any((sink / "_spark_metadata").glob("[0-9]*")):
                rows = spark.read.parquet(str(sink)).count()
                if rows >= total:
                    break
            time.sleep(1)
        batches = sum(1 for p in query.recentProgress if p["numInputRows"])
    finally:
        query.stop()
    if rows < total:
        raise CliError(f"the stream did not catch up in 90 s: {rows} of {total} messages in its sink")
    table = spark.read.parquet(str(sink)).select("ledger_id", "entry_id", "batch_index").toArrow()
    distinct = len(set(zip(*(table[c].to_pylist() for c in table.column_names))))
    if table.num_rows != total or distinct != total:
        raise CliError(
            f"the stream does not reconcile: {total} messages written, {table.num_rows} rows, {distinct} distinct"
        )
    print(
        f'   streamed with spark.readStream.format("pulsar") for {time.perf_counter() - started:.1f}s '
        f"({batches} micro-batches of at most 20 entries): {total:,} rows = every message once, "
        f"{STREAM_MESSAGES} of them written while it ran; sink {shown(sink)}"
    )


def _export(standalone: Standalone, total: int, out: Path, shown: Callable[[Path], Path]) -> None:
    """The topic exported to a Delta table (``pulsar_entries.export``), then read back with SQL."""
    try:
        from deltalake import DeltaTable, QueryBuilder
    except ImportError:
        print(f"   export to Delta: skipped ({install_hint('delta')} for it)")
        return
    from ..export import export_topic

    path = out / "demo-orders-delta"
    started = time.perf_counter()
    rows = commits = 0
    # As the read above: the last entries become readable with the bookies' next last-add-confirmed.
    while rows < total and time.perf_counter() - started < 30:
        got = export_topic(DEMO_TOPIC, f"delta:{path}", admin_url=standalone.web_url)
        rows += got.rows
        commits += got.commits
        if rows < total:
            time.sleep(0.5)
    took = time.perf_counter() - started
    if rows != total:
        raise CliError(f"the export does not reconcile: {total} messages written, {rows} rows exported")
    sql = (
        "SELECT customer, count(*) AS orders, round(sum(amount), 2) AS amount FROM orders "
        "GROUP BY customer ORDER BY amount DESC, customer LIMIT 3"
    )
    table = DeltaTable(str(path))
    top = pa.table(QueryBuilder().register("orders", table).execute(sql).read_all())
    counted = pa.table(QueryBuilder().register("orders", table).execute("SELECT count(*) AS n FROM orders").read_all())
    n = counted["n"][0].as_py()
    if n != total:
        raise CliError(f"the Delta table does not reconcile: {total} messages written, {n} rows in the table")
    print(
        f"   exported to the Delta table {shown(path)} in {took:.1f}s ({commits} commit{'s' if commits > 1 else ''}, "
        f"exactly once: a rerun goes on from the table's own record); read back with SQL (delta-rs):"
    )
    print(f"     {sql}")
    for r in top.to_pylist():
        print(f"     {r['customer']:<14} {r['orders']:>5} orders  {r['amount']:>10,.2f}")
    print(f"     {n:,} rows = every message once")


def _produce(service_url: str, topic: str, count: int, first: int = 0) -> list[dict[str, Any]]:
    """Writes ``count`` messages through the broker with pulsar-client (AVRO schema, keys,
    properties, batching) and returns what was written, in order."""
    import pulsar
    from pulsar.schema import AvroSchema, Boolean, Double, Integer, Long, Record, String

    class Order(Record):
        _avro_namespace = "io.pulsarentries.demo"
        order_id = Long()
        customer = String()
        amount = Double()
        items = Integer()
        express = Boolean()

    written = []
    started = time.perf_counter()
    client = pulsar.Client(service_url, operation_timeout_seconds=30, logger=_quiet_logger())
    try:
        producer = client.create_producer(
            topic,
            schema=AvroSchema(Order),
            batching_enabled=True,
            batching_max_messages=100,
            batching_max_publish_delay_ms=5,
            max_pending_messages=1000,
            block_if_queue_full=True,
            compression_type=pulsar.CompressionType.LZ4,
        )
        failures: list[str] = []

        def done(result: Any, _mid: Any) -> None:
            if result != pulsar.Result.Ok:
                failures.append(str(result))

        for i in range(first, first + count):
            customer = f"customer-{i * 7 % _CUSTOMERS:02d}"
            value = {
                "order_id": 100_000 + i,
                "customer": customer,
                "amount": round(5 + (i * 37 % 10_000) / 100, 2),
                "items": 1 + i % 9,
                "express": i % 5 == 0,
            }
            properties = {"region": _REGIONS[i % len(_REGIONS)], "seq": str(i)}
            producer.send_async(Order(**value), done, partition_key=customer, properties=properties)
            written.append({"key": customer, "properties": properties, **value})
        producer.flush()
        producer.close()
        if failures:
            raise CliError(f"the broker refused {len(failures)} messages: {failures[0]}")
    finally:
        client.close()
    print(
        f"   wrote {count:,} messages to {topic} with pulsar-client {_client_version()} in "
        f"{time.perf_counter() - started:.1f}s: AVRO schema Order, {_CUSTOMERS} keys, properties, LZ4 batches"
    )
    return written


def _quiet_logger() -> Any:
    import logging

    logger = logging.getLogger("pulsar-entries.demo.pulsar-client")
    logger.setLevel(logging.ERROR)
    return logger


def _client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    with contextlib.suppress(PackageNotFoundError):
        return version("pulsar-client")
    return "?"


def _read(runner: Engine, admin_url: str, topic: str) -> tuple[pa.Table, str]:
    """The topic straight from storage (layout and schema from the admin REST API, entries from the
    bookie), typed by the topic's schema."""
    if isinstance(runner, SparkEngine):
        spark = runner.spark
        runner.ps.register(spark)
        df = (
            spark.read.format("pulsar")
            .option("adminUrl", admin_url)
            .option("topic", topic)
            .option("valueColumn", "false")
            .load()
        )
        return df.toArrow(), 'spark.read.format("pulsar") (adminUrl, typed=auto)'
    import pulsar_entries as pe

    return pe.read_topic(topic, admin_url=admin_url, typed=True, value_column=False), "read_topic(typed=True)"


def _sorted(rows: pa.Table) -> pa.Table:
    order = [("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")]
    return rows.sort_by(order)


def _print_rows(rows: pa.Table) -> None:
    head = _sorted(rows).slice(0, 5).to_pylist()
    for row in head:
        print(
            f"   {row['ledger_id']}:{row['entry_id']}:{row['batch_index']}  key {row['key']!s:<12} "
            f"order_id {row['order_id']}  customer {row['customer']}  amount {row['amount']:>7.2f}  "
            f"items {row['items']}  express {row['express']!s:<5}  properties {_props(row['properties'])}"
        )
    if rows.num_rows > len(head):
        print(f"   ... and {rows.num_rows - len(head):,} more")


def _props(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {str(k): str(v) for k, v in value}


def _reconcile(written: list[dict[str, Any]], rows: pa.Table) -> None:
    """Every message written is one row read, in order, with its key, properties and fields."""
    errors = [e for e in rows["error"].to_pylist() if e is not None]
    got = _sorted(rows).to_pylist()
    fields = ("order_id", "customer", "amount", "items", "express")
    mismatched = sum(
        1
        for w, r in zip(written, got)
        if r["key"] != w["key"] or _props(r["properties"]) != w["properties"] or any(r[f] != w[f] for f in fields)
    )
    if len(got) != len(written) or errors or mismatched:
        raise CliError(
            f"the real topic does not reconcile: {len(written)} messages written, {len(got)} rows read, "
            f"{len(errors)} error rows, {mismatched} rows differ from what was written"
        )
    entries = len({(r["ledger_id"], r["entry_id"]) for r in got})
    ledgers = len({r["ledger_id"] for r in got})
    print(
        f"   reconciled: {len(written):,} messages written = {len(got):,} rows read ({entries} entries in {ledgers} "
        f"ledgers); keys, properties and all {len(fields)} fields equal, in publishing order"
    )
