"""The `pulsar-entries` command line.

Runs in-process on Arrow tables. Errors are one line on stderr and a non-zero
exit; `--debug` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import __version__, decode, reassemble_chunks, with_message_ids
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
        f"   {topic.messages:,} messages ({topic.chunked_messages} of them chunked, in {topic.chunk_entries} chunk entries), "
        f"{topic.marker_entries} markers, {topic.corrupt_entries} corrupt entries"
    )
    print("== decode")
    started = time.perf_counter()
    rows = decode(topic.entries)
    took = time.perf_counter() - started
    decoded = rows["error"].null_count
    error_rows = rows.num_rows - decoded
    rate = decoded / took if took else float("inf")
    print(f"   {decoded:,} rows in {took * 1000:.0f} ms ({rate:,.0f} rows/s)")
    # Decode gives a row per message, per chunk entry, and per corrupt entry.
    expected = topic.messages - topic.chunked_messages - topic.corrupt_messages + topic.chunk_entries
    if decoded != expected or error_rows != topic.corrupt_entries:
        raise CliError(
            f"counts do not reconcile: {decoded} rows decoded != {expected} expected "
            f"(messages - chunked messages - messages in corrupt entries + chunk entries), "
            f"or {error_rows} error rows != {topic.corrupt_entries} corrupt entries"
        )
    print(
        f"   reconciled: {decoded:,} rows = {topic.messages - topic.chunked_messages - topic.corrupt_messages:,} messages "
        f"+ {topic.chunk_entries} chunk entries; {topic.corrupt_messages:,} messages in {error_rows} corrupt entries"
    )
    print("== reassemble chunks")
    started = time.perf_counter()
    messages = reassemble_chunks(rows)
    took = time.perf_counter() - started
    pq.write_table(messages, out / "messages.parquet")
    chunked = messages.filter(pc.is_valid(messages["status"]))
    statuses = Counter(chunked["status"].to_pylist())
    held = sum(len(ids) for ids in chunked["chunk_ledger_ids"].to_pylist())
    counts = ", ".join(f"{status} {n}" for status, n in sorted(statuses.items()))
    print(
        f"   chunked messages: {statuses.get('complete', 0)} reassembled from {held} chunk entries ({counts}) "
        f"in {took * 1000:.0f} ms -> {out / 'messages.parquet'}"
    )
    whole = messages["error"].null_count
    if (
        held != topic.chunk_entries
        or statuses.get("complete", 0) != topic.chunked_messages
        or statuses.get("duplicate", 0) != topic.duplicate_chunks
        or whole != topic.messages - topic.corrupt_messages
    ):
        raise CliError(
            f"chunk counts do not reconcile: {held} chunk entries held (expected {topic.chunk_entries}), "
            f"statuses {dict(statuses)}, {whole} whole messages (expected {topic.messages - topic.corrupt_messages})"
        )
    print(f"   reconciled: {whole:,} whole messages = {topic.messages:,} generated - {topic.corrupt_messages:,} in corrupt entries")
    complete = with_message_ids(chunked.filter(pc.equal(chunked["status"], "complete")))
    for row in complete.slice(0, 5).to_pylist():
        print(
            f"   {row['uuid']:<16} {len(row['chunk_ledger_ids']):>3} chunks  {row['compression']:<6} "
            f"{len(row['value']):>8,} bytes  id {row['message_id_str']}"
        )
    if complete.num_rows > 5:
        print(f"   ... and {complete.num_rows - 5} more")
    print("== inspect")
    print(summarize(topic.entries, rows))


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

    m = sub.add_parser("demo", help="generate a sample topic, decode it, reassemble its chunked messages, summarize")
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
