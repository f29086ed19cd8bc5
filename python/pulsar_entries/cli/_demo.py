"""``pulsar-entries demo``: the main job on a generated sample topic, on either engine, then (with
Java and Maven) a topic written through a real Pulsar standalone and read from its storage."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from .._broker import find_position_by_offset, find_position_by_time
from .._sample import generate_topic
from ._charts import require_matplotlib
from ._commands import describe, engine, write_sample
from ._engines import Engine
from ._errors import CliError
from ._output import staged
from ._real_pulsar import demo_real_pulsar
from ._report import render_html, render_text


def cmd_demo(args: argparse.Namespace) -> None:
    """The demo works in a staged directory, moved to ``--dir`` when every step passed."""
    out = Path(args.dir)
    if args.entries < 1:
        raise CliError(f"--entries must be at least 1 (a sample topic has entries), not {args.entries}")
    with staged(out, directory=True, overwrite=args.overwrite) as tmp:
        work = Path(tmp)
        work.mkdir()
        _demo(args, work, lambda p: out / Path(p).relative_to(work))
    print_next(out)


def print_next(out: Path) -> None:
    """Where the outputs are, and three commands to go on with."""
    names = sorted(p.name for p in out.iterdir())
    print(f"== done: everything is in {out}/ ({', '.join(names)})")
    print("   next:")
    print(f"   pulsar-entries --engine local inspect {out / 'entries'} --html report.html   # any entries, summarized")
    print(
        "   pulsar-entries --engine local decode orders messages.parquet --metadata-url zk:HOST:2181"
        "   # a topic of your cluster, from its storage"
    )
    print(
        '   pulsar-entries sql "SELECT key, count(*) FROM topic GROUP BY key" --topic orders '
        "--metadata-url zk:HOST:2181   # SQL on it, no Spark"
    )


def _demo(args: argparse.Namespace, out: Path, shown: Callable[[Path], Path]) -> None:
    runner = engine(args)
    runner.reuse_inputs()
    print(f"== generate: a sample topic of {args.entries:,} entries in {shown(out)}")
    topic = generate_topic(args.entries, seed=args.seed)
    entries_dir, offload_dir, objects = write_sample(topic, out)
    print(
        f"   {topic.messages:,} messages ({topic.kafka_messages:,} Kafka records in {topic.kafka_entries} KoP entries, "
        f"{topic.chunked_messages} chunked in {topic.chunk_entries} chunk entries), {topic.marker_entries} markers, "
        f"{topic.corrupt_entries} corrupt entries; broker-stamped, index 0..{topic.offsets - 1:,}"
    )
    print(
        f"   written as Parquet ({shown(entries_dir)}) and as {objects} tiered-storage offload objects "
        f"({shown(offload_dir)})"
    )
    print(f"== decode on {runner.describe()}")
    started = time.perf_counter()
    messages = runner.output(out, "messages")
    # The counts come from the statistics, which read the output anyway.
    runner.decode(entries_dir, messages, count=False)
    st = runner.stats(entries_dir, messages=messages)
    took = time.perf_counter() - started
    print(f"   {st.messages:,} messages in {took:.1f}s -> {shown(messages)}")
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
    _print_offload(runner, topic.entries, offload_dir)
    print("== reassemble chunked messages (PIP-107)")
    _print_chunks(runner, topic, messages)
    print("== seek by broker time and by offset (PIP-70)")
    _print_seeks(runner, topic.entries, entries_dir)
    print("== inspect")
    print(render_text(st))
    if runner.distributed and st.transactions.get("unknown"):
        # Not a mismatch: where and why the engines differ (README, "Spark").
        print(
            f"   on Spark txn_status is decided within each slice of about 1,024 entries a task decodes: the "
            f"{st.transactions['unknown']:,} 'unknown' rows belong to transactions whose end marker lies in a later "
            "slice; in process, which decodes the whole input at once, they are decided"
        )
    print("== compact (publishing order, as the broker's default compactor)")
    _demo_compact(runner, entries_dir, out, shown)
    print("== last message position of the compacted topic (PIP-429)")
    print(f"   {describe(runner.last_message_position(runner.output(out, 'compacted')))}")
    report = out / "report.html"
    try:
        require_matplotlib()
    except CliError as e:
        charts = False
        print(f"== report: skipped ({e})")
    else:
        charts = True
        report.write_text(render_html(st, "pulsar-entries demo topic"))
        print(f"== report written to {shown(report)}")
    real = demo_real_pulsar(args, runner, out, shown)
    if real is not None and charts:
        report.write_text(render_html(st, "pulsar-entries demo topic", real=real))
        print(f"== report: charts of the real Pulsar topic added to {shown(report)}")


def _print_offload(engine: Engine, entries: pa.Table, offload_dir: Path) -> None:
    """Reads the offload objects back and checks they hold the topic's entries, byte for byte."""
    read = engine.read(offload_dir)
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


def _print_chunks(engine: Engine, topic: Any, messages: Path) -> None:
    """Reassembles the sample's chunked messages and checks every chunk is accounted for."""
    rows = engine.reassemble_chunks(messages)
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
    complete = _native.with_message_ids(complete.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")]))
    for row in complete.slice(0, 5).to_pylist():
        print(
            f"   {row['uuid']:<16} {len(row['chunk_ledger_ids']):>3} chunks  {row['compression']:<6} "
            f"{len(row['value']):>8,} bytes  id {row['message_id_str']}"
        )
    if complete.num_rows > 5:
        print(f"   ... and {complete.num_rows - 5} more")


def _demo_compact(engine: Engine, entries_dir: Path, out: Path, shown: Callable[[Path], Path]) -> None:
    outputs = {
        "compacted": engine.output(out, "compacted"),
        "records": engine.output(out, "ledger-records"),
        "view": engine.output(out, "view"),
    }
    done = engine.compact(entries_dir, outputs, head=3)
    print(f"   {done.summary} -> {shown(outputs['compacted'])}")
    print(
        f"   compacted view: {done.keys:,} keys -> {shown(outputs['view'])}; compacted-ledger records -> "
        f"{shown(outputs['records'])}"
    )
    for row in done.view_head:
        print(
            f"   {row['key']!r:>12} -> {row['value'][:40]!r} at {row['ledger_id']}:{row['entry_id']}:{row['batch_index']}"
        )


def _fmt_ms(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _print_seeks(engine: Engine, entries: pa.Table, entries_dir: Path) -> None:
    """A broker-time seek into the middle of the topic, and an offset seek."""
    first = _native.parse_entry(entries["data"][0].as_py())["broker_entry_metadata"]["broker_timestamp"]
    last = _native.parse_entry(entries["data"][-1].as_py())["broker_entry_metadata"]["broker_timestamp"]
    t = first + (last - first) * 3 // 5
    pos = find_position_by_time(entries, t)
    found = _native.parse_entry(entries["data"][pos.row].as_py())
    bem = found["broker_entry_metadata"]
    base = bem["index"] - (found["num_messages"] - 1)
    print(
        f"   seek to {_fmt_ms(t)}: entry {pos.ledger_id}:{pos.entry_id} (index {bem['index']:,}, "
        f"broker time {_fmt_ms(bem['broker_timestamp'])}); read {pos.entries_read} of {entries.num_rows:,} entries"
    )
    if engine.distributed:
        row = engine.seek(entries_dir, t)[0]
        agree = (row.ledger_id, row.entry_id) == (pos.ledger_id, pos.entry_id)
        print(f"   the same seek on Spark: entry {row.ledger_id}:{row.entry_id} ({'agrees' if agree else 'DIFFERS'})")
        if not agree:
            raise CliError("the Spark seek and the in-process seek disagree")
    pos = find_position_by_offset(entries, base + 1 if found["num_messages"] > 1 else base)
    print(
        f"   seek to offset {base + (1 if found['num_messages'] > 1 else 0):,}: entry {pos.ledger_id}:{pos.entry_id}, "
        f"batch index {pos.batch_index}; read {pos.entries_read} entries"
    )
