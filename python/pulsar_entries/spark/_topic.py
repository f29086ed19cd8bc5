"""The Spark data source for topics: ``spark.read.format("pulsar")``, straight
from the cluster's storage, in one hop.

The driver resolves the layout (metadata store or admin REST API), the open
ledgers' last-add-confirmed and the offload blocks, applies the pushed filters
(topic partitions; a seek by time) and plans ranges of entries
(:mod:`pulsar_entries._cluster.scan`). Each task reads its range from the
bookies, tiered storage or bookie files, decodes it and yields Arrow record
batches: no ``mapInArrow``, no second crossing into Python.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from .. import _native
from .._cluster import TopicLayout, open_store, topic_layout
from .._cluster.admin import AdminRest, is_admin_url
from .._cluster.scan import (
    EntryRange,
    ReadCounter,
    output_schema,
    partition_segments,
    plan_ranges,
    scan_range,
    seek_by_time,
)
from ..schemas import TopicSchema, as_topic_schema, topic_schemas, typed, typed_schema
from ._arrow import conform, spark_schema

#: The short name: ``spark.read.format("pulsar")``.
NAME = "pulsar"

#: Options the source reads (case-insensitive, as Spark passes them).
OPTIONS = (
    "topic",
    "topics",
    "topicsPattern",
    "metadataUrl",
    "adminUrl",
    "adminToken",
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
)

#: The columns whose range filters become a seek, and the entry-metadata field each seeks on.
TIME_COLUMNS = {"publish_time": "publish_time", "broker_timestamp": "broker_timestamp"}


def _bool(name: str, value: str | None, default: bool) -> bool:
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
    found: dict[str, TopicSchema] = {}
    for topic in topics:
        try:
            found[topic] = topic_schemas(
                topic,
                metadata_url=opts.metadata_url,
                admin_url=opts.admin_url,
                admin_token=opts.admin_token,
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
    decode: dict[str, Any]
    reassemble: bool
    chunks: dict[str, Any]
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
        utf8 = get("utf8Errors") or "replace"
        decode: dict[str, Any] = dict(
            verify_checksum=_bool("verifyChecksum", get("verifyChecksum"), True),
            keep_markers=_bool("keepMarkers", get("keepMarkers"), False),
            max_uncompressed_size=_int(
                "maxUncompressedSize", get("maxUncompressedSize"), _native.DEFAULT_MAX_UNCOMPRESSED_SIZE, minimum=1
            ),
            utf8_errors=utf8,
            max_output_bytes=_int("maxOutputBytes", get("maxOutputBytes"), None, minimum=1),
        )
        # The decoder checks its own options (utf8Errors, ...) here, on the driver.
        _native.decode(
            pa.table(
                {
                    "ledger_id": pa.array([], pa.int64()),
                    "entry_id": pa.array([], pa.int64()),
                    "data": pa.array([], pa.binary()),
                }
            ),
            utf8_errors=utf8,
            max_output_bytes=decode["max_output_bytes"],
        )
        chunks: dict[str, Any] = dict(
            max_pending=_int("maxPendingChunkedMessage", get("maxPendingChunkedMessage"), 100, minimum=1),
            expire_after_ms=_int(
                "expireTimeOfIncompleteChunkedMessageMs", get("expireTimeOfIncompleteChunkedMessageMs"), 60_000
            ),
            max_message_size=_int(
                "maxMessageSize", get("maxMessageSize"), _native.DEFAULT_MAX_UNCOMPRESSED_SIZE, minimum=1
            ),
        )
        timeout = get("timeout")
        try:
            seconds = 30.0 if timeout is None else float(timeout)
        except ValueError:
            raise ValueError(f"option timeout={timeout!r}: expected seconds") from None
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
        )

    def offload(self) -> tuple[Any, str]:
        """The offload filesystem and prefix (``offloadPath`` is a URI pyarrow knows:
        ``s3://bucket/prefix?endpoint_override=...``, ``gs://...``, a local directory)."""
        if self.offload_path is None:
            return None, ""
        import pyarrow.fs as pafs

        try:
            fs, path = pafs.FileSystem.from_uri(self.offload_path)
        except (pa.ArrowInvalid, ValueError, OSError) as e:
            raise ValueError(f"option offloadPath={self.offload_path!r}: {e}") from None
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
        admin = AdminRest(opts.admin_url or opts.metadata_url or "", token=opts.admin_token, timeout=opts.timeout)
        names = [str(n) for n in admin.get(f"/admin/v2/persistent/{tenant}/{ns}", what=f"namespace {tenant}/{ns}")]
        names += [str(n) for n in admin.get(f"/admin/v2/persistent/{tenant}/{ns}/partitioned")]
    else:
        store = open_store(opts.metadata_url or "", timeout=opts.timeout)
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
                bookie_addresses=opts.bookie_addresses,
                ledger_password=opts.ledger_password,
                partitions=partitions,
                timeout=opts.timeout,
                offline=opts.bookie_dirs is not None,
            )
        )
    return out


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _micros(value: Any) -> int | None:
    """A filter's time literal in µs; None (not pushed) for a naive one (``TIMESTAMP_NTZ``)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return (value - _EPOCH) // dt.timedelta(microseconds=1)
    return None


@dataclass
class Pushed:
    """The filters the source applies: topic partitions, and time bounds per column
    (``(ms, inclusive)``; the filters stay with Spark too)."""

    partitions: set[int] | None = None
    lower: dict[str, tuple[int, bool]] = field(default_factory=dict)
    upper: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def add(self, f: Filter) -> bool:
        """Takes the filter if it can; True when Spark need not apply it again."""
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        col = attribute[0] if len(attribute) == 1 else None
        if col == "partition":
            if isinstance(f, EqualTo) and isinstance(f.value, int):
                wanted = {f.value}
            elif isinstance(f, In) and all(isinstance(v, int) for v in f.value):
                wanted = set(f.value)
            else:
                return False
            self.partitions = wanted if self.partitions is None else self.partitions & wanted
            return True
        if col in TIME_COLUMNS:
            us = _micros(getattr(f, "value", None))
            if us is None:
                return False
            # Whole milliseconds, rounded outwards: the bounds only widen.
            if isinstance(f, (GreaterThan, GreaterThanOrEqual, EqualTo)):
                bound = (us // 1000, not isinstance(f, GreaterThan) or us % 1000 != 0)
                old = self.lower.get(col)
                if old is None or (bound[0], not bound[1]) > (old[0], not old[1]):
                    self.lower[col] = bound
            if isinstance(f, (LessThan, LessThanOrEqual, EqualTo)):
                bound = (-(-us // 1000), not isinstance(f, LessThan) or us % 1000 != 0)
                old = self.upper.get(col)
                if old is None or (bound[0], bound[1]) < (old[0], old[1]):
                    self.upper[col] = bound
        return False


def plan(
    opts: TopicOptions,
    layouts: list[TopicLayout],
    pushed: Pushed | None = None,
    *,
    counter: ReadCounter | None = None,
) -> list[tuple[str, EntryRange]]:
    """Every range to read, ``(topic, range)``: partitions selected, time bounds sought."""
    pushed = pushed or Pushed()
    fs, prefix = opts.offload()
    out: list[tuple[str, EntryRange]] = []
    for layout in layouts:
        parts = [p for p in layout.partitions if pushed.partitions is None or p.partition in pushed.partitions]
        layout = TopicLayout(layout.topic, parts, layout.bookies)
        reader = (
            None
            if opts.bookie_dirs is not None
            else _native.BookieReader(layout.bookies, timeout_ms=int(opts.timeout * 1000))
        )
        bounds: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
        empty: set[int] = set()
        if opts.seek_by_time and reader is not None and (pushed.lower or pushed.upper):
            for part in parts:
                lo: tuple[int, int] | None = None
                hi: tuple[int, int] | None = None
                segs = partition_segments(part, reader, start=opts.start, end=opts.end, counter=counter)
                for col in set(pushed.lower) | set(pushed.upper):
                    found = seek_by_time(
                        segs,
                        part.partition,
                        reader,
                        column=TIME_COLUMNS[col],
                        lower=pushed.lower.get(col),
                        upper=pushed.upper.get(col),
                        offload_filesystem=fs,
                        offload_prefix=prefix,
                        counter=counter,
                    )
                    if found is None:
                        empty.add(part.partition)
                        break
                    a, b = found
                    if a is not None and (lo is None or a > lo):
                        lo = a
                    if b is not None and (hi is None or b < hi):
                        hi = b
                bounds[part.partition] = (lo, hi)
        if empty:
            # No entry of these partitions can match; a compacted read still has its compacted ledger.
            keep = [p for p in parts if p.partition not in empty or (opts.read_compacted and p.compacted)]
            for p in empty:
                bounds[p] = ((2**62, 0), (-1, -1))
            layout = TopicLayout(layout.topic, keep, layout.bookies)
        ranges = plan_ranges(
            layout,
            reader=reader,
            start=opts.start,
            end=opts.end,
            bounds=bounds,
            read_compacted=opts.read_compacted,
            entries_per_partition=opts.entries_per_partition,
            read_ahead=opts.read_ahead,
            offload_filesystem=fs,
            offload_prefix=prefix,
            counter=counter,
        )
        out += [(layout.topic, r) for r in ranges]
    return out


class PulsarTopicDataSource(DataSource):
    """``spark.read.format("pulsar").option("metadataUrl", ...).option("topic", ...).load()``:
    a topic's messages, read straight from the cluster's storage (see the README)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _checked(self) -> tuple[TopicOptions, list[TopicLayout]]:
        opts = TopicOptions.parse(self.options)
        layouts = getattr(self, "_layouts", None)
        if layouts is None:
            opts.offload()
            layouts = resolve_layouts(opts)
            self._layouts = layouts
            self._schemas = resolve_schema(opts, [layout.topic for layout in layouts])
        opts.topic_schemas = self._schemas
        return opts, layouts

    def schema(self) -> StructType:
        # Options are checked and the metadata resolved here, on the driver, when the
        # DataFrame is created: a bad option or an unreachable store is one error, before any task.
        opts, _ = self._checked()
        return spark_schema(opts.output())

    def reader(self, schema: StructType) -> DataSourceReader:
        opts, layouts = self._checked()
        if opts.push_filters:
            return PulsarTopicReader(opts, layouts)
        return PulsarTopicPlainReader(opts, layouts)


class PulsarTopicPlainReader(DataSourceReader):
    """Reads the planned ranges; takes no filters (the default, ``pushFilters=false``).

    Filter pushdown is opt-in because Spark 4.x keeps one planned read per loaded
    DataFrame (``PythonDataSourceV2.readInfo``) and a pushdown replaces it: a query
    without filters run on the same DataFrame *after* a filtered one reuses the
    filtered query's ranges. With ``pushFilters=true``, load the DataFrame once per query."""

    def __init__(self, opts: TopicOptions, layouts: list[TopicLayout]) -> None:
        self.opts = opts
        self.layouts = layouts
        self.pushed = Pushed()

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(item) for item in plan(self.opts, self.layouts, self.pushed)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        topic, rng = partition.value
        opts = self.opts
        fs, prefix = opts.offload()
        for table in scan_range(
            rng,
            decode_options=opts.decode,
            reassemble=opts.reassemble,
            offload_filesystem=fs,
            offload_prefix=prefix,
            bookie_dirs=opts.bookie_dirs,
            timeout=opts.timeout,
            **opts.chunks,
        ):
            if opts.topic_schemas:
                table = typed(table, opts.topic_schemas[topic], value_column=opts.value_column)
            if opts.several:
                table = table.append_column(
                    pa.field("topic", pa.string(), False), pa.array([topic] * table.num_rows, pa.string())
                )
            for batch in table.to_batches():
                if batch.num_rows:
                    yield conform(batch, large=False)


class PulsarTopicReader(PulsarTopicPlainReader):
    """With pushed filters: ``partition = / IN`` selects topic partitions (applied fully);
    ranges of ``publish_time`` / ``broker_timestamp`` become a seek (Spark applies them again)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for f in filters:
            if not self.pushed.add(f):
                yield f


def register(spark: Any) -> None:
    """Registers ``spark.read.format("pulsar")`` on a session and enables Python
    data source filter pushdown (``spark.sql.python.filterPushdown.enabled``)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PulsarTopicDataSource)
