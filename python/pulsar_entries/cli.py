"""The `pulsar-entries` command line.

Runs on embedded local Spark by default; `--master` points it at a cluster and
`--engine local` runs in-process on Arrow tables, without Spark, for small
inputs. Errors are one line on stderr and a non-zero exit; `--debug` shows the
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import (
    __version__,
    decode,
    find_position_by_offset,
    find_position_by_time,
    parse_entry,
    reassemble_chunks,
    with_message_ids,
)
from .compaction import Compactor, MessagePosition, last_message_position
from .report import Stats, render_html, render_text, stats_from_arrow, stats_from_spark
from .sample import generate_topic


class CliError(Exception):
    """A user-facing error: printed as one line."""


# ----------------------------------------------------------------------------- engines


def _spark(args: argparse.Namespace) -> Any:
    """The Spark session for this run: embedded `local[*]` unless --master says otherwise."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise CliError(
            "the spark engine needs pyspark: pip install 'pulsar-entries[spark]', or use --engine local"
        ) from e
    if args.master.startswith("local"):
        # Executors on this machine run this interpreter, which has pulsar_entries.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(args.master)
        .appName("pulsar-entries")
        .config("spark.ui.showConsoleProgress", "true" if _progress(args) else "false")
        .config("spark.sql.shuffle.partitions", str(max(4, os.cpu_count() or 4)))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read_entries(path: Path) -> pa.Table:
    from .datasource import list_inputs, read_file

    try:
        files = list_inputs(str(path))
    except FileNotFoundError as e:
        raise CliError(str(e)) from None
    return pa.Table.from_batches([b for item in files for b in read_file(*item)]).drop_columns(["error"])


def _decode_local(entries: pa.Table, show_progress: bool, **options: Any) -> pa.Table:
    """In-process decode in slices, with a progress bar on a terminal."""
    step = 4096
    parts = []
    for start in range(0, max(entries.num_rows, 1), step):
        parts.append(decode(entries.slice(start, step), **options))
        if show_progress:
            done = min(entries.num_rows, start + step)
            width = 30
            filled = width * done // max(entries.num_rows, 1)
            print(
                f"\r  decoding [{'#' * filled}{'.' * (width - filled)}] {done:,}/{entries.num_rows:,} entries",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if show_progress:
        print(file=sys.stderr)
    return pa.concat_tables(parts)


def _progress(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() and not args.quiet


def _stats(args: argparse.Namespace, path: Path) -> Stats:
    if args.engine == "local":
        entries = _read_entries(path)
        return stats_from_arrow(entries, _decode_local(entries, _progress(args)))
    from . import spark as ps

    spark = _spark(args)
    entries = ps.read_entries(spark, str(path))
    return stats_from_spark(entries, ps.decode(entries))


# ----------------------------------------------------------------------------- commands


def _entry_files(path: Path) -> list[tuple[str, ...]]:
    """The inputs under ``path``: entry tables and offload objects (see the data source)."""
    from .datasource import list_inputs

    try:
        return list_inputs(str(path))
    except FileNotFoundError as e:
        raise CliError(str(e)) from None


def _batches(files: list[tuple[str, ...]]):
    """Entry batches (``ledger_id``, ``entry_id``, ``data``), one input at a time."""
    from .datasource import read_file

    for item in files:
        for batch in read_file(*item):
            yield batch.drop_columns(["error"])


def _compaction_summary(stats: dict, took: float) -> str:
    rate = stats["messages_read"] / took if took else float("inf")
    return (
        f"{stats['entries_read']:,} entries ({stats['messages_read']:,} messages, {stats['keys']:,} keys) -> "
        f"{stats['entries_written']:,} entries ({stats['messages_written']:,} messages) "
        f"in {took * 1000:.0f} ms ({rate:,.0f} messages/s); "
        f"{stats['tombstones']:,} tombstones, {stats['null_key_dropped']:,} key-less dropped, "
        f"{stats['markers']:,} markers, {stats['unreadable_entries']:,} unreadable kept unchanged"
    )


def _describe(position: MessagePosition) -> str:
    if position == MessagePosition.EARLIEST:
        return f"{tuple(position)} (EARLIEST: no message)"
    return f"{position.ledger_id}:{position.entry_id}:{position.batch_index} (publish time {position.publish_time})"


def _write_sample(topic: Any, out: Path) -> tuple[Path, Path, int]:
    """The sample topic twice: Parquet entry tables (one file per ledger, one
    Spark partition each) and tiered-storage offload objects (one per ledger)."""
    from .offload import write_offloaded_ledgers

    entries_dir, offload_dir = out / "entries", out / "offload"
    for d in (entries_dir, offload_dir):
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():  # a rerun replaces the sample, it does not add to it
            if old.is_file():
                old.unlink()
    ledgers = pc.unique(topic.entries["ledger_id"]).to_pylist()
    for ledger in ledgers:
        part = topic.entries.filter(pc.equal(topic.entries["ledger_id"], ledger))
        pq.write_table(part, entries_dir / f"ledger-{ledger}.parquet")
    objects = write_offloaded_ledgers(topic.entries, offload_dir)
    return entries_dir, offload_dir, len(objects)


def cmd_generate(args: argparse.Namespace) -> None:
    out = Path(args.out)
    topic = generate_topic(args.entries, seed=args.seed)
    entries_dir, offload_dir, objects = _write_sample(topic, out)
    print(
        f"wrote {topic.entries.num_rows:,} entries ({topic.messages:,} messages, {topic.chunked_messages} chunked, "
        f"{topic.kafka_entries} KoP entries, {topic.marker_entries} markers, {topic.corrupt_entries} corrupt)\n"
        f"  as Parquet entry tables: {entries_dir}\n"
        f"  as tiered-storage offload objects ({objects} ledgers): {offload_dir}\n"
        f"both hold the same topic: give commands one of the two directories"
    )


def cmd_decode(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    if args.engine == "local":
        entries = _read_entries(Path(args.input))
        messages = _decode_local(
            entries, _progress(args), verify_checksum=not args.no_verify, keep_markers=args.keep_markers
        )
        pq.write_table(messages, args.out)
        rows, errors = messages.num_rows, messages.num_rows - messages["error"].null_count
    else:
        from . import spark as ps

        spark = _spark(args)
        df = ps.decode(
            ps.read_entries(spark, args.input), verify_checksum=not args.no_verify, keep_markers=args.keep_markers
        )
        df.write.mode("overwrite").parquet(args.out)
        written = spark.read.parquet(args.out)
        rows, errors = written.count(), written.filter("error IS NOT NULL").count()
    took = time.perf_counter() - started
    print(f"decoded into {rows:,} rows ({errors:,} error rows) in {took:.1f}s -> {args.out}")


def cmd_inspect(args: argparse.Namespace) -> None:
    st = _stats(args, Path(args.input))
    print(render_text(st))
    if args.html:
        Path(args.html).write_text(render_html(st, f"pulsar-entries: {args.input}"))
        print(f"report written to {args.html}")


def _strategy(spec: str | None) -> Any:
    """``--strategy``: a built-in name, or ``module:Class`` for a user strategy."""
    from . import strategies

    if spec is None:
        return None
    builtins = {
        "latest-wins": strategies.LatestWins,
        "first-wins": strategies.FirstWins,
        "versioned-state": strategies.VersionedState,
    }
    if spec in builtins:
        return builtins[spec]()
    if ":" not in spec:
        raise CliError(f"--strategy must be one of {', '.join(builtins)} or MODULE:CLASS, not {spec!r}")
    import importlib

    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)()
    except (ImportError, AttributeError) as e:
        raise CliError(f"--strategy {spec}: {e}") from None


def _compacted_outputs(out: Path) -> dict[str, Path]:
    return {"compacted": out / "compacted", "records": out / "ledger-records", "view": out / "view"}


def cmd_compact(args: argparse.Namespace) -> None:
    from .compaction import to_ledger_records

    out = Path(args.out)
    paths = _compacted_outputs(out)
    strategy = _strategy(args.strategy)
    started = time.perf_counter()
    if args.engine == "local":
        files = _entry_files(Path(args.input))
        compactor = Compactor(
            order=args.order,
            strategy=strategy,
            retain_null_key=args.retain_null_key,
            verify_checksum=not args.no_verify,
        )
        # Two passes over the files: memory is bounded by the number of keys, not the topic.
        for batch in _batches(files):
            compactor.observe(batch)
        parts = [compactor.write(batch) for batch in _batches(files)]
        compacted = pa.concat_tables(parts) if parts else None
        if compacted is None:
            raise CliError(f"{args.input}: no entries")
        for p in paths.values():
            p.mkdir(parents=True, exist_ok=True)
        pq.write_table(compacted, paths["compacted"] / "part-0.parquet")
        pq.write_table(to_ledger_records(compacted), paths["records"] / "part-0.parquet")
        view = _view_local(compacted)
        pq.write_table(view, paths["view"] / "part-0.parquet")
        took = time.perf_counter() - started
        summary = (
            _compaction_summary(compactor.stats(), took)
            if strategy is None
            else (f"{compacted.num_rows:,} entries in {took * 1000:.0f} ms")
        )
        keys = view.num_rows
    else:
        from . import spark as ps

        spark = _spark(args)
        entries = ps.read_entries(spark, args.input).drop("error")
        compacted = ps.compact(
            entries,
            order=args.order,
            strategy=strategy,
            retain_null_key=args.retain_null_key,
            verify_checksum=not args.no_verify,
        )
        compacted.write.mode("overwrite").parquet(str(paths["compacted"]))
        written = ps.read_entries(spark, str(paths["compacted"]))
        ps.to_ledger_records(written).write.mode("overwrite").parquet(str(paths["records"]))
        ps.compacted_view(written).write.mode("overwrite").parquet(str(paths["view"]))
        n = written.count()
        keys = spark.read.parquet(str(paths["view"])).count()
        took = time.perf_counter() - started
        summary = f"{n:,} entries in {took:.1f}s"
    print(
        f"compacted {summary}; {keys:,} keys in the view\n"
        f"  compacted entries: {paths['compacted']}\n  compacted-ledger records: {paths['records']}\n"
        f"  compacted view (key -> latest value): {paths['view']}"
    )


def _view_local(compacted: pa.Table) -> pa.Table:
    from .table_view import TableView

    return TableView.from_entries(compacted).to_arrow()


def cmd_last_id(args: argparse.Namespace) -> None:
    horizon = None
    if args.horizon:
        try:
            ledger, entry = (int(x) for x in args.horizon.split(":"))
        except ValueError:
            raise CliError(f"--horizon must be LEDGER:ENTRY, not {args.horizon!r}") from None
        horizon = (ledger, entry)
    if args.engine == "spark" and not args.topic and horizon is None:
        from . import spark as ps

        position = ps.last_message_position(ps.read_entries(_spark(args), args.input))
    else:
        compacted = _read_entries(Path(args.input))
        topic = _read_entries(Path(args.topic)) if args.topic else None
        position = last_message_position(
            compacted, topic_entries=topic, read_compacted=not args.no_read_compacted, horizon=horizon
        )
    print(_describe(position))


def _parse_time(text: str) -> int:
    """Milliseconds since the epoch, from digits or ISO-8601 (UTC unless it says otherwise)."""
    import datetime as dt

    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"--time must be ms since the epoch or ISO-8601 (2026-01-31T12:00:00Z), not {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def cmd_seek(args: argparse.Namespace) -> None:
    t = _parse_time(args.time)
    if args.engine == "local":
        entries = _read_entries(Path(args.input))
        entries = entries.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
        if entries.num_rows == 0:
            raise CliError(f"{args.input}: no entries")
        pos = find_position_by_time(entries, t)
        where = "past the last entry" if pos.row >= entries.num_rows else f"row {pos.row:,}"
        print(f"{pos.ledger_id}:{pos.entry_id} ({where}; read {pos.entries_read} of {entries.num_rows:,} entries)")
        return
    from . import spark as ps

    rows = ps.find_position_by_time(ps.read_entries(_spark(args), args.input), t).collect()
    if not rows:
        raise CliError(f"{args.input}: no entries")
    for r in rows:
        prefix = "" if r["partition"] < 0 else f"partition {r['partition']}: "
        print(f"{prefix}{r['ledger_id']}:{r['entry_id']}")


def cmd_demo(args: argparse.Namespace) -> None:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    on_spark = args.engine == "spark"
    engine = "embedded Spark " + args.master if on_spark else "in-process (no Spark)"
    print(f"== generate: a sample topic of {args.entries:,} entries in {out}")
    topic = generate_topic(args.entries, seed=args.seed)
    entries_dir, offload_dir, objects = _write_sample(topic, out)
    print(
        f"   {topic.messages:,} messages ({topic.kafka_messages:,} Kafka records in {topic.kafka_entries} KoP entries, "
        f"{topic.chunked_messages} chunked in {topic.chunk_entries} chunk entries), {topic.marker_entries} markers, "
        f"{topic.corrupt_entries} corrupt entries; broker-stamped, index 0..{topic.offsets - 1:,}"
    )
    print(f"   written as Parquet ({entries_dir}) and as {objects} tiered-storage offload objects ({offload_dir})")
    spark = _spark(args) if on_spark else None
    print(f"== decode on {engine}")
    started = time.perf_counter()
    if spark is None:
        messages = _decode_local(topic.entries, _progress(args))
        pq.write_table(messages, out / "messages.parquet")
        st = stats_from_arrow(topic.entries, messages)
    else:
        from . import spark as ps

        decoded = ps.decode(ps.read_entries(spark, str(entries_dir)))
        decoded.write.mode("overwrite").parquet(str(out / "messages"))
        st = stats_from_spark(ps.read_entries(spark, str(entries_dir)), spark.read.parquet(str(out / "messages")))
    took = time.perf_counter() - started
    print(f"   {st.messages:,} messages in {took:.1f}s -> {out / ('messages' if on_spark else 'messages.parquet')}")
    # A row per message and per chunk entry; a corrupt entry is one error row.
    expected = topic.messages - topic.chunked_messages + topic.chunk_entries - topic.corrupt_messages
    if st.messages != expected or st.error_rows != topic.corrupt_entries:
        raise CliError(
            f"counts do not reconcile: {st.messages} rows decoded != {expected} expected, "
            f"or {st.error_rows} error rows != {topic.corrupt_entries} corrupt entries"
        )
    print(
        f"   reconciled: {st.messages:,} rows = {expected - topic.chunk_entries:,} messages + {topic.chunk_entries} "
        f"chunk entries; {topic.corrupt_messages:,} messages in {st.error_rows} corrupt entries"
    )
    print("== read the offload objects (tiered storage) with the data source")
    _print_offload(spark, topic.entries, offload_dir)
    print("== reassemble chunked messages (PIP-107)")
    _print_chunks(spark, topic, out)
    print("== seek by broker time and by offset (PIP-70)")
    _print_seeks(spark, topic.entries, entries_dir)
    print("== inspect")
    print(render_text(st))
    print("== compact (publishing order, as the broker's default compactor)")
    compacted = _demo_compact(spark, topic.entries, entries_dir, out)
    print("== last message position of the compacted topic (PIP-429)")
    if spark is None:
        position = last_message_position(compacted)
    else:
        from . import spark as ps

        position = ps.last_message_position(ps.read_entries(spark, str(out / "compacted")))
    print(f"   {_describe(position)}")
    report = out / "report.html"
    report.write_text(render_html(st, "pulsar-entries demo topic"))
    print(f"== report written to {report}")


def _print_offload(spark: Any, entries: pa.Table, offload_dir: Path) -> None:
    """Reads the offload objects back and checks they hold the topic's entries, byte for byte."""
    if spark is None:
        read = _read_entries(offload_dir)
    else:
        from . import spark as ps

        read = ps.read_entries(spark, str(offload_dir)).drop("error").toArrow()
    order = [("ledger_id", "ascending"), ("entry_id", "ascending")]
    same = (
        read.select(["ledger_id", "entry_id", "data"])
        .sort_by(order)
        .cast(entries.select(["ledger_id", "entry_id", "data"]).schema)
        .equals(entries.select(["ledger_id", "entry_id", "data"]).sort_by(order))
    )
    ledgers = pc.count_distinct(read["ledger_id"]).as_py()
    print(
        f"   {read.num_rows:,} entries from {ledgers} ledgers; identical to the Parquet copy: {'yes' if same else 'NO'}"
    )
    if not same:
        raise CliError("the offload objects do not hold the topic's entries")


def _print_chunks(spark: Any, topic: Any, out: Path) -> None:
    """Reassembles the sample's chunked messages and checks every chunk is accounted for."""
    if spark is None:
        rows = reassemble_chunks(decode(topic.entries))
    else:
        from . import spark as ps

        # Ledgers are files, so Spark partitions: messages crossing a ledger go through the shuffle.
        rows = ps.reassemble_chunks(spark.read.parquet(str(out / "messages"))).filter("status IS NOT NULL").toArrow()
    rows = rows.filter(pc.is_valid(rows["status"]))
    statuses: dict[str, int] = {}
    for status in rows["status"].to_pylist():
        statuses[status] = statuses.get(status, 0) + 1
    held = sum(len(ids) for ids in rows["chunk_ledger_ids"].to_pylist() if ids)
    print(
        f"   chunked messages: {statuses.get('complete', 0)} reassembled from {held} chunk entries "
        f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})"
    )
    if (held, statuses.get("complete", 0), statuses.get("duplicate", 0)) != (
        topic.chunk_entries,
        topic.chunked_messages,
        topic.duplicate_chunks,
    ):
        raise CliError(f"chunk counts do not reconcile: {held} chunk entries held, statuses {statuses}")
    complete = rows.filter(pc.equal(rows["status"], "complete"))
    complete = with_message_ids(complete.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")]))
    for row in complete.slice(0, 5).to_pylist():
        print(
            f"   {row['uuid']:<16} {len(row['chunk_ledger_ids']):>3} chunks  {row['compression']:<6} "
            f"{len(row['value']):>8,} bytes  id {row['message_id_str']}"
        )
    if complete.num_rows > 5:
        print(f"   ... and {complete.num_rows - 5} more")


def _demo_compact(spark: Any, entries: pa.Table, entries_dir: Path, out: Path) -> pa.Table:
    from .compaction import to_ledger_records

    started = time.perf_counter()
    if spark is None:
        compactor = Compactor()
        compactor.observe(entries)
        compacted = compactor.write(entries)
        took = time.perf_counter() - started
        pq.write_table(compacted, out / "compacted.parquet")
        pq.write_table(to_ledger_records(compacted), out / "ledger-records.parquet")
        view = _view_local(compacted)
        print(f"   {_compaction_summary(compactor.stats(), took)} -> {out / 'compacted.parquet'}")
    else:
        from . import spark as ps

        ps.compact(ps.read_entries(spark, str(entries_dir)).drop("error")).write.mode("overwrite").parquet(
            str(out / "compacted")
        )
        took = time.perf_counter() - started
        compacted = spark.read.parquet(str(out / "compacted")).toArrow()
        ps.to_ledger_records(ps.read_entries(spark, str(out / "compacted"))).write.mode("overwrite").parquet(
            str(out / "ledger-records")
        )
        view = ps.compacted_view(ps.read_entries(spark, str(out / "compacted"))).toArrow()
        kept = pe_decode_count(compacted)
        print(
            f"   {entries.num_rows:,} entries -> {compacted.num_rows:,} compacted entries ({kept:,} live messages) "
            f"in {took:.1f}s on Spark -> {out / 'compacted'}"
        )
    print(f"   compacted view: {view.num_rows:,} keys; compacted-ledger records written")
    for row in view.slice(0, 3).to_pylist():
        print(
            f"   {row['key']!r:>12} -> {row['value'][:40]!r} at {row['ledger_id']}:{row['entry_id']}:{row['batch_index']}"
        )
    return compacted


def pe_decode_count(compacted: pa.Table) -> int:
    """Messages still live in compacted entries (slots not compacted out)."""
    messages = decode(compacted.select(["ledger_id", "entry_id", "data"]))
    live = pc.and_(pc.is_null(messages["error"]), pc.invert(pc.fill_null(messages["compacted_out"], False)))
    return pc.sum(live.cast(pa.int64())).as_py() or 0


def _fmt_ms(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _print_seeks(spark: Any, entries: pa.Table, entries_dir: Path) -> None:
    """A broker-time seek into the middle of the topic, and an offset seek."""
    first = parse_entry(entries["data"][0].as_py())["broker_entry_metadata"]["broker_timestamp"]
    last = parse_entry(entries["data"][-1].as_py())["broker_entry_metadata"]["broker_timestamp"]
    t = first + (last - first) * 3 // 5
    pos = find_position_by_time(entries, t)
    found = parse_entry(entries["data"][pos.row].as_py())
    bem = found["broker_entry_metadata"]
    base = bem["index"] - (found["num_messages"] - 1)
    print(
        f"   seek to {_fmt_ms(t)}: entry {pos.ledger_id}:{pos.entry_id} (index {bem['index']:,}, "
        f"broker time {_fmt_ms(bem['broker_timestamp'])}); read {pos.entries_read} of {entries.num_rows:,} entries"
    )
    if spark is not None:
        from . import spark as ps

        row = ps.find_position_by_time(ps.read_entries(spark, str(entries_dir)), t).first()
        if row is None:
            raise CliError("the Spark seek found no entries")
        agree = (row["ledger_id"], row["entry_id"]) == (pos.ledger_id, pos.entry_id)
        print(
            f"   the same seek on Spark: entry {row['ledger_id']}:{row['entry_id']} ({'agrees' if agree else 'DIFFERS'})"
        )
        if not agree:
            raise CliError("the Spark seek and the in-process seek disagree")
    pos = find_position_by_offset(entries, base + 1 if found["num_messages"] > 1 else base)
    print(
        f"   seek to offset {base + (1 if found['num_messages'] > 1 else 0):,}: entry {pos.ledger_id}:{pos.entry_id}, "
        f"batch index {pos.batch_index}; read {pos.entries_read} entries"
    )


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pulsar-entries",
        description="Decode, inspect, compact and generate Apache Pulsar stored entries, outside the broker. "
        "Runs on embedded local Spark by default.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark (default): run on Spark; local: in-process on Arrow tables, for small inputs",
    )
    p.add_argument(
        "--master",
        default="local[*]",
        help="Spark master URL (default local[*]: embedded Spark); e.g. yarn, spark://host:7077, k8s://...",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="write a realistic sample topic, as Parquet entry tables (OUT/entries) and offload objects (OUT/offload)",
    )
    g.add_argument("out", metavar="OUT", help="output directory")
    g.add_argument("--entries", type=int, default=1000, help="number of entries (default 1000)")
    g.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("decode", help="decode entries into messages, written as Parquet")
    d.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow), offload objects, or a directory of them")
    d.add_argument("out", metavar="OUT", help="output: a Parquet directory (spark) or file (local)")
    d.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    d.add_argument("--keep-markers", action="store_true", help="keep marker entries as rows")
    d.set_defaults(func=cmd_decode)

    i = sub.add_parser("inspect", help="summarize a topic: counts, codecs, sizes, time range, errors")
    i.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow), offload objects, or a directory of them")
    i.add_argument("--html", metavar="FILE", help="also write an HTML report with charts to FILE")
    i.set_defaults(func=cmd_inspect)

    c = sub.add_parser(
        "compact",
        help="compact a topic as the broker does: compacted entries, compacted-ledger records and the view",
    )
    c.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow), offload objects, or a directory of them")
    c.add_argument("out", metavar="OUT", help="output directory: OUT/compacted, OUT/ledger-records, OUT/view (Parquet)")
    c.add_argument(
        "--strategy",
        help="PIP-215 strategy: latest-wins, first-wins, versioned-state, or MODULE:CLASS (a user strategy)",
    )
    c.add_argument(
        "--order", choices=["publish", "event_time"], default="publish", help="survivor order (default publish)"
    )
    c.add_argument("--retain-null-key", action="store_true", help="keep messages without a key")
    c.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    c.set_defaults(func=cmd_compact)

    sk = sub.add_parser("seek", help="the position a consumer seeking to a broker time lands on (PIP-70)")
    sk.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow), offload objects, or a directory of them")
    sk.add_argument("--time", required=True, help="ms since the epoch, or ISO-8601 (UTC unless a zone is given)")
    sk.set_defaults(func=cmd_seek)

    li = sub.add_parser("last-id", help="print the last message position of compacted entries (PIP-429)")
    li.add_argument("input", metavar="IN", help="compacted entries (Parquet/Arrow file or directory)")
    li.add_argument("--topic", help="the topic's entries, to choose the source as GetLastMessageId does")
    li.add_argument("--horizon", help="compaction horizon LEDGER:ENTRY (default: the topic's last entry)")
    li.add_argument("--no-read-compacted", action="store_true", help="answer as a reader without readCompacted")
    li.set_defaults(func=cmd_last_id)

    m = sub.add_parser(
        "demo",
        help="the main job: generate a sample topic, then decode, read offload, reassemble, seek, inspect, "
        "compact and last-id",
    )
    m.add_argument("--dir", default="sample-topic", help="working directory (default ./sample-topic)")
    m.add_argument("--entries", type=int, default=2000, help="entries in the sample topic (default 2000)")
    m.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    m.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line for the user; --debug for the traceback
        if args.debug:
            raise
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"pulsar-entries: error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
