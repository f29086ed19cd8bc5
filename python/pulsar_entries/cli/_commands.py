"""The commands: each parses its arguments, runs the steps on the engine
``--engine`` chose (see :mod:`._engines`) and prints what it did."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import strategies
from .._compaction import MessagePosition
from .._sample import generate_topic
from .._times import parse_time
from ..offload import write_offloaded_ledgers
from ._engines import Engine, engine_for
from ._errors import CliError
from ._report import render_html, render_text


def engine(args: argparse.Namespace) -> Engine:
    """The engine of this run; Spark starts only when a step needs it."""
    return engine_for(args.engine, progress=progress(args), master=args.master)


def progress(args: argparse.Namespace) -> bool:
    import sys

    return sys.stderr.isatty() and not args.quiet


def describe(position: MessagePosition) -> str:
    if position == MessagePosition.EARLIEST:
        return f"{tuple(position)} (EARLIEST: no message)"
    return f"{position.ledger_id}:{position.entry_id}:{position.batch_index} (publish time {position.publish_time})"


def write_sample(topic: Any, out: Path) -> tuple[Path, Path, int]:
    """The sample topic twice: Parquet entry tables (one file per ledger, one
    Spark partition each) and tiered-storage offload objects (one per ledger)."""
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
    entries_dir, offload_dir, objects = write_sample(topic, out)
    print(
        f"wrote {topic.entries.num_rows:,} entries ({topic.messages:,} messages, {topic.chunked_messages} chunked, "
        f"{topic.kafka_entries} KoP entries, {topic.marker_entries} markers, {topic.corrupt_entries} corrupt)\n"
        f"  as Parquet entry tables: {entries_dir}\n"
        f"  as tiered-storage offload objects ({objects} ledgers): {offload_dir}\n"
        f"both hold the same topic: give commands one of the two directories"
    )


def cmd_decode(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    rows, errors = engine(args).decode(
        args.input,
        args.out,
        verify_checksum=not args.no_verify,
        keep_markers=args.keep_markers,
        utf8_errors=args.utf8_errors,
    )
    took = time.perf_counter() - started
    print(f"decoded into {rows:,} rows ({errors:,} error rows) in {took:.1f}s -> {args.out}")


def cmd_inspect(args: argparse.Namespace) -> None:
    st = engine(args).stats(args.input)
    print(render_text(st))
    if args.html:
        Path(args.html).write_text(render_html(st, f"pulsar-entries: {args.input}"))
        print(f"report written to {args.html}")


def parse_strategy(spec: str | None) -> Any:
    """``--strategy``: a built-in name, or ``module:Class`` for a user strategy."""
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


def cmd_compact(args: argparse.Namespace) -> None:
    out = Path(args.out)
    strategy = parse_strategy(args.strategy)
    runner = engine(args)
    names = {"compacted": "compacted", "records": "ledger-records", "view": "view"}
    done = runner.compact(
        args.input,
        {key: runner.dataset(out, name) for key, name in names.items()},
        order=args.order,
        strategy=strategy,
        retain_null_key=args.retain_null_key,
        verify_checksum=not args.no_verify,
    )
    print(
        f"compacted {done.summary}; {done.keys:,} keys in the view\n"
        f"  compacted entries: {out / 'compacted'}\n  compacted-ledger records: {out / 'ledger-records'}\n"
        f"  compacted view (key -> latest value): {out / 'view'}"
    )


def cmd_last_id(args: argparse.Namespace) -> None:
    horizon = None
    if args.horizon:
        try:
            ledger, entry = (int(x) for x in args.horizon.split(":"))
        except ValueError:
            raise CliError(f"--horizon must be LEDGER:ENTRY, not {args.horizon!r}") from None
        horizon = (ledger, entry)
    position = engine(args).last_message_position(
        args.input, topic=args.topic, read_compacted=not args.no_read_compacted, horizon=horizon
    )
    print(describe(position))


def cmd_seek(args: argparse.Namespace) -> None:
    try:
        t = parse_time(args.time)
    except ValueError:
        raise CliError(
            f"--time must be ms since the epoch or ISO-8601 (2026-01-31T12:00:00Z), not {args.time!r}"
        ) from None
    for r in engine(args).seek(args.input, t):
        prefix = "" if r.partition < 0 else f"partition {r.partition}: "
        print(f"{prefix}{r.ledger_id}:{r.entry_id}" + (f" {r.note}" if r.note else ""))
