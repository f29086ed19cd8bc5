"""The commands: each parses its arguments, runs the steps on the engine
``--engine`` chose (see :mod:`._engines`) and prints what it did."""

from __future__ import annotations

import argparse
import json
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import strategies
from .._compaction import MessagePosition
from .._sample import generate_topic
from .._times import parse_time
from ..offload import write_offloaded_ledgers
from ._engines import Engine, engine_for, pick_engine
from ._errors import CliError
from ._output import marked, staged
from ._progress import progress
from ._report import render_html, render_text
from ._topic import ClusterTopic, crypto_key_files, inputs, source


def engine(args: argparse.Namespace, src: Any = None) -> Engine:
    """The engine of this run, chosen once (:func:`._engines.pick_engine`; ``src`` is the command's
    input) and said on stderr when ``--engine`` was left to ``auto``. Spark starts only when a step
    needs it."""
    chosen = getattr(args, "chosen_engine", None)
    if chosen is None:
        name, why = pick_engine(
            args.engine, command=args.command, master_given=getattr(args, "master_given", False), source=src
        )
        if args.engine == "auto" and not args.quiet:
            import sys

            print(f"engine: {'Spark' if name == 'spark' else 'local, in process'} ({why})", file=sys.stderr)
        chosen = args.chosen_engine = engine_for(name, progress=progress(args), master=args.master, debug=args.debug)
    return chosen


def describe(position: MessagePosition) -> str:
    if position == MessagePosition.EARLIEST:
        return f"{tuple(position)} (EARLIEST: no message)"
    return f"{position.ledger_id}:{position.entry_id}:{position.batch_index} (publish time {position.publish_time})"


def write_sample(topic: Any, out: Path) -> tuple[Path, Path, int]:
    """The sample topic twice: Parquet entry tables (one file per ledger, one
    Spark partition each) and tiered-storage offload objects (one per ledger).
    ``out`` is a new directory (the staged output: see :mod:`._output`)."""
    entries_dir, offload_dir = out / "entries", out / "offload"
    for d in (entries_dir, offload_dir):
        d.mkdir(parents=True)
    ledgers = pc.unique(topic.entries["ledger_id"]).to_pylist()
    for ledger in ledgers:
        part = topic.entries.filter(pc.equal(topic.entries["ledger_id"], ledger))
        pq.write_table(part, entries_dir / f"ledger-{ledger}.parquet")
    objects = write_offloaded_ledgers(topic.entries, offload_dir)
    return entries_dir, offload_dir, len(objects)


def cmd_generate(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if args.entries < 1:
        raise CliError(f"--entries must be at least 1 (a sample topic has entries), not {args.entries}")
    topic = generate_topic(args.entries, seed=args.seed)
    with staged(out, directory=True, overwrite=args.overwrite) as tmp:
        objects = write_sample(topic, Path(tmp))[2]
    entries_dir, offload_dir = out / "entries", out / "offload"
    print(
        f"wrote {topic.entries.num_rows:,} entries ({topic.messages:,} messages, {topic.chunked_messages} chunked, "
        f"{topic.kafka_entries} KoP entries, {topic.marker_entries} markers, {topic.corrupt_entries} corrupt)\n"
        f"  as Parquet entry tables: {entries_dir}\n"
        f"  as tiered-storage offload objects ({objects} ledgers): {offload_dir}\n"
        f"both hold the same topic: give commands one of the two directories"
    )


def typed_schema(args: argparse.Namespace, src: Any) -> Any:
    """The schema ``--typed`` or ``--schema`` asks for, else ``None``."""
    if args.no_value and not (args.typed or args.schema):
        raise CliError("--no-value goes with --typed or --schema")
    if args.typed and args.schema:
        raise CliError("give --typed (the topic's schema) or --schema FILE, not both")
    if args.schema:
        try:
            with open(args.schema, encoding="utf-8") as f:
                given = json.load(f)
        except (OSError, ValueError) as e:
            raise CliError(f"--schema {args.schema}: {e}") from None
        if not isinstance(given, dict):
            raise CliError(f"--schema {args.schema}: expected a JSON object in Pulsar's SchemaInfo shape")
        return given
    if not args.typed:
        return None
    if not isinstance(src, ClusterTopic):
        raise CliError(
            "--typed reads a topic's schema: IN must be persistent://tenant/ns/topic (or give --schema FILE)"
        )
    from .. import schemas

    try:
        return schemas.topic_schemas(
            src.name,
            metadata_url=src.options["metadata_url"],
            admin_token=src.options["admin_token"],
            admin_auth=src.options.get("admin_auth"),
            admin_tls=src.options.get("admin_tls"),
            metadata_access=src.options.get("metadata_access"),
            bookie_tls=src.read.get("bookie_tls"),
            timeout=src.options["timeout"],
        )
    except LookupError as e:
        raise CliError(str(e)) from None


def cmd_decode(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    src = source(args)  # a misused option is reported before anything about OUT
    runner = engine(args, src)
    schema = typed_schema(args, src)
    options: dict[str, Any] = dict(
        verify_checksum=not args.no_verify, keep_markers=args.keep_markers, utf8_errors=args.utf8_errors
    )
    keys = crypto_key_files(args)
    if keys:
        options["crypto_key_files"] = keys
    with staged(args.out, inputs=inputs(args), directory=runner.directory_outputs, overwrite=args.overwrite) as tmp:
        if schema is None:
            rows, errors = runner.decode(src, tmp, **options)
        else:
            rows, errors = decode_typed(
                src, Path(tmp), schema, directory=runner.directory_outputs, no_value=args.no_value, **options
            )
    took = time.perf_counter() - started
    print(f"decoded into {rows:,} rows ({errors:,} error rows) in {took:.1f}s -> {args.out}")


def decode_typed(
    src: Any, out: Path, schema: Any, *, directory: bool, no_value: bool = False, **options: Any
) -> tuple[int, int]:
    """Entries decoded (chunks reassembled) with the schema as typed columns, in process; one
    Parquet file, inside the directory when the engine writes directories."""
    from .. import schemas
    from .._cluster.read import entries_to_messages
    from ._engines import read_entries

    keys = options.pop("crypto_key_files", None)
    messages = entries_to_messages(read_entries(src, keep_errors=True), crypto_keys=keys, **options)
    table = schemas.typed(messages, schema, value_column=not no_value)
    if directory:
        out.mkdir(parents=True, exist_ok=True)
        out = out / "part-00000.parquet"
    pq.write_table(marked(table), out)
    return table.num_rows, table.num_rows - table["error"].null_count


def cmd_inspect(args: argparse.Namespace) -> None:
    src = source(args)
    if args.html:
        from ._charts import require_matplotlib

        require_matplotlib()  # before any work
    report = (
        staged(args.html, inputs=inputs(args), directory=False, overwrite=args.overwrite)
        if args.html
        else nullcontext("")
    )
    with report as tmp:  # checked before any work
        st = engine(args, src).stats(src)
        print(render_text(st))
        if args.html:
            Path(tmp).write_text(render_html(st, f"pulsar-entries: {args.input}"))
    if args.html:
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
    names = {"compacted": "compacted", "records": "ledger-records", "view": "view"}
    src = source(args)
    runner = engine(args, src)
    with staged(out, inputs=inputs(args), directory=True, overwrite=args.overwrite) as tmp:
        done = runner.compact(
            src,
            {key: runner.dataset(Path(tmp), name) for key, name in names.items()},
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
    src = source(args)
    if isinstance(src, ClusterTopic):
        if args.topic or horizon:
            raise CliError("with a cluster topic as IN, --topic and --horizon come from the cluster: leave them out")
        # The compacted ledger, the topic and the horizon, all from the cluster (read on this machine).
        position = src.last_message_position(read_compacted=not args.no_read_compacted)
    else:
        position = engine(args, src).last_message_position(
            src, topic=args.topic, read_compacted=not args.no_read_compacted, horizon=horizon
        )
    print(describe(position))


def cmd_seek(args: argparse.Namespace) -> None:
    try:
        t = parse_time(args.time)
    except ValueError:
        raise CliError(
            f"--time must be ms since the epoch or ISO-8601 (2026-01-31T12:00:00Z), not {args.time!r}"
        ) from None
    src = source(args)
    for r in engine(args, src).seek(src, t):
        prefix = "" if r.partition < 0 else f"partition {r.partition}: "
        print(f"{prefix}{r.ledger_id}:{r.entry_id}" + (f" {r.note}" if r.note else ""))
