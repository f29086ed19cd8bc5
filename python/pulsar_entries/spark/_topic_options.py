"""The options of ``spark.read.format("pulsar")``, checked once on the driver:
parsing and validation (:class:`TopicOptions`), the topics they name and their
layouts (:func:`resolve_layouts`), and the schema rows are typed with
(:func:`resolve_schema`). No Spark here, so the checks run anywhere."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, overload

import pyarrow as pa

from .. import _native
from .._cluster import TopicLayout, open_store, topic_layout
from .._cluster.admin import AdminRest, check_timeout, is_admin_url
from .._cluster.scan import output_schema
from .._crypto import load_key_files, parse_key_files
from .._redact import MASK, filesystem_from_uri, redact_uri
from ..auth import (
    BookieTls,
    SettingError,
    ZooKeeperAccess,
    admin_settings,
    bookie_settings,
    has_inline_secret,
    zookeeper_settings,
)
from ..chunks import _DEFAULTS, reassembly_options
from ..schemas import TopicSchema, as_topic_schema, topic_schemas, typed_schema

#: Options only ``spark.readStream.format("pulsar")`` takes.
STREAM_OPTIONS = (
    "startingOffsets",
    "startingTime",
    "maxEntriesPerTrigger",
    "maxMessagesPerTrigger",
    "maxBytesPerTrigger",
    "failOnDataLoss",
    "chunkReadBack",
    "transactionTimeoutMs",
    "transactionReadBack",
)

#: Options the source reads (case-insensitive, as Spark passes them).
OPTIONS = (
    "topic",
    "topics",
    "topicsPattern",
    "metadataUrl",
    "adminUrl",
    "adminToken",
    "adminAuthPlugin",
    "adminAuthParams",
    "adminTlsTrustCertsFilePath",
    "adminTlsHostnameVerification",
    "zkCaFile",
    "zkCertFile",
    "zkKeyFile",
    "zkDigestUser",
    "zkSaslUser",
    "zkPasswordFile",
    "zkPasswordEnv",
    "bookkeeperTLSTrustCertsFilePath",
    "bookkeeperTLSCertificateFilePath",
    "bookkeeperTLSKeyFilePath",
    "bookkeeperTLSHostnameVerificationEnabled",
    "bookieAddresses",
    "ledgerPassword",
    "startingMessageId",
    "endingMessageId",
    "readCompacted",
    "keepMarkers",
    "verifyChecksum",
    "maxUncompressedSize",
    "utf8Errors",
    "maxOutputBytes",
    "cryptoKeyFiles",
    "reassembleChunks",
    "maxPendingChunkedMessage",
    "expireTimeOfIncompleteChunkedMessageMs",
    "maxMessageSize",
    "chunkReadAhead",
    "entriesPerPartition",
    "offloadPath",
    "bookieDirs",
    "timeout",
    "seekByTime",
    "pushFilters",
    "typed",
    "schema",
    "valueColumn",
    # Only ``spark.readStream`` takes these (:mod:`pulsar_entries.spark._stream`).
    *STREAM_OPTIONS,
)


@functools.lru_cache(maxsize=8)
def _admin_access(plugin: str | None, params: str, trust: str | None, hostname_verification: bool) -> dict[str, Any]:
    try:
        return admin_settings(plugin, params, trust_certs_file=trust, hostname_verification=hostname_verification)
    except SettingError as e:
        option = "adminTlsTrustCertsFilePath" if e.setting == "trust_certs_file" else f"adminAuthPlugin={plugin}"
        raise ValueError(f"pulsar: option {option}: {e}") from None


def _crypto_key_files(text: str | None) -> dict[str, str] | None:
    """``cryptoKeyFiles`` (``name=/path.pem,...``, or one path for every name), checked on the driver by
    reading and parsing each key (an OptionsError names the key, never shows it)."""
    if text is None or not text.strip():
        return None
    try:
        files = parse_key_files(text)
    except ValueError as e:
        raise ValueError(f"pulsar: option cryptoKeyFiles: {e}") from None
    load_key_files(tuple(sorted(files.items())))
    return files


#: The columns whose range filters become a seek, and the entry-metadata field each seeks on.
TIME_COLUMNS = {"publish_time": "publish_time", "broker_timestamp": "broker_timestamp"}


@overload
def _bool(name: str, value: str | None, default: bool) -> bool: ...
@overload
def _bool(name: str, value: str | None, default: None) -> bool | None: ...
def _bool(name: str, value: str | None, default: bool | None) -> bool | None:
    if value is None:
        return default
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f'option {name}={value!r}: expected "true" or "false"')


def _int(name: str, value: str | None, default: int | None, *, minimum: int = 0) -> int | None:
    if value is None:
        return default
    v = str(value).strip().lower()
    if v in ("none", "unlimited", "-1") and default is None:
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"option {name}={value!r}: expected an integer") from None
    if n < minimum:
        raise ValueError(f"option {name}={value!r}: must be at least {minimum}")
    return n


def _position(name: str, value: str | None) -> tuple[int, int] | None:
    """``ledger:entry`` (more ``:partition:batch`` fields are ignored), ``earliest`` / ``latest``."""
    if value is None:
        return None
    v = str(value).strip()
    if v.lower() == "earliest":
        return None if name == "startingMessageId" else (-1, -1)
    if v.lower() == "latest":
        return None if name == "endingMessageId" else (2**63 - 1, 2**63 - 1)
    parts = v.split(":")
    try:
        if len(parts) < 2:
            raise ValueError
        return (int(parts[0]), int(parts[1]))
    except ValueError:
        raise ValueError(
            f"option {name}={value!r}: expected 'ledgerId:entryId' (as a MessageId prints), 'earliest' or 'latest'"
        ) from None


def _addresses(value: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    v = value.strip()
    if v.startswith("{"):
        try:
            got = json.loads(v)
        except ValueError as e:
            raise ValueError(f"option bookieAddresses: malformed JSON ({e})") from None
        return {str(k): str(x) for k, x in got.items()}
    out = {}
    for item in v.split(","):
        if not item.strip():
            continue
        key, sep, addr = item.partition("=")
        if not sep:
            raise ValueError(f"option bookieAddresses={value!r}: expected 'id=host:port,...' or a JSON object")
        out[key.strip()] = addr.strip()
    return out


#: Schema types the core decodes into columns (``typed=auto`` types only these).
TYPED_KINDS = frozenset(
    [
        "AVRO",
        "JSON",
        "KEY_VALUE",
        "STRING",
        "BOOLEAN",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "FLOAT",
        "DOUBLE",
        "BYTES",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "INSTANT",
        "LOCAL_DATE",
        "LOCAL_TIME",
        "LOCAL_DATE_TIME",
        "PROTOBUF_NATIVE",
    ]
)


def _typed(value: str | None, schema: str | None) -> str:
    if value is None:
        return "true" if schema is not None else "auto"
    v = str(value).strip().lower()
    if v in ("auto", "true", "false"):
        if v == "false" and schema is not None:
            raise ValueError("pulsar: the option schema types the rows; it cannot go with typed=false")
        return v
    raise ValueError(f'option typed={value!r}: expected "auto", "true" or "false"')


def _user_schema(value: str | None) -> dict[str, Any] | None:
    """The ``schema`` option: Pulsar's ``SchemaInfo`` as JSON (``{"type": "AVRO", "schema": ..., "properties": {}}``)."""
    if value is None:
        return None
    try:
        info = json.loads(value)
    except ValueError as e:
        raise ValueError(
            f"option schema: not JSON ({e}); expected Pulsar's SchemaInfo, e.g. "
            '{"type": "AVRO", "schema": {...Avro definition...}}'
        ) from None
    if not isinstance(info, dict) or "type" not in info:
        raise ValueError('option schema: expected a JSON object with a "type" (Pulsar\'s SchemaInfo)')
    return info


def resolve_schema(opts: TopicOptions, topics: list[str]) -> dict[str, TopicSchema] | None:
    """Each topic's schema for typed rows, looked up once on the driver: the
    user's ``schema`` for every topic, else each topic's registry versions.
    ``typed=auto`` types the rows only when every topic's latest schema is the
    same and of a type the core decodes (BYTES stays the ``value`` column);
    ``typed=true`` makes anything else an error."""
    if opts.typed == "false":
        return None
    strict = opts.typed == "true"
    if not opts.reassemble:
        if strict:
            raise ValueError("pulsar: typed rows need whole messages; reassembleChunks=false goes with typed=false")
        return None
    if opts.user_schema is not None:
        given = as_topic_schema(opts.user_schema)
        return {topic: given for topic in topics}
    if opts.bookie_dirs is not None:
        # The registry's versions live in schema ledgers, read from running bookies.
        if strict:
            raise ValueError(
                "pulsar: typed=true with bookieDirs: the registry's schema ledgers are read from running bookies; "
                "pass the topic's schema with the schema option"
            )
        return None
    found: dict[str, TopicSchema] = {}
    for topic in topics:
        try:
            found[topic] = topic_schemas(
                topic,
                metadata_url=opts.metadata_url,
                admin_url=opts.admin_url,
                admin_token=opts.admin_token,
                **opts.admin_access(),
                metadata_access=opts.metadata_access,
                bookie_tls=opts.bookie_tls,
                timeout=opts.timeout,
            )
        except LookupError:
            if strict:
                raise LookupError(
                    f"pulsar: typed=true but topic {topic} has no schema in the registry; "
                    "pass one with the schema option, or typed=false"
                ) from None
            return None
    latest = {(s.latest.type, s.latest.schema, tuple(sorted(s.latest.properties.items()))) for s in found.values()}
    if len(latest) > 1:
        if strict:
            raise ValueError(f"pulsar: typed=true but the topics {topics} have different schemas; read them apart")
        return None
    kind = next(iter(found.values())).latest.type
    if kind not in TYPED_KINDS or (kind == "BYTES" and not strict):
        if strict:
            raise ValueError(f"pulsar: schema type {kind} is not decoded into columns; use typed=false")
        return None
    return found


@dataclass
class TopicOptions:
    """The source's options, checked once on the driver."""

    topics: list[str]
    pattern: str | None
    metadata_url: str | None
    admin_url: str | None
    admin_token: str | None
    bookie_addresses: dict[str, str] | None
    ledger_password: bytes
    start: tuple[int, int] | None
    end: tuple[int, int] | None
    read_compacted: bool
    decode: _native.DecodeOptions
    reassemble: bool
    chunks: _native.ReassemblyOptions
    read_ahead: int
    entries_per_partition: int
    offload_path: str | None
    bookie_dirs: list[str] | None
    timeout: float
    seek_by_time: bool
    push_filters: bool
    #: ``auto`` (typed when the topic's registry has a schema the core decodes), ``true`` or ``false``.
    typed: str = "auto"
    #: A schema the user passed (the ``schema`` option, Pulsar's ``SchemaInfo`` shape as JSON).
    user_schema: dict[str, Any] | None = None
    value_column: bool = True
    several: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    #: Each topic's schema for typed rows, resolved on the driver (see :func:`resolve_schema`).
    topic_schemas: dict[str, TopicSchema] | None = None
    #: Key name -> path of its PEM private key (``cryptoKeyFiles``): paths, never key material, travel
    #: to the tasks, which read the files themselves.
    crypto_key_files: dict[str, str] | None = None
    #: ``adminAuthPlugin`` / ``adminAuthParams`` (no secret inline: files or the environment) and the
    #: admin API's https settings; the method itself is built on the driver (:meth:`admin_access`).
    admin_auth_plugin: str | None = None
    admin_auth_params: str = ""
    admin_tls_trust: str | None = None
    admin_tls_hostname_verification: bool = True
    #: TLS and authentication to ZooKeeper (the ``zk*`` options; passwords by file or variable only).
    metadata_access: ZooKeeperAccess | None = None
    #: TLS to the bookies (the ``bookkeeperTLS*`` options: file paths, read by each task).
    bookie_tls: BookieTls | None = None

    def admin_access(self) -> dict[str, Any]:
        """``admin_auth`` / ``admin_tls`` for the admin REST API, built once per driver process (an
        OAuth2 token is then fetched once, and again only as it expires)."""
        return _admin_access(
            self.admin_auth_plugin, self.admin_auth_params, self.admin_tls_trust, self.admin_tls_hostname_verification
        )

    def crypto_keys(self) -> _native.CryptoKeys | None:
        """The private keys of ``cryptoKeyFiles``, read once per process."""
        if not self.crypto_key_files:
            return None
        return load_key_files(tuple(sorted(self.crypto_key_files.items())))

    def __repr__(self) -> str:
        """The options with the admin token and the ledger password masked and every URI's
        credentials redacted (``offloadPath``, the metadata and admin URLs)."""
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "admin_token" and value is not None:
                text = repr(MASK)
            elif f.name == "ledger_password" and value:
                text = repr(MASK.encode())
            else:
                text = redact_uri(repr(value))
            shown.append(f"{f.name}={text}")
        return f"TopicOptions({', '.join(shown)})"

    @staticmethod
    def parse(options: Mapping[str, str]) -> TopicOptions:
        lower = {str(k).lower(): v for k, v in options.items()}
        known = {o.lower() for o in OPTIONS} | {"path"}
        unknown = sorted(k for k in lower if k not in known)
        if unknown:
            raise ValueError(
                f"pulsar: unknown option{'s' if len(unknown) > 1 else ''} {unknown}; the options are {list(OPTIONS)}"
            )

        def get(name: str) -> str | None:
            v = lower.get(name.lower())
            return None if v is None else str(v)

        topic, topics, pattern = get("topic") or get("path"), get("topics"), get("topicsPattern")
        given = [n for n, v in (("topic", topic), ("topics", topics), ("topicsPattern", pattern)) if v]
        if len(given) != 1:
            raise ValueError(
                "pulsar: give exactly one of the options topic, topics or topicsPattern, e.g. "
                '.option("topic", "persistent://public/default/orders")' + (f" (got {given})" if given else "")
            )
        names = [topic] if topic else [t.strip() for t in (topics or "").split(",") if t.strip()]
        metadata_url, admin_url = get("metadataUrl"), get("adminUrl")
        if (metadata_url is None) == (admin_url is None):
            raise ValueError(
                "pulsar: give one of the options metadataUrl ('zk:host:2181', 'rocksdb:/path') or adminUrl "
                "('http://broker:8080')"
            )
        # Building the options checks them (an OptionsError names a bad one), here on the driver; an
        # option not given is the core's default.
        decode = _native.DecodeOptions(
            verify_checksum=_bool("verifyChecksum", get("verifyChecksum"), None),
            keep_markers=_bool("keepMarkers", get("keepMarkers"), None),
            max_uncompressed_size=_int("maxUncompressedSize", get("maxUncompressedSize"), None, minimum=1),
            utf8_errors=get("utf8Errors") or None,
            max_output_bytes=_int("maxOutputBytes", get("maxOutputBytes"), None, minimum=1),
        )
        chunks = reassembly_options(
            max_pending=_int(
                "maxPendingChunkedMessage", get("maxPendingChunkedMessage"), _DEFAULTS.max_pending, minimum=1
            ),
            expire_after_ms=_int(
                "expireTimeOfIncompleteChunkedMessageMs",
                get("expireTimeOfIncompleteChunkedMessageMs"),
                _DEFAULTS.expire_after_ms,
            ),
            max_message_size=_int("maxMessageSize", get("maxMessageSize"), None, minimum=1),
        )
        timeout = get("timeout")
        seconds = 30.0 if timeout is None else check_timeout("option timeout", timeout.strip())
        key_files = _crypto_key_files(get("cryptoKeyFiles"))
        auth_plugin, auth_params = get("adminAuthPlugin"), get("adminAuthParams") or ""
        if auth_params and auth_plugin is None:
            raise ValueError("pulsar: option adminAuthParams needs adminAuthPlugin")
        if auth_plugin is not None and get("adminToken") is not None:
            raise ValueError("pulsar: give adminToken or adminAuthPlugin, not both")
        if has_inline_secret(auth_params):
            raise ValueError(
                "pulsar: option adminAuthParams holds a secret, which Spark would show in plans and logs: "
                "put it in a file (token: file:///path, basic: passwordFile, oauth2: privateKey file:///...) or "
                "an environment variable (token: env:VAR, basic: passwordEnv)"
            )
        tls_trust = get("adminTlsTrustCertsFilePath")
        hostname_verification = _bool("adminTlsHostnameVerification", get("adminTlsHostnameVerification"), True)
        # Built now, on the driver: a bad plugin, parameter or file is one error before any task.
        _admin_access(auth_plugin, auth_params, tls_trust, hostname_verification)
        try:
            zk_access = zookeeper_settings(
                ca_file=get("zkCaFile"),
                cert_file=get("zkCertFile"),
                key_file=get("zkKeyFile"),
                digest_user=get("zkDigestUser"),
                sasl_user=get("zkSaslUser"),
                password_file=get("zkPasswordFile"),
                password_env=get("zkPasswordEnv"),
            )
        except SettingError as e:
            raise ValueError(f"pulsar: the zk* options: {e}") from None
        try:
            # The files are read now, on the driver: a bad one is one error before any task.
            bookie_tls = bookie_settings(
                *(get(f"bookkeeperTLS{n}FilePath") for n in ("TrustCerts", "Certificate", "Key")),
                hostname_verification=_bool(
                    "bookkeeperTLSHostnameVerificationEnabled", get("bookkeeperTLSHostnameVerificationEnabled"), False
                ),
                timeout=seconds,
            )
        except SettingError as e:
            if e.setting == "trust_certs_file":
                raise ValueError(
                    "pulsar: the bookkeeperTLS* options need bookkeeperTLSTrustCertsFilePath (the CA bundle)"
                ) from None
            raise ValueError(f"pulsar: the bookkeeperTLS* options: {e}") from None
        dirs = get("bookieDirs")
        password = get("ledgerPassword")
        return TopicOptions(
            topics=names,
            pattern=pattern,
            metadata_url=metadata_url,
            admin_url=admin_url,
            admin_token=get("adminToken"),
            bookie_addresses=_addresses(get("bookieAddresses")),
            ledger_password=(password or "").encode(),
            start=_position("startingMessageId", get("startingMessageId")),
            end=_position("endingMessageId", get("endingMessageId")),
            read_compacted=_bool("readCompacted", get("readCompacted"), False),
            decode=decode,
            reassemble=_bool("reassembleChunks", get("reassembleChunks"), True),
            chunks=chunks,
            read_ahead=_int("chunkReadAhead", get("chunkReadAhead"), 100_000) or 0,
            entries_per_partition=_int("entriesPerPartition", get("entriesPerPartition"), 50_000, minimum=1) or 50_000,
            offload_path=get("offloadPath"),
            bookie_dirs=None if dirs is None else [d.strip() for d in dirs.split(",") if d.strip()],
            timeout=seconds,
            seek_by_time=_bool("seekByTime", get("seekByTime"), True),
            push_filters=_bool("pushFilters", get("pushFilters"), False),
            typed=_typed(get("typed"), get("schema")),
            user_schema=_user_schema(get("schema")),
            value_column=_bool("valueColumn", get("valueColumn"), True),
            several=bool(topics or pattern),
            crypto_key_files=key_files,
            admin_auth_plugin=auth_plugin,
            admin_auth_params=auth_params,
            admin_tls_trust=tls_trust,
            admin_tls_hostname_verification=hostname_verification,
            metadata_access=zk_access,
            bookie_tls=bookie_tls,
        )

    def offload(self) -> tuple[Any, str]:
        """The offload filesystem and prefix (``offloadPath`` is a URI pyarrow knows:
        ``s3://bucket/prefix?endpoint_override=...``, ``gs://...``, a local directory)."""
        if self.offload_path is None:
            return None, ""
        fs, path = filesystem_from_uri(self.offload_path, "option offloadPath")
        return fs, path

    def output(self) -> pa.Schema:
        schema = output_schema(self.decode, reassemble=self.reassemble)
        if self.topic_schemas:
            any_schema = next(iter(self.topic_schemas.values()))
            schema = typed_schema(schema, any_schema, value_column=self.value_column)
        if self.several:
            schema = schema.append(pa.field("topic", pa.string(), False))
        return schema


def _pattern_topics(opts: TopicOptions) -> list[str]:
    """The persistent topics of the pattern's namespace whose full name matches it."""
    assert opts.pattern is not None
    try:
        regex = re.compile(opts.pattern)
    except re.error as e:
        raise ValueError(f"option topicsPattern={opts.pattern!r}: {e}") from None
    m = re.match(r"^(persistent://)?([^/]+)/([^/]+)/", opts.pattern)
    if not m:
        raise ValueError(
            f"option topicsPattern={opts.pattern!r}: expected persistent://tenant/namespace/<regex of the topic name>"
        )
    tenant, ns = m.group(2), m.group(3)
    names: list[str]
    if opts.admin_url is not None or is_admin_url(opts.metadata_url or ""):
        access = opts.admin_access()
        admin = AdminRest(
            opts.admin_url or opts.metadata_url or "",
            token=opts.admin_token,
            auth=access.get("admin_auth"),
            tls=access.get("admin_tls"),
            timeout=opts.timeout,
        )
        names = []
        for path in (f"/admin/v2/persistent/{tenant}/{ns}", f"/admin/v2/persistent/{tenant}/{ns}/partitioned"):
            got = admin.get(path, what=f"namespace {tenant}/{ns}")
            if not isinstance(got, list) or not all(isinstance(n, str) for n in got):
                raise ValueError(f"namespace {tenant}/{ns}: the broker's topic list at {path} is {str(got)[:60]!r}")
            names += got
    else:
        store = open_store(opts.metadata_url or "", timeout=opts.timeout, access=opts.metadata_access)
        try:
            from urllib.parse import unquote_plus

            local = store.children(f"/managed-ledgers/{tenant}/{ns}/persistent")
            names = [f"persistent://{tenant}/{ns}/{unquote_plus(n)}" for n in local]
        finally:
            store.close()
    bases = sorted({re.sub(r"-partition-\d+$", "", n) for n in names})
    found = [n for n in bases if regex.fullmatch(n)]
    if not found:
        raise LookupError(f"option topicsPattern={opts.pattern!r}: no topic of {tenant}/{ns} matches")
    return found


def resolve_layouts(opts: TopicOptions, partitions: list[int] | None = None) -> list[TopicLayout]:
    """The layouts of the topics the options name (the driver's metadata look-ups)."""
    names = opts.topics if opts.pattern is None else _pattern_topics(opts)
    out = []
    for name in names:
        out.append(
            topic_layout(
                name,
                metadata_url=opts.metadata_url,
                admin_url=opts.admin_url,
                admin_token=opts.admin_token,
                **opts.admin_access(),
                metadata_access=opts.metadata_access,
                bookie_addresses=opts.bookie_addresses,
                ledger_password=opts.ledger_password,
                partitions=partitions,
                timeout=opts.timeout,
                offline=opts.bookie_dirs is not None,
            )
        )
    return out
