"""The `pulsar-entries` command line.

`--engine auto` (the default) runs in process on Arrow tables when the input
fits this machine (at most 1 GiB, or a sixteenth of its memory) or pyspark is
missing, and on Spark for larger inputs, with `--master`, and for the demo;
the line `engine: ...` on stderr says which and why. `--engine local` and
`--engine spark` choose. Errors are one line on stderr and a non-zero exit; `--debug`
shows the traceback.
"""

from __future__ import annotations

import argparse
import sys

from .._native import __version__
from .._redact import redact
from ._commands import cmd_compact, cmd_decode, cmd_generate, cmd_inspect, cmd_last_id, cmd_seek
from ._demo import cmd_demo
from ._errors import CliError, one_line
from ._export import add_export_parser
from ._real_pulsar import cmd_standalone
from ._sql import add_sql_parser
from ._topic import add_cluster_options, add_crypto_option, topic_option_as_input

__all__ = ["CliError", "build_parser", "main"]


# ----------------------------------------------------------------------------- parser

IN_HELP = (
    "entry files (Parquet/Arrow), offload objects, or a directory of them; "
    "or a topic, persistent://tenant/ns/topic, read from a cluster (see --metadata-url)"
)


def add_global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes, accepted before the command and after it.
    After it their defaults are suppressed, so they never reset a value given before."""

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    p.add_argument("--debug", action="store_true", default=default(False), help="show tracebacks and Spark's logs")
    p.add_argument("--quiet", action="store_true", default=default(False), help="no progress bars")
    p.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default=default("auto"),
        help="auto (default): in process when the input is at most 1 GiB (or 1/16 of this machine's memory) or "
        "pyspark is missing, else Spark; Spark with --master and for the demo. local: in process on Arrow "
        "tables; spark: on Spark",
    )
    p.add_argument(
        "--master",
        default=default("local[*]"),
        help="Spark master URL (default local[*]: embedded Spark); e.g. yarn, spark://host:7077, k8s://...; "
        "with --engine auto, giving it runs on Spark",
    )


def add_overwrite(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace {what} if it exists (only an output pulsar-entries wrote; the new one is moved into "
        "place when complete)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pulsar-entries",
        description="Decode, inspect, compact and generate Apache Pulsar stored entries, outside the broker. "
        "Runs in process for inputs that fit this machine, on Spark for larger ones (--engine).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_global_options(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="write a realistic sample topic, as Parquet entry tables (OUT/entries) and offload objects (OUT/offload)",
    )
    g.add_argument("out", metavar="OUT", help="output directory")
    g.add_argument("--entries", type=int, default=1000, help="number of entries (default 1000)")
    g.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    add_overwrite(g, "OUT")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("decode", help="decode entries into messages, written as Parquet")
    d.add_argument("input", metavar="IN", nargs="?", help=IN_HELP)
    d.add_argument("out", metavar="OUT", nargs="?", help="output: a Parquet directory (spark) or file (local)")
    d.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    d.add_argument("--keep-markers", action="store_true", help="keep marker entries as rows")
    add_cluster_options(d)
    add_crypto_option(d)
    add_overwrite(d, "OUT")
    d.add_argument(
        "--utf8-errors",
        choices=["replace", "error"],
        default="replace",
        help="text fields that are not UTF-8: replace with U+FFFD as Pulsar's Java client does (default), "
        "or make the entry an error row",
    )
    t = d.add_argument_group("typed columns (the topic's schema)")
    t.add_argument(
        "--typed",
        action="store_true",
        help="decode with the topic's schema into typed columns; the schema comes from --metadata-url "
        "(the schema registry, or the admin REST API); runs in process",
    )
    t.add_argument(
        "--schema",
        metavar="FILE",
        help="decode with this schema instead: a JSON file in Pulsar's SchemaInfo shape "
        '({"type": "AVRO", "schema": {...}, "properties": {}}); every message is read with it',
    )
    t.add_argument("--no-value", action="store_true", help="with --typed/--schema: leave out the raw value bytes")
    d.set_defaults(func=cmd_decode, topic_input=(d, True))

    i = sub.add_parser("inspect", help="summarize a topic: counts, codecs, sizes, time range, errors")
    i.add_argument("input", metavar="IN", nargs="?", help=IN_HELP)
    i.add_argument("--html", metavar="FILE", help="also write an HTML report with charts to FILE")
    add_cluster_options(i)
    add_overwrite(i, "the --html FILE")
    i.set_defaults(func=cmd_inspect, topic_input=(i, False))

    c = sub.add_parser(
        "compact",
        help="compact a topic as the broker does: compacted entries, compacted-ledger records and the view",
    )
    c.add_argument("input", metavar="IN", nargs="?", help=IN_HELP)
    c.add_argument(
        "out", metavar="OUT", nargs="?", help="output directory: OUT/compacted, OUT/ledger-records, OUT/view (Parquet)"
    )
    c.add_argument(
        "--strategy",
        help="PIP-215 strategy: latest-wins, first-wins, versioned-state, or MODULE:CLASS (a user strategy)",
    )
    c.add_argument(
        "--order", choices=["publish", "event_time"], default="publish", help="survivor order (default publish)"
    )
    c.add_argument("--retain-null-key", action="store_true", help="keep messages without a key")
    c.add_argument("--no-verify", action="store_true", help="do not verify CRC32C checksums")
    add_cluster_options(c, read_compacted=False)
    add_overwrite(c, "OUT")
    c.set_defaults(func=cmd_compact, topic_input=(c, True))

    sk = sub.add_parser("seek", help="the position a consumer seeking to a broker time lands on (PIP-70)")
    sk.add_argument("input", metavar="IN", nargs="?", help=IN_HELP)
    sk.add_argument("--time", required=True, help="ms since the epoch, or ISO-8601 (UTC unless a zone is given)")
    add_cluster_options(sk)
    sk.set_defaults(func=cmd_seek, topic_input=(sk, False))

    li = sub.add_parser("last-id", help="print the last message position of compacted entries (PIP-429)")
    li.add_argument(
        "input",
        metavar="IN",
        help="compacted entries (Parquet/Arrow file or directory); or a topic, persistent://tenant/ns/topic, "
        "whose compacted ledger, entries and horizon come from a cluster (see --metadata-url)",
    )
    li.add_argument("--topic", help="the topic's entries, to choose the source as GetLastMessageId does")
    li.add_argument("--horizon", help="compaction horizon LEDGER:ENTRY (default: the topic's last entry)")
    li.add_argument("--no-read-compacted", action="store_true", help="answer as a reader without readCompacted")
    add_cluster_options(li, read_compacted=False, topic=False)
    li.set_defaults(func=cmd_last_id)

    m = sub.add_parser(
        "demo",
        help="the main job: generate a sample topic, then decode, read offload, reassemble, seek, inspect, "
        "compact and last-id; then, with Java and Maven, a topic written through a real Pulsar standalone, "
        "read from its storage",
    )
    m.add_argument("--dir", default="sample-topic", help="working directory (default ./sample-topic)")
    m.add_argument("--entries", type=int, default=2000, help="entries in the sample topic (default 2000)")
    m.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    m.add_argument(
        "--no-real-pulsar",
        action="store_true",
        help="skip the real-Pulsar step (by default it runs when java and mvn are on PATH)",
    )
    add_overwrite(m, "the working directory")
    m.set_defaults(func=cmd_demo)

    add_export_parser(sub)
    add_sql_parser(sub)

    sa = sub.add_parser(
        "standalone",
        help="run an Apache Pulsar standalone on 127.0.0.1 (jars resolved by Maven, cached); Ctrl-C stops it",
    )
    sa.add_argument("--dir", help="its work directory, kept (default: a temporary one, deleted when it stops)")
    sa.add_argument("--cache-dir", help="where the jars are kept (default ~/.cache/pulsar-entries/pulsar-<version>)")
    sa.set_defaults(func=cmd_standalone)
    for command in sub.choices.values():
        add_global_options(command, top=False)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    args.master_given = any(a == "--master" or a.startswith("--master=") for a in given)
    if getattr(args, "topic_input", None) is not None:  # --topic T stands for IN
        parser, has_out = args.topic_input
        topic_option_as_input(parser, args, out=has_out)
    try:
        args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line for the user, with the root cause; --debug for the traceback
        if args.debug:
            raise
        # Never a credential: URIs' user information, secret query parameters, the admin token.
        print(f"pulsar-entries: error: {redact(one_line(e), getattr(args, 'admin_token', None))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
