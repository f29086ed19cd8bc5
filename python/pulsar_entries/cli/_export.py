"""``pulsar-entries export``: a topic kept as a Delta or Iceberg table (see
:mod:`pulsar_entries.export`), in process."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ._errors import CliError
from ._progress import Bar, progress
from ._topic import (
    add_cluster_options,
    add_crypto_option,
    admin_access,
    bookie_addresses,
    bookie_tls,
    crypto_key_files,
    offload_location,
    topic_name,
    zookeeper_access,
)


def add_export_parser(sub: Any) -> None:
    e = sub.add_parser(
        "export",
        help="keep a topic as a Delta Lake or Iceberg table, exactly once (append or upsert), in process",
        description="Export a topic straight from its storage into a table, exactly once: a rerun (or --follow) "
        "goes on from what the table's own commits record. Messages the topic's schema cannot read go to "
        "<table>_dead_letters.",
    )
    e.add_argument(
        "--topic", required=True, help="the topic: orders, tenant/ns/orders or persistent://tenant/ns/orders"
    )
    e.add_argument(
        "--to",
        required=True,
        metavar="TABLE",
        help="delta:<path or URI> or iceberg:<catalog>.<namespace>.<table>",
    )
    e.add_argument(
        "--mode",
        choices=("append", "upsert"),
        default="append",
        help="append: every message a row (default); upsert: the latest value per key, tombstones delete",
    )
    e.add_argument("--follow", action="store_true", help="keep exporting as the topic grows, until Ctrl-C")
    e.add_argument("--poll-interval", type=float, default=1.0, help="seconds between looks with --follow (default 1)")
    e.add_argument(
        "--max-entries-per-commit", type=int, default=100_000, help="new entries per commit at most (default 100000)"
    )
    e.add_argument(
        "--warehouse",
        help="Iceberg: the warehouse directory of the default SQL catalog on SQLite (default ./warehouse)",
    )
    e.add_argument("--catalog-uri", help="Iceberg: a REST catalog (http(s)://...) or a SQL catalog (sqlite:///...)")
    e.add_argument(
        "--on-entry-error",
        choices=("stop", "dead-letter"),
        default="stop",
        help="an entry that cannot be read: stop before committing (default; a rerun retries) or record it "
        "in the dead-letter table and go on",
    )
    e.add_argument(
        "--skip-data-loss",
        action="store_true",
        help="go on past ledgers retention deleted before they were exported (a dead-letter status row says what)",
    )
    add_cluster_options(e, read_compacted=False, topic=False)
    add_crypto_option(e)
    e.set_defaults(func=cmd_export)


def progress_line(total: Any, lag: int, rate: float, *, upsert: bool = False) -> str:
    """One progress line of an export, as logs get it: entries, bytes, rows, dead letters, lag and rate."""
    return (
        f"export: {total.commits} commits, {total.entries:,} entries, {total.bytes / 2**20:,.1f} MiB, "
        f"{total.rows:,} rows"
        + (f", {total.deleted:,} deleted" if upsert else "")
        + f", {total.dead_letters:,} dead letters, lag {lag:,} entries, {rate:,.0f} entries/s"
    )


def commit_note(total: Any, lag: int, *, upsert: bool = False) -> str:
    """What a terminal's export bar adds after its entries, bytes, rates and time left."""
    return (
        f"{total.commits} commits, {total.rows:,} rows"
        + (f", {total.deleted:,} deleted" if upsert else "")
        + (f", {total.dead_letters:,} dead letters" if total.dead_letters else "")
        + f", lag {lag:,}"
    )


def cmd_export(args: argparse.Namespace) -> None:
    from ..export import ExportError, ExportStats, export_topic

    if args.engine == "spark":
        raise CliError(
            "export --engine spark is not available yet: export runs in process (drop --engine); on Spark, "
            "stream the topic with spark.readStream.format('pulsar') into Spark's Delta or Iceberg sink"
        )
    if not args.metadata_url:
        raise CliError(
            "export reads a topic from a cluster: give --metadata-url (zk:host:2181, rocksdb:/path or "
            "http://broker:8080)"
        )
    if args.bookie_dir:
        raise CliError("export reads a live cluster (--bookie-dir is a stopped one, which does not grow)")
    topic = topic_name(args.topic)
    read = offload_location(args)
    addresses = bookie_addresses(args)
    keys = crypto_key_files(args)
    tty = progress(args)
    started = time.monotonic()
    total = ExportStats()
    bar = Bar(tty, "export")

    def show(s: ExportStats) -> None:
        total.add(s)
        if args.quiet:
            return
        if tty:  # a bar of the entries exported against those plus the lag, with the commit's figures
            bar.set_total(total.entries + s.lag_entries)
            bar.update(s.entries, s.bytes, note=commit_note(total, s.lag_entries, upsert=args.mode == "upsert"))
            return
        rate = total.entries / max(1e-9, time.monotonic() - started)
        print(progress_line(total, s.lag_entries, rate, upsert=args.mode == "upsert"), file=sys.stderr, flush=True)

    try:
        export_topic(
            topic,
            args.to,
            metadata_url=args.metadata_url,
            admin_token=args.admin_token,
            **admin_access(args),
            **zookeeper_access(args),
            **bookie_tls(args),
            mode=args.mode,
            follow=args.follow,
            poll_interval=args.poll_interval,
            bookie_addresses=addresses or None,
            crypto_keys=keys,
            timeout=args.timeout,
            max_entries_per_commit=args.max_entries_per_commit,
            on_entry_error=args.on_entry_error,
            fail_on_data_loss=not args.skip_data_loss,
            warehouse=args.warehouse,
            catalog_uri=args.catalog_uri,
            on_commit=show,
            **read,
        )
    except KeyboardInterrupt:
        bar.close()
        print(f"export stopped: the table holds what its {total.commits} commits of this run recorded", file=sys.stderr)
        raise
    except (ExportError, ValueError) as e:
        bar.close()
        raise CliError(str(e)) from None
    bar.close()
    done = "nothing new" if not total.commits else f"{total.rows:,} rows in {total.commits} commits"
    print(
        f"exported {topic} to {args.to}: {done}"
        + (f", {total.dead_letters:,} in the dead-letter table" if total.dead_letters else "")
    )
