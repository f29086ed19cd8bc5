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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
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
from .._cluster import TopicLayout
from .._cluster.scan import (
    EntryRange,
    ReadCounter,
    plan_ranges,
    scan_range,
)
from .._cluster.seek import seek_partitions
from ..auth import bookie_client_options
from ._arrow import spark_schema
from ._stream import PulsarTopicStreamReader, StreamOptions, spark_batches
from ._topic_options import STREAM_OPTIONS, TIME_COLUMNS, TopicOptions, resolve_layouts, resolve_schema

__all__ = [
    "NAME",
    "PulsarTopicDataSource",
    "PulsarTopicReader",
    "Pushed",
    "TopicOptions",
    "plan",
    "register",
    "resolve_layouts",
]

#: The short name: ``spark.read.format("pulsar")``.
NAME = "pulsar"

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
            else _native.BookieReader(layout.bookies, options=bookie_client_options(opts.timeout, opts.bookie_tls))
        )
        bounds: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
        empty: set[int] = set()
        if opts.seek_by_time and reader is not None and (pushed.lower or pushed.upper):
            columns = {
                TIME_COLUMNS[col]: (pushed.lower.get(col), pushed.upper.get(col))
                for col in sorted(set(pushed.lower) | set(pushed.upper))
            }
            found = seek_partitions(
                parts,
                reader,
                columns,
                start=opts.start,
                end=opts.end,
                offload_filesystem=fs,
                offload_prefix=prefix,
                counter=counter,
            )
            for partition, positions in found.items():
                if positions is None:
                    empty.add(partition)
                else:
                    bounds[partition] = positions
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
    a topic's messages, read straight from the cluster's storage (see the README).

    Options (names case-insensitive; an unknown one is an error; each is checked when the DataFrame is
    created, on the driver):

    - ``topic`` / ``topics`` / ``topicsPattern``: one topic, a comma-separated list, or a regex over a
      namespace's persistent topics; exactly one. A partitioned topic reads every partition.
    - ``metadataUrl`` (``zk:host:2181``, ``rocksdb:/path``) or ``adminUrl`` (``http://broker:8080``): where
      the layout comes from, exactly one; ``adminToken``; ``bookieAddresses`` (``id=host:port,...`` or
      JSON); ``ledgerPassword`` (default empty).
    - ``adminAuthPlugin`` / ``adminAuthParams``: authentication to the admin REST API by Pulsar's names
      (``token``, ``oauth2``, ``basic``, ``tls``; see :mod:`pulsar_entries.auth`), secrets only by file or
      environment variable; ``adminTlsTrustCertsFilePath``, ``adminTlsHostnameVerification`` (default true):
      https to it. Used on the driver only.
    - ``zkCaFile``, ``zkCertFile``, ``zkKeyFile``: ZooKeeper over TLS; ``zkDigestUser`` or ``zkSaslUser`` (SASL
      DIGEST-MD5), with ``zkPasswordFile`` or ``zkPasswordEnv``: authentication to it. Used on the driver only.
    - ``bookkeeperTLSTrustCertsFilePath``, ``bookkeeperTLSCertificateFilePath``, ``bookkeeperTLSKeyFilePath``,
      ``bookkeeperTLSHostnameVerificationEnabled`` (default false): TLS to the bookies, as the broker's
      options name it. Only the paths travel to the tasks: each executor reads the files.
    - ``startingMessageId`` / ``endingMessageId``: inclusive bounds, ``ledgerId:entryId``, ``earliest`` or
      ``latest`` (default: the whole topic).
    - ``readCompacted`` (default false): the compacted view.
    - ``verifyChecksum``, ``keepMarkers``, ``maxUncompressedSize``, ``utf8Errors``, ``maxOutputBytes``:
      ``DecodeOptions`` (defaults: true, false, 268435456, ``replace``, none).
    - ``cryptoKeyFiles``: decrypts end-to-end encrypted messages, ``name=/path/key.pem,...`` (or one path
      for every key name); RSA or EC private keys in PEM. Only the paths travel to the tasks: each executor
      reads the files, which must be there (as with a Pulsar consumer's key files).
    - ``reassembleChunks`` (default true); ``maxPendingChunkedMessage``,
      ``expireTimeOfIncompleteChunkedMessageMs``, ``maxMessageSize``: ``ReassemblyOptions`` (defaults:
      100, 60000, 268435456); ``chunkReadAhead`` (default 100000 entries).
    - ``offloadPath``: the offload bucket as a URI pyarrow knows; ``bookieDirs``: a stopped cluster's
      bookie data directories, comma-separated.
    - ``entriesPerPartition`` (default 50000 entries per Spark partition), ``timeout`` (default 30 seconds
      per request).
    - ``pushFilters`` (default false), ``seekByTime`` (default true): filter pushdown.
    - ``typed`` (default ``auto``), ``schema``, ``valueColumn`` (default true): the topic's schema as
      typed columns.

    ``spark.readStream.format("pulsar")`` takes the same options (not ``startingMessageId``,
    ``endingMessageId``, ``readCompacted``, ``bookieDirs`` or ``pushFilters``), and these:

    - ``startingOffsets``: ``earliest`` (the default), ``latest``, or JSON of partition name ->
      ``{"ledgerId": L, "entryId": E}`` (the next entry to read; ``"L:E"``, ``earliest`` and ``latest`` too;
      a partition not named starts at earliest); or ``startingTime`` (ms, or ISO 8601): a seek by publish time.
    - ``maxEntriesPerTrigger``, ``maxMessagesPerTrigger`` (counted by the brokers' PIP-70 message index),
      ``maxBytesPerTrigger`` (bytes estimated from the ledgers' sizes): each micro-batch's limit, shared
      fairly among the partitions (default: no limit).
    - ``failOnDataLoss`` (default true): fail when retention deleted entries the stream had not read;
      false skips them with a status row.
    - ``chunkReadBack`` (default 100000 entries): how far a task reads back for a chunked message's
      earlier chunks.
    - ``transactionTimeoutMs`` (default 60000, Pulsar's clients' default), ``transactionReadBack`` (default
      100000 entries): how far a task reads back for a committed transaction's earlier messages (the
      longest transaction timeout the producers use, plus a minute, and at most so many entries).
    """

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
        given = {str(k).lower() for k in self.options}
        streamed = [o for o in STREAM_OPTIONS if o.lower() in given]
        if streamed:
            raise ValueError(f"pulsar: option {streamed[0]} is for spark.readStream, not spark.read")
        if opts.push_filters:
            return PulsarTopicReader(opts, layouts)
        return PulsarTopicPlainReader(opts, layouts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts, _ = self._checked()
        return PulsarTopicStreamReader(opts, StreamOptions.parse(self.options, opts))


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
            crypto_keys=opts.crypto_keys(),
            reassemble=opts.reassemble,
            offload_filesystem=fs,
            offload_prefix=prefix,
            bookie_dirs=opts.bookie_dirs,
            bookie_tls=opts.bookie_tls,
            timeout=opts.timeout,
            reassembly=opts.chunks,
        ):
            yield from spark_batches(opts, topic, table)


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
