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
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import (
    __version__,
    decode,
    entry_metadata,
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
        raise CliError("the spark engine needs pyspark: pip install 'pulsar-entries[spark]', or use --engine local") from e
    if args.master.startswith("local"):
        # Executors on this machine run this interpreter, which has pulsar_entries.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(args.master)
        .appName("pulsar-entries")
        .config("spark.ui.showConsoleProgress", "true")
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
            print(f"\r  decoding [{'#' * filled}{'.' * (width - filled)}] {done:,}/{entries.num_rows:,} entries",
                  end="", file=sys.stderr, flush=True)
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


def _entry_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise CliError(f"{path}: no .parquet entry files in this directory")
        return files
    if not path.exists():
        raise CliError(f"{path}: no such file or directory")
    return [path]


def _batches(files: list[Path]):
    for f in files:
        # pre_buffer=False: pyarrow would otherwise keep every row group it read.
        yield from pq.ParquetFile(f, pre_buffer=False).iter_batches(batch_size=1024)


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


def cmd_generate(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    topic = generate_topic(args.entries, seed=args.seed)
    pq.write_table(topic.entries, out / "entries.parquet")
    print(
        f"wrote {topic.entries.num_rows:,} entries ({topic.messages:,} messages, "
        f"{topic.marker_entries} markers, {topic.corrupt_entries} corrupt) to {out / 'entries.parquet'}"
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


def cmd_compact(args: argparse.Namespace) -> None:
    files = _entry_files(Path(args.input))
    compactor = Compactor(order=args.order, retain_null_key=args.retain_null_key, verify_checksum=not args.no_verify)
    started = time.perf_counter()
    # Two passes over the files: memory is bounded by the number of keys, not the topic.
    for batch in _batches(files):
        compactor.observe(batch)
    writer = None
    try:
        for batch in _batches(files):
            out = compactor.write(batch)
            if writer is None:
                writer = pq.ParquetWriter(args.out, out.schema)
            writer.write_table(out)
    finally:
        if writer is not None:
            writer.close()
    took = time.perf_counter() - started
    print(f"compacted {_compaction_summary(compactor.stats(), took)} -> {args.out}")


def cmd_last_id(args: argparse.Namespace) -> None:
    compacted = _read_entries(Path(args.input))
    topic = _read_entries(Path(args.topic)) if args.topic else None
    horizon = None
    if args.horizon:
        try:
            ledger, entry = (int(x) for x in args.horizon.split(":"))
        except ValueError:
            raise CliError(f"--horizon must be LEDGER:ENTRY, not {args.horizon!r}") from None
        horizon = (ledger, entry)
    position = last_message_position(
        compacted, topic_entries=topic, read_compacted=not args.no_read_compacted, horizon=horizon
    )
    print(_describe(position))


def cmd_demo(args: argparse.Namespace) -> None:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    engine = "embedded Spark " + args.master if args.engine == "spark" else "in-process (no Spark)"
    print(f"== generate: a sample topic of {args.entries:,} entries in {out}")
    topic = generate_topic(args.entries, seed=args.seed)
    entries_dir = out / "entries"
    entries_dir.mkdir(exist_ok=True)
    pq.write_table(topic.entries, entries_dir / "part-0.parquet")
    print(
        f"   {topic.messages:,} messages ({topic.kafka_messages:,} Kafka records in {topic.kafka_entries} KoP entries, "
        f"{topic.chunked_messages} chunked in {topic.chunk_entries} chunk entries), {topic.marker_entries} markers, "
        f"{topic.corrupt_entries} corrupt entries; broker-stamped, index 0..{topic.offsets - 1:,}"
    )
    print(f"== decode on {engine}")
    started = time.perf_counter()
    if args.engine == "local":
        messages = _decode_local(topic.entries, _progress(args))
        pq.write_table(messages, out / "messages.parquet")
        st = stats_from_arrow(topic.entries, messages)
    else:
        from . import spark as ps

        spark = _spark(args)
        decoded = ps.decode(ps.read_entries(spark, str(entries_dir)))
        decoded.write.mode("overwrite").parquet(str(out / "messages"))
        st = stats_from_spark(ps.read_entries(spark, str(entries_dir)), spark.read.parquet(str(out / "messages")))
    took = time.perf_counter() - started
    print(f"   {st.messages:,} messages in {took:.1f}s -> {out / ('messages' if args.engine == 'spark' else 'messages.parquet')}")
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
    print("== reassemble chunks")
    _print_chunks(topic)
    print("== seek")
    _print_seeks(topic.entries)
    print("== inspect")
    print(render_text(st))
    print("== compact (publishing order, as the broker's default compactor)")
    compactor = Compactor()
    started = time.perf_counter()
    compactor.observe(topic.entries)
    compacted = compactor.write(topic.entries)
    took = time.perf_counter() - started
    pq.write_table(compacted, out / "compacted.parquet")
    print(f"   {_compaction_summary(compactor.stats(), took)} -> {out / 'compacted.parquet'}")
    print("== last message position of the compacted topic (PIP-429)")
    print(f"   {_describe(last_message_position(compacted))}")
    report = out / "report.html"
    report.write_text(render_html(st, "pulsar-entries demo topic"))
    print(f"== report written to {report}")


def _print_chunks(topic: Any) -> None:
    """Reassembles the sample's chunked messages (PIP-107) and checks every chunk is accounted for."""
    import pyarrow.compute as pc

    is_chunk = pc.is_valid(entry_metadata(topic.entries["data"].combine_chunks())["uuid"])
    rows = reassemble_chunks(decode(topic.entries.filter(is_chunk)))
    statuses: dict[str, int] = {}
    for status in rows["status"].drop_null().to_pylist():
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
    complete = with_message_ids(rows.filter(pc.equal(rows["status"], "complete")))
    for row in complete.slice(0, 5).to_pylist():
        print(
            f"   {row['uuid']:<16} {len(row['chunk_ledger_ids']):>3} chunks  {row['compression']:<6} "
            f"{len(row['value']):>8,} bytes  id {row['message_id_str']}"
        )
    if complete.num_rows > 5:
        print(f"   ... and {complete.num_rows - 5} more")


def _fmt_ms(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _print_seeks(entries: pa.Table) -> None:
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

    g = sub.add_parser("generate", help="write a realistic sample topic as a Parquet entry table")
    g.add_argument("out", metavar="OUT", help="output directory")
    g.add_argument("--entries", type=int, default=1000, help="number of entries (default 1000)")
    g.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("decode", help="decode entries into messages, written as Parquet")
    d.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow) or a directory of them")
    d.add_argument("out", metavar="OUT", help="output: a Parquet directory (spark) or file (local)")
    d.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    d.add_argument("--keep-markers", action="store_true", help="keep marker entries as rows")
    d.set_defaults(func=cmd_decode)

    i = sub.add_parser("inspect", help="summarize a topic: counts, codecs, sizes, time range, errors")
    i.add_argument("input", metavar="IN", help="entry files (Parquet/Arrow) or a directory of them")
    i.add_argument("--html", metavar="FILE", help="also write an HTML report with charts to FILE")
    i.set_defaults(func=cmd_inspect)

    c = sub.add_parser("compact", help="compact an entry table as the broker does (two passes, bounded memory)")
    c.add_argument("input", metavar="IN", help="Parquet file or directory with ledger_id, entry_id, data in topic order")
    c.add_argument("out", metavar="OUT", help="output Parquet file of compacted entries")
    c.add_argument("--order", choices=["publish", "event_time"], default="publish", help="survivor order (default publish)")
    c.add_argument("--retain-null-key", action="store_true", help="keep messages without a key")
    c.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    c.set_defaults(func=cmd_compact)

    li = sub.add_parser("last-id", help="print the last message position of compacted entries (PIP-429)")
    li.add_argument("input", metavar="IN", help="compacted entries (Parquet file or directory)")
    li.add_argument("--topic", help="the topic's entries, to choose the source as GetLastMessageId does")
    li.add_argument("--horizon", help="compaction horizon LEDGER:ENTRY (default: the topic's last entry)")
    li.add_argument("--no-read-compacted", action="store_true", help="answer as a reader without readCompacted")
    li.set_defaults(func=cmd_last_id)

    m = sub.add_parser("demo", help="generate a sample topic, decode, compact it and print a summary")
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
