"""A topic in a cluster as a command's ``IN``: read straight from the cluster's
storage with :func:`pulsar_entries.read_topic` (layout from the metadata store
or the admin REST API, entries from the bookies, tiered storage or a stopped
bookie's files), once, on this machine."""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import _cluster
from .._compaction import MessagePosition, last_message_position
from .._crypto import load_key_files, parse_key_files
from .._redact import MASK, filesystem_from_uri, redact_uri
from ..auth import SettingError, admin_settings, bookie_settings, has_inline_secret, zookeeper_settings
from ._errors import CliError
from ._progress import Bar, data_bytes, progress

#: What makes ``IN`` a topic rather than a path.
TOPIC_SCHEMES = ("persistent://", "non-persistent://")
TOKEN_ENV = "PULSAR_ENTRIES_ADMIN_TOKEN"
ZK_PASSWORD_ENV = "PULSAR_ENTRIES_ZK_PASSWORD"
AUTH_PARAMS_ENV = "PULSAR_ENTRIES_AUTH_PARAMS"


def is_topic(source: object) -> bool:
    return isinstance(source, str) and source.startswith(TOPIC_SCHEMES)


def topic_name(text: str) -> str:
    """A topic's full name from any form ``read_topic`` takes (``orders``, ``tenant/ns/orders``,
    ``persistent://tenant/ns/orders``); a ValueError in one line otherwise."""
    from .. import _native

    return str(_native.topic_paths(text)["topic"])


def seconds(text: str) -> float:
    """``--timeout``'s type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        # argparse prints "argument --timeout: " before this.
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_cluster_options(p: argparse.ArgumentParser, *, read_compacted: bool = True, topic: bool = True) -> None:
    """The options of a command whose ``IN`` may be a topic. With ``topic``,
    ``--topic T`` may stand for ``IN`` (see :func:`topic_option_as_input`)."""
    g = p.add_argument_group(
        "reading a topic from a cluster (IN = persistent://tenant/ns/topic, or --topic)",
        "the entries come from the bookies, tiered storage or bookie files, never through the broker",
    )
    if topic:
        g.add_argument(
            "--topic",
            dest="topic_in",
            metavar="TOPIC",
            help="the topic to read, persistent://tenant/ns/topic, in place of IN",
        )
    g.add_argument(
        "--metadata-url",
        metavar="URL",
        help="where the topic's layout comes from: zk:host:2181[/chroot], rocksdb:/path/to/data/metadata "
        "(a stopped standalone), or http(s)://broker:8080 (the admin REST API)",
    )
    if read_compacted:
        g.add_argument(
            "--read-compacted",
            action="store_true",
            help="the compacted view: the compacted ledger, then the topic after the compaction horizon",
        )
    g.add_argument("--partitions", metavar="N,N", help="only these partitions of a partitioned topic")
    g.add_argument(
        "--offload-uri",
        metavar="URI",
        help="where offloaded ledgers are, as a pyarrow filesystem URI: s3://bucket[/prefix]"
        "[?endpoint_override=host:port&scheme=http], gs://..., file:///...",
    )
    g.add_argument(
        "--bookie-dir",
        action="append",
        metavar="DIR",
        help="read a stopped cluster from this bookie data directory (repeatable)",
    )
    g.add_argument(
        "--bookie-address",
        action="append",
        metavar="ID=HOST:PORT",
        help="a bookie's address (repeatable); the admin REST API gives bookie ids only",
    )
    g.add_argument(
        "--admin-token",
        default=os.environ.get(TOKEN_ENV),
        help=f"token for the admin REST API (Authorization: Bearer; default ${TOKEN_ENV})",
    )
    g.add_argument(
        "--auth-plugin",
        metavar="PLUGIN",
        help="authenticate to the admin REST API as Pulsar's client does: token, oauth2, basic, tls "
        "(or Pulsar's class names, as in client.conf's authPlugin)",
    )
    g.add_argument(
        "--auth-params",
        metavar="PARAMS",
        default=os.environ.get(AUTH_PARAMS_ENV),
        help="the plugin's parameters as client.conf's authParams (JSON or key:value,...), or @FILE to read them "
        f"from a file (default ${AUTH_PARAMS_ENV}); secrets go in files (file:///...) or the environment",
    )
    g.add_argument("--tls-trust-certs-file", metavar="PEM", help="CA bundle for https to the admin REST API")
    g.add_argument(
        "--tls-no-hostname-verification",
        action="store_true",
        help="accept an admin API certificate that does not name its host (Pulsar's tlsHostnameVerificationEnable=false)",
    )
    g.add_argument(
        "--zk-ca-file", metavar="PEM", help="ZooKeeper over TLS: the CA bundle its certificate is checked against"
    )
    g.add_argument(
        "--zk-cert-file", metavar="PEM", help="ZooKeeper over TLS: this client certificate (with --zk-key-file)"
    )
    g.add_argument("--zk-key-file", metavar="PEM", help="ZooKeeper over TLS: the client certificate's key")
    g.add_argument(
        "--zk-digest-user",
        metavar="USER",
        help=f"ZooKeeper digest authentication as USER; the password from --zk-password-file or ${ZK_PASSWORD_ENV}",
    )
    g.add_argument("--zk-sasl-user", metavar="USER", help="ZooKeeper SASL DIGEST-MD5 as USER (password as above)")
    g.add_argument("--zk-password-file", metavar="FILE", help="the ZooKeeper password, in a file")
    g.add_argument(
        "--bookkeeper-tls-trust-certs-file",
        metavar="PEM",
        help="TLS to the bookies: the CA bundle their certificates are checked against (bookkeeperTLSTrustCertsFilePath)",
    )
    g.add_argument(
        "--bookkeeper-tls-certificate-file",
        metavar="PEM",
        help="TLS to the bookies: this client certificate, for bookies that require one (bookkeeperTLSCertificateFilePath)",
    )
    g.add_argument(
        "--bookkeeper-tls-key-file",
        metavar="PEM",
        help="TLS to the bookies: the client certificate's key (unencrypted)",
    )
    g.add_argument(
        "--bookkeeper-tls-hostname-verification",
        action="store_true",
        help="TLS to the bookies: their certificates must name their hosts (BookKeeper's client does not check)",
    )
    g.add_argument("--timeout", type=seconds, default=30.0, help="seconds per metadata or bookie request (default 30)")


def topic_option_as_input(p: argparse.ArgumentParser, args: argparse.Namespace, *, out: bool) -> None:
    """Make ``--topic T`` the command's ``IN``. ``IN`` (and ``OUT``, when the
    command has one) are optional positionals so that ``--topic T OUT`` parses;
    this shifts them and gives argparse's one-line usage error when a
    positional is missing or the topic is given twice."""
    given = [v for v in (args.input, getattr(args, "out", None)) if v is not None]
    wanted = 2 if out else 1
    if args.topic_in is not None:
        try:
            args.topic_in = topic_name(args.topic_in)
        except ValueError as e:
            p.error(f"--topic {args.topic_in}: {e}")
        if len(given) == wanted:
            p.error("give the topic either as IN or with --topic, not both")
        given.insert(0, args.topic_in)
    if len(given) < wanted:
        names = ["IN (or --topic)", "OUT"][len(given) : wanted]
        p.error(f"the following arguments are required: {', '.join(names)}")
    args.input = given[0]
    if out:
        args.out = given[1]


@dataclass
class ClusterTopic:
    """A topic to read from a cluster, resolved once and read at most once per view."""

    name: str
    options: dict[str, Any]
    read: dict[str, Any]
    read_compacted: bool = False
    #: A progress bar while the entries are read (on a terminal, without --quiet).
    progress: bool = False
    _layout: Any = None
    _tables: dict[bool, pa.Table] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        options = {k: (MASK if k == "admin_token" and v else v) for k, v in self.options.items()}
        return redact_uri(f"ClusterTopic({self.name!r}, options={options!r}, read_compacted={self.read_compacted})")

    def layout(self) -> _cluster.TopicLayout:
        if self._layout is None:
            self._layout = _cluster.topic_layout(self.name, **self.options)
        return self._layout

    def entries(self, read_compacted: bool | None = None) -> pa.Table:
        """``ledger_id, entry_id, partition, data, error``; entries no copy
        could give are reported on stderr (and stay rows with null data)."""
        compacted = self.read_compacted if read_compacted is None else read_compacted
        if compacted not in self._tables:
            layout = self.layout()
            counts = [led.entries for part in layout.partitions for led in part.ledgers]
            # The total is known when every ledger's count is (an open ledger's is 0 until it closes).
            total = sum(counts) if counts and all(counts) and not compacted else None
            with Bar(self.progress, f"read {self.name}", total=total) as bar:
                table = _cluster.read_layout(
                    layout,
                    read_compacted=compacted,
                    on_table=lambda t: bar.update(t.num_rows, data_bytes(t)),
                    **self.read,
                )
            bad = table.filter(pc.is_valid(table["error"]))
            if bad.num_rows:
                first = bad["error"][0].as_py().splitlines()[0]
                print(
                    f"pulsar-entries: warning: {bad.num_rows:,} entries of {self.name} could not be read; "
                    f"first: {first}",
                    file=sys.stderr,
                )
            self._tables[compacted] = table
        return self._tables[compacted]

    def last_message_position(self, *, read_compacted: bool = True) -> MessagePosition:
        """GetLastMessageId of one partition: the compacted ledger's last
        message when a compacted reader's last entry is at or before the
        compaction horizon, else the topic's last entry."""
        parts = self.layout().partitions
        if len(parts) != 1:
            raise CliError(
                f"{self.name} has {len(parts)} partitions: name one ({self.name}-partition-N, or --partitions N)"
            )
        (part,) = parts
        topic = self.entries(False).drop_columns(["error"])
        if not read_compacted or part.compacted is None or part.horizon is None:
            return last_message_position(None, topic_entries=topic, read_compacted=read_compacted)
        view = self.entries(True).drop_columns(["error"])
        h = part.horizon
        upto = pc.or_(
            pc.less(view["ledger_id"], h[0]),
            pc.and_(pc.equal(view["ledger_id"], h[0]), pc.less_equal(view["entry_id"], h[1])),
        )
        return last_message_position(view.filter(upto), topic_entries=topic, read_compacted=True, horizon=h)


def bookie_addresses(args: argparse.Namespace) -> dict[str, str]:
    """``--bookie-address ID=HOST:PORT`` (repeatable) as ``{id: "host:port"}``."""
    addresses = {}
    for spec in args.bookie_address or []:
        bookie, sep, address = spec.partition("=")
        if not sep or not bookie or not address:
            raise CliError(f"--bookie-address must be ID=HOST:PORT, not {spec!r}")
        addresses[bookie] = address
    return addresses


def zookeeper_access(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--zk-*`` options as ``metadata_access`` (empty without them)."""
    users = (args.zk_digest_user, args.zk_sasl_user)
    if any(users) and not args.zk_password_file and not os.environ.get(ZK_PASSWORD_ENV):
        raise CliError(
            f"--zk-digest-user / --zk-sasl-user: give the password with --zk-password-file or ${ZK_PASSWORD_ENV}"
        )
    try:
        access = zookeeper_settings(
            ca_file=args.zk_ca_file,
            cert_file=args.zk_cert_file,
            key_file=args.zk_key_file,
            digest_user=args.zk_digest_user,
            sasl_user=args.zk_sasl_user,
            password_file=args.zk_password_file,
            password_env=ZK_PASSWORD_ENV if any(users) and not args.zk_password_file else None,
        )
    except SettingError as e:
        if not any(users) and args.zk_password_file:
            raise CliError("--zk-password-file needs --zk-digest-user or --zk-sasl-user") from None
        raise CliError(f"--zk-*: {e}") from None
    return {} if access is None else {"metadata_access": access}


def bookie_tls(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--bookkeeper-tls-*`` options as ``bookie_tls`` (empty without them)."""
    try:
        tls = bookie_settings(
            args.bookkeeper_tls_trust_certs_file,
            args.bookkeeper_tls_certificate_file,
            args.bookkeeper_tls_key_file,
            hostname_verification=args.bookkeeper_tls_hostname_verification,
            timeout=args.timeout,
        )
    except SettingError as e:
        if e.setting == "trust_certs_file":
            raise CliError(
                "the --bookkeeper-tls-* options need --bookkeeper-tls-trust-certs-file (the CA bundle)"
            ) from None
        raise CliError(f"--bookkeeper-tls-*: {e}") from None
    return {} if tls is None else {"bookie_tls": tls}


def admin_access(args: argparse.Namespace) -> dict[str, Any]:
    """``--auth-plugin`` / ``--auth-params`` and the TLS options as ``admin_auth`` / ``admin_tls``
    (empty without them); an error shows no parameter's value."""
    params = args.auth_params or ""
    if args.auth_plugin is None and args.auth_params:
        raise CliError("--auth-params needs --auth-plugin")
    if args.auth_plugin is not None and args.admin_token:
        raise CliError("give --admin-token or --auth-plugin, not both")
    if args.auth_plugin is not None and params.startswith("@"):
        try:
            params = Path(params[1:]).read_text()
        except OSError as e:
            raise CliError(f"--auth-params: cannot read {params[1:]!r}: {e.strerror}") from None
    elif args.auth_params and args.auth_params != os.environ.get(AUTH_PARAMS_ENV) and has_inline_secret(params):
        # A secret on the command line ends up in shell histories and process lists.
        raise CliError(
            "--auth-params holds a secret on the command line: put it in a file (token: file:///path, basic: "
            f"passwordFile, or --auth-params @FILE) or in ${AUTH_PARAMS_ENV}"
        )
    try:
        return admin_settings(
            args.auth_plugin,
            params,
            trust_certs_file=args.tls_trust_certs_file,
            hostname_verification=not args.tls_no_hostname_verification,
        )
    except SettingError as e:
        where = "--tls-trust-certs-file" if e.setting == "trust_certs_file" else f"--auth-plugin {args.auth_plugin}"
        raise CliError(f"{where}: {e}") from None


def add_crypto_option(p: argparse.ArgumentParser) -> None:
    """``--crypto-key``: the private keys that decrypt end-to-end encrypted messages."""
    p.add_argument(
        "--crypto-key",
        action="append",
        metavar="NAME=PEM_FILE",
        help="decrypt end-to-end encrypted messages with this RSA or EC private key, for the producer's key NAME "
        "(repeatable; a bare PEM_FILE serves every name); without it they stay encrypted rows",
    )


def crypto_key_files(args: argparse.Namespace) -> dict[str, str] | None:
    """``--crypto-key`` (repeatable) as key name -> PEM file, each file read and checked now."""
    files: dict[str, str] = {}
    for spec in args.crypto_key or []:
        try:
            parsed = parse_key_files(spec)
        except ValueError as e:
            raise CliError(f"--crypto-key {spec!r}: {e}") from None
        for name, path in parsed.items():
            if name in files:
                raise CliError(f"--crypto-key: key {name!r} is given twice")
            files[name] = path
    if not files:
        return None
    try:
        load_key_files(tuple(sorted(files.items())))
    except (ValueError, TypeError) as e:
        raise CliError(f"--crypto-key: {e}") from None
    return files


def offload_location(args: argparse.Namespace) -> dict[str, Any]:
    """``--offload-uri`` as ``read_topic``'s ``offload_filesystem`` and ``offload_prefix`` (none without it)."""
    if not args.offload_uri:
        return {}
    try:
        filesystem, prefix = filesystem_from_uri(args.offload_uri, "--offload-uri")
    except (ValueError, OSError) as e:
        raise CliError(str(e)) from None
    return {"offload_filesystem": filesystem, "offload_prefix": prefix}


def source(args: argparse.Namespace) -> Any:
    """The command's ``IN``: a :class:`ClusterTopic` for a topic name, else the path."""
    given = [
        opt
        for opt, value in (
            ("--metadata-url", args.metadata_url),
            ("--read-compacted", getattr(args, "read_compacted", False)),
            ("--partitions", args.partitions),
            ("--offload-uri", args.offload_uri),
            ("--bookie-dir", args.bookie_dir),
            ("--bookie-address", args.bookie_address),
        )
        if value
    ]
    if not is_topic(args.input) and given and "://" not in args.input and not Path(args.input).exists():
        # With cluster options, IN may name a topic as read_topic takes it (orders, tenant/ns/orders).
        try:
            args.input = topic_name(args.input)
        except ValueError as e:
            raise CliError(f"{given[0]} reads a topic from a cluster: IN {args.input}: {e}") from None
    if not is_topic(args.input):
        if given:
            raise CliError(
                f"{given[0]} reads a topic from a cluster: IN must be a topic (orders, tenant/ns/orders or "
                f"persistent://tenant/ns/orders), not the path {args.input}"
            )
        return args.input
    if not args.metadata_url:
        raise CliError(
            f"IN {args.input} is a topic: give --metadata-url (zk:host:2181, rocksdb:/path or http://broker:8080)"
        )
    partitions = None
    if args.partitions:
        try:
            partitions = [int(x) for x in args.partitions.split(",")]
        except ValueError:
            raise CliError(f"--partitions must be numbers separated by commas, not {args.partitions!r}") from None
    addresses = bookie_addresses(args)
    read: dict[str, Any] = {
        "bookie_dirs": args.bookie_dir,
        "timeout": args.timeout,
        **bookie_tls(args),
        **offload_location(args),
    }
    options: dict[str, Any] = {
        "metadata_url": args.metadata_url,
        "admin_token": args.admin_token,
        **admin_access(args),
        **zookeeper_access(args),
        "bookie_addresses": addresses or None,
        "partitions": partitions,
        "timeout": args.timeout,
        "offline": args.bookie_dir is not None,
    }
    return ClusterTopic(
        args.input,
        options,
        read,
        read_compacted=getattr(args, "read_compacted", False),
        progress=progress(args),
    )


def inputs(args: argparse.Namespace) -> list[str]:
    """Everything a command reads from disk, which its output may not overlap: ``IN``, and for a
    topic the bookie directories, the RocksDB metadata store and a local offload location."""
    found = [args.input]
    if is_topic(args.input):
        found += list(getattr(args, "bookie_dir", None) or [])
        url = getattr(args, "metadata_url", None) or ""
        if url.startswith("rocksdb:"):
            found.append(url[len("rocksdb:") :])
        offload = getattr(args, "offload_uri", None) or ""
        if offload.startswith("file://"):
            found.append(offload)
    return found
