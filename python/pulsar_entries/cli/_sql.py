"""``pulsar-entries sql``: a SQL query over a topic, on one machine (DuckDB; see :mod:`pulsar_entries.query`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._errors import CliError
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


def add_sql_parser(sub: Any) -> None:
    q = sub.add_parser(
        "sql",
        help="run a SQL query over a topic, on one machine (DuckDB): the topic is the table 'topic'",
        description="Query a topic straight from its storage with DuckDB's SQL, in bounded memory: the topic's "
        "messages are the table 'topic' (decoded, chunked messages whole; --typed: the schema's fields as "
        "columns). Bounds on publish_time in the WHERE clause are pushed down as a seek.",
    )
    q.add_argument("query", help='the query, e.g. "SELECT key, count(*) FROM topic GROUP BY key"')
    q.add_argument(
        "--topic", required=True, help="the topic: orders, tenant/ns/orders or persistent://tenant/ns/orders"
    )
    q.add_argument("--typed", action="store_true", help="the topic's schema (from the registry) as columns")
    q.add_argument(
        "--out", metavar="FILE", help="write the answer to FILE (.parquet, .csv or .json) instead of printing it"
    )
    q.add_argument("--max-rows", type=int, default=40, help="rows printed at most (default 40)")
    add_cluster_options(q, read_compacted=False, topic=False)
    add_crypto_option(q)
    q.set_defaults(func=cmd_sql)


def cmd_sql(args: argparse.Namespace) -> None:
    from ..query import sql

    if not args.metadata_url:
        raise CliError(
            "sql reads a topic from a cluster: give --metadata-url (zk:host:2181, rocksdb:/path or http://broker:8080)"
        )
    if args.bookie_dir:
        raise CliError("sql reads a live cluster's bookies (--bookie-dir is not supported here)")
    if args.partitions:
        raise CliError("sql reads every partition: filter on the partition column in the query instead")
    try:
        topic = topic_name(args.topic)
    except ValueError as e:
        raise CliError(f"--topic {args.topic}: {e}") from None
    where: dict[str, Any] = {"metadata_url": args.metadata_url, "admin_token": args.admin_token}
    where.update(admin_access(args))
    where.update(zookeeper_access(args))
    where.update(bookie_tls(args))
    where.update(offload_location(args))
    addresses = bookie_addresses(args)
    keys = crypto_key_files(args)
    try:
        answer = sql(
            args.query,
            topic,
            typed=args.typed,
            bookie_addresses=addresses or None,
            crypto_keys=keys,
            timeout=args.timeout,
            **where,
        )
    except ImportError:
        from .._install import install_hint

        raise CliError(f"sql runs on DuckDB: {install_hint('sql')}") from None
    except Exception as e:
        import duckdb

        if isinstance(e, duckdb.Error):
            raise CliError(f"the query: {e}") from None
        raise
    if args.out:
        write(answer, Path(args.out))
        if not args.quiet:
            print(f"{answer.num_rows:,} rows written to {args.out}", file=sys.stderr)
        return
    show(answer, args.max_rows)


def write(table: Any, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif suffix == ".csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    elif suffix == ".json":
        import json

        path.write_text("\n".join(json.dumps(r, default=str) for r in table.to_pylist()) + "\n")
    else:
        raise CliError(f"--out {path}: the answer is written as .parquet, .csv or .json (one object per line)")


def show(table: Any, max_rows: int) -> None:
    """The answer as a text table: a header, then up to ``max_rows`` rows."""
    names = table.column_names
    rows = table.slice(0, max(0, max_rows)).to_pylist()

    def cell(v: Any) -> str:
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else "NULL" if v is None else str(v)
        text = text.replace("\n", "\\n")
        return text if len(text) <= 60 else text[:57] + "..."

    cells = [[cell(r[n]) for n in names] for r in rows]
    widths = [max([len(n), *(len(c[i]) for c in cells)]) for i, n in enumerate(names)]
    print("  ".join(n.ljust(w) for n, w in zip(names, widths)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)))
    more = table.num_rows - len(rows)
    print(f"({table.num_rows:,} rows{f', {more:,} not shown (--max-rows)' if more > 0 else ''})")
