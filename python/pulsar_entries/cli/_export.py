"""``pulsar-entries export``: a topic kept as a Delta or Iceberg table, in process (see
:mod:`pulsar_entries.export`) or, with ``--engine spark``, as a Delta or Iceberg table by a Spark streaming
query (see :func:`pulsar_entries.spark.export_topic`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..export._tables import DELTA_CONF, DELTA_PACKAGE, ExportError
from ._errors import CliError
from ._progress import Bar, progress
from ._topic import (
    ZK_PASSWORD_ENV,
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
        help="keep a topic as a Delta Lake or Iceberg table, exactly once (append or upsert), in process or on Spark",
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
    e.add_argument(
        "--strategy",
        help="--mode upsert: a PIP-215 strategy deciding between a key's values: latest-wins, first-wins, "
        "versioned-state, or MODULE:CLASS (as compact's)",
    )
    e.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="--engine spark: a Spark setting (repeatable), as spark-submit's --conf; for a Delta table the "
        f"session gets Delta Lake by spark.jars.packages={DELTA_PACKAGE} unless spark.jars(.packages) is given",
    )
    e.add_argument(
        "--checkpoint",
        help="--engine spark: the streaming query's checkpoint (default: _pulsar_entries_checkpoint in a Delta "
        "table; _pulsar_entries_checkpoints/<table> in an Iceberg warehouse)",
    )
    add_cluster_options(e, read_compacted=False, topic=False)
    add_crypto_option(e)
    e.set_defaults(func=cmd_export)


def spark_conf(args: argparse.Namespace, *, delta: bool = True) -> dict[str, str]:
    """``--spark-conf`` as settings, with Delta Lake's for a Delta table (its jars unless given
    another way)."""
    conf: dict[str, str] = {}
    for spec in args.spark_conf or []:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--spark-conf must be KEY=VALUE, not {spec!r}")
        conf[key.strip()] = value
    if not delta:
        return conf
    if "spark.jars" not in conf and "spark.jars.packages" not in conf:
        conf["spark.jars.packages"] = DELTA_PACKAGE
    for key, value in DELTA_CONF.items():
        conf.setdefault(key, value)
    return conf


def stream_options(args: argparse.Namespace, keys: dict[str, str] | None) -> dict[str, str]:
    """The cluster options as ``spark.readStream.format("pulsar")``'s."""
    zk_user = args.zk_digest_user or args.zk_sasl_user
    given = {
        "metadataUrl": args.metadata_url,
        "adminToken": args.admin_token,
        "adminAuthPlugin": args.auth_plugin,
        "adminAuthParams": args.auth_params,
        "adminTlsTrustCertsFilePath": args.tls_trust_certs_file,
        "adminTlsHostnameVerification": "false" if args.tls_no_hostname_verification else None,
        "zkCaFile": args.zk_ca_file,
        "zkCertFile": args.zk_cert_file,
        "zkKeyFile": args.zk_key_file,
        "zkDigestUser": args.zk_digest_user,
        "zkSaslUser": args.zk_sasl_user,
        "zkPasswordFile": args.zk_password_file,
        # As in process: without a file, the password is in this variable (read where the source runs).
        "zkPasswordEnv": ZK_PASSWORD_ENV if zk_user and not args.zk_password_file else None,
        "bookkeeperTLSTrustCertsFilePath": args.bookkeeper_tls_trust_certs_file,
        "bookkeeperTLSCertificateFilePath": args.bookkeeper_tls_certificate_file,
        "bookkeeperTLSKeyFilePath": args.bookkeeper_tls_key_file,
        "bookieAddresses": ",".join(f"{k}={v}" for k, v in bookie_addresses(args).items()) or None,
        "offloadPath": args.offload_uri,
        "cryptoKeyFiles": ",".join(f"{k}={v}" for k, v in keys.items()) if keys else None,
        "timeout": str(args.timeout),
        "maxEntriesPerTrigger": str(args.max_entries_per_commit),
        "failOnDataLoss": "false" if args.skip_data_loss else "true",
    }
    if args.bookkeeper_tls_hostname_verification is not None:
        given["bookkeeperTLSHostnameVerificationEnabled"] = str(args.bookkeeper_tls_hostname_verification).lower()
    return {k: v for k, v in given.items() if v is not None}


def export_on_spark(args: argparse.Namespace, topic: str, keys: dict[str, str] | None, strategy: Any) -> None:
    """``export --engine spark``: the topic into a Delta or Iceberg table by a streaming query."""
    from ._engines import SparkEngine

    options = stream_options(args, keys)
    delta = args.to.lower().startswith("delta:")
    engine = SparkEngine(progress(args), args.master, args.debug, conf=spark_conf(args, delta=delta))
    print(f"engine: {engine.describe()}", file=sys.stderr)
    started = time.monotonic()

    def show(total: Any) -> None:
        if not args.quiet:
            rate = total.rows / max(1e-9, time.monotonic() - started)
            print(spark_progress_line(total, rate, upsert=args.mode == "upsert"), file=sys.stderr, flush=True)

    try:
        total = engine.ps.export_topic(
            engine.spark,
            topic,
            args.to,
            checkpoint=args.checkpoint,
            mode=args.mode,
            options=options,
            follow=args.follow,
            poll_interval=args.poll_interval,
            on_entry_error=args.on_entry_error,
            on_batch=show,
            strategy=strategy,
            warehouse=args.warehouse,
            catalog_uri=args.catalog_uri,
        )
    except KeyboardInterrupt:
        print("export stopped: the table holds the micro-batches the query committed", file=sys.stderr)
        raise
    except (ExportError, ValueError) as e:
        raise CliError(str(e)) from None
    done = "nothing new" if not total.commits else f"{total.rows:,} rows in {total.commits} micro-batches"
    print(
        f"exported {topic} to {args.to} on Spark: {done}"
        + (f", {total.dead_letters:,} in the dead-letter table" if total.dead_letters else "")
    )


def progress_line(total: Any, lag: int, rate: float, *, upsert: bool = False) -> str:
    """One progress line of an export, as logs get it: entries, bytes, rows, dead letters, lag and rate."""
    return (
        f"export: {total.commits} commits, {total.entries:,} entries, {total.bytes / 2**20:,.1f} MiB, "
        f"{total.rows:,} rows"
        + (f", {total.deleted:,} deleted" if upsert else "")
        + f", {total.dead_letters:,} dead letters, lag {lag:,} entries, {rate:,.0f} entries/s"
    )


def spark_progress_line(total: Any, rate: float, *, upsert: bool = False) -> str:
    """One line per committed micro-batch of an export on Spark: rows, dead letters, the backlog the
    source saw when it planned the latest micro-batch, and the rate."""
    return (
        f"export: {total.commits} micro-batches, {total.rows:,} rows"
        + (f", {total.deleted:,} deleted" if upsert else "")
        + f", {total.dead_letters:,} dead letters, backlog {total.lag_entries:,} entries at the last plan, "
        f"{rate:,.0f} rows/s"
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
    from ..export import ExportStats, export_topic

    if not args.metadata_url:
        raise CliError(
            "export reads a topic from a cluster: give --metadata-url (zk:host:2181, rocksdb:/path or "
            "http://broker:8080)"
        )
    if args.bookie_dir:
        raise CliError("export reads a live cluster (--bookie-dir is a stopped one, which does not grow)")
    topic = topic_name(args.topic)
    keys = crypto_key_files(args)
    if args.strategy and args.mode != "upsert":
        raise CliError("--strategy decides between a key's values: give --mode upsert")
    from ._commands import parse_strategy

    strategy = parse_strategy(args.strategy)
    if args.engine == "spark":
        export_on_spark(args, topic, keys, strategy)
        return
    if args.spark_conf or args.checkpoint:
        raise CliError("--spark-conf and --checkpoint are for --engine spark")
    read = offload_location(args)
    addresses = bookie_addresses(args)
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
            strategy=strategy,
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
