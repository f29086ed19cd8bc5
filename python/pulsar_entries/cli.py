"""The `pulsar-entries` command line.

Runs in-process on Arrow tables. Errors are one line on stderr and a non-zero
exit; `--debug` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__, decode
from .compaction import Compactor, MessagePosition, last_message_position
from .sample import generate_topic
from .summary import summarize


class CliError(Exception):
    """A user-facing error: printed as one line."""


def _read_entries(path: Path) -> pa.Table:
    if path.is_dir():
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise CliError(f"{path}: no .parquet entry files in this directory")
        return pa.concat_tables(pq.read_table(f) for f in files)
    if not path.exists():
        raise CliError(f"{path}: no such file or directory")
    return pq.read_table(path)


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
    entries = _read_entries(Path(args.input))
    started = time.perf_counter()
    messages = decode(entries, verify_checksum=not args.no_verify, keep_markers=args.keep_markers)
    took = time.perf_counter() - started
    pq.write_table(messages, args.out)
    errors = messages.num_rows - messages["error"].null_count
    print(
        f"decoded {entries.num_rows:,} entries into {messages.num_rows:,} rows "
        f"({errors:,} error rows) in {took:.2f}s -> {args.out}"
    )


def cmd_inspect(args: argparse.Namespace) -> None:
    entries = _read_entries(Path(args.input))
    print(summarize(entries, decode(entries)))


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
    print(f"== generate: a sample topic of {args.entries:,} entries in {out}")
    topic = generate_topic(args.entries, seed=args.seed)
    pq.write_table(topic.entries, out / "entries.parquet")
    print(f"   {topic.messages:,} messages, {topic.marker_entries} markers, {topic.corrupt_entries} corrupt entries")
    print("== decode")
    started = time.perf_counter()
    messages = decode(topic.entries)
    took = time.perf_counter() - started
    pq.write_table(messages, out / "messages.parquet")
    decoded = messages["error"].null_count
    error_rows = messages.num_rows - decoded
    rate = topic.messages / took if took else float("inf")
    print(f"   {decoded:,} messages in {took * 1000:.0f} ms ({rate:,.0f} messages/s) -> {out / 'messages.parquet'}")
    # Every message is either decoded or inside a corrupt entry, reported as one error row.
    if decoded != topic.messages - topic.corrupt_messages or error_rows != topic.corrupt_entries:
        raise CliError(
            f"counts do not reconcile: {decoded} decoded + {topic.corrupt_messages} in corrupt entries "
            f"!= {topic.messages} generated, or {error_rows} error rows != {topic.corrupt_entries} corrupt entries"
        )
    print(f"   reconciled: {decoded:,} decoded + {topic.corrupt_messages:,} in {error_rows} corrupt entries")
    print("== inspect")
    print(summarize(topic.entries, messages))
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pulsar-entries",
        description="Decode, inspect, compact and generate Apache Pulsar stored entries, outside the broker.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("generate", help="write a realistic sample topic as a Parquet entry table")
    g.add_argument("out", metavar="OUT", help="output directory")
    g.add_argument("--entries", type=int, default=1000, help="number of entries (default 1000)")
    g.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("decode", help="decode an entry table (Parquet file or directory) into messages (Parquet)")
    d.add_argument("input", metavar="IN", help="Parquet file or directory with ledger_id, entry_id, data")
    d.add_argument("out", metavar="OUT", help="output Parquet file")
    d.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    d.add_argument("--keep-markers", action="store_true", help="keep marker entries as rows")
    d.set_defaults(func=cmd_decode)

    i = sub.add_parser("inspect", help="print a summary of an entry table")
    i.add_argument("input", metavar="IN", help="Parquet file or directory with ledger_id, entry_id, data")
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
    except (CliError, OSError, ValueError, pa.ArrowException) as e:
        if args.debug:
            raise
        print(f"pulsar-entries: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
