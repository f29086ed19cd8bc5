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

from . import __version__, decode, find_position_by_offset, find_position_by_time, parse_entry
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


def cmd_demo(args: argparse.Namespace) -> None:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    print(f"== generate: a sample topic of {args.entries:,} entries in {out}")
    topic = generate_topic(args.entries, seed=args.seed)
    pq.write_table(topic.entries, out / "entries.parquet")
    print(
        f"   {topic.messages:,} messages ({topic.kafka_messages:,} Kafka records in {topic.kafka_entries} KoP entries), "
        f"{topic.marker_entries} markers, {topic.corrupt_entries} corrupt entries; broker-stamped, "
        f"index 0..{topic.offsets - 1:,}"
    )
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
    print("== seek")
    _print_seeks(topic.entries)
    print("== inspect")
    print(summarize(topic.entries, messages))


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pulsar-entries",
        description="Decode, inspect and generate Apache Pulsar stored entries, outside the broker.",
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

    m = sub.add_parser("demo", help="generate a sample topic, decode it and print a summary")
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
