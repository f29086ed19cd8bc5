"""``spark.readStream.format("pulsar")``: a topic as a stream, read straight from
the cluster's storage, exactly once, with no subscription and no broker in the
data path (see :mod:`pulsar_entries._cluster.stream` for the offsets and how
chunked messages are kept whole).

The driver asks the metadata store (and, for open ledgers, the bookies'
last-add-confirmed) how far each partition goes; each micro-batch's tasks read
their ranges as the batch source's tasks do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from .. import _native
from .._cluster import TopicLayout
from .._cluster.scan import partition_segments
from .._cluster.seek import seek_by_time
from .._cluster.stream import (
    EARLIEST,
    Backlog,
    DataLossError,
    MessageCounter,
    Position,
    TxnLimits,
    admit,
    admit_messages,
    backlog,
    normalize,
    offset_json,
    parse_starting_offsets,
    partitions_of,
    plan_stream,
    positions_of,
    stream_range,
)
from ..auth import bookie_client_options
from ..schemas import typed
from ._arrow import conform
from ._topic_options import TopicOptions, _bool, _int, resolve_layouts

try:  # Spark 4.2+: admission control and Trigger.AvailableNow.
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - Spark 4.0 / 4.1
    ReadLimit = object  # type: ignore[assignment,misc]
    ReadAllAvailable = ReadMaxBytes = ReadMaxRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


#: Batch options a stream does not take, and why.
NOT_STREAMED = {
    "startingMessageId": "use startingOffsets",
    "endingMessageId": "a stream has no end",
    "readCompacted": "a stream reads every message",
    "bookieDirs": "a stopped cluster does not grow",
    "pushFilters": "filters are applied by Spark",
}


def _time_ms(value: str) -> int:
    v = value.strip()
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        t = dt.datetime.fromisoformat(v)
    except ValueError:
        raise ValueError(
            f"option startingTime={value!r}: expected milliseconds since the epoch or an ISO 8601 time"
        ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return int(t.timestamp() * 1000)


@dataclass(frozen=True)
class StreamOptions:
    """A stream's own options, checked on the driver when the query starts."""

    starting: str | dict[str, Position | str]
    starting_time: int | None
    max_entries: int | None
    max_messages: int | None
    max_bytes: int | None
    fail_on_data_loss: bool
    read_back: int
    txn: TxnLimits

    @staticmethod
    def parse(options: Mapping[str, str], topic: TopicOptions) -> StreamOptions:
        lower = {str(k).lower(): str(v) for k, v in options.items()}
        for name, why in NOT_STREAMED.items():
            if name.lower() in lower and not (name == "readCompacted" and lower[name.lower()].lower() == "false"):
                raise ValueError(f"pulsar: option {name} is for spark.read, not readStream ({why})")
        start = lower.get("startingoffsets")
        time = lower.get("startingtime")
        if start is not None and time is not None:
            raise ValueError("pulsar: give startingOffsets or startingTime, not both")
        return StreamOptions(
            starting=parse_starting_offsets(start),
            starting_time=None if time is None else _time_ms(time),
            max_entries=_int("maxEntriesPerTrigger", lower.get("maxentriespertrigger"), None, minimum=1),
            max_messages=_int("maxMessagesPerTrigger", lower.get("maxmessagespertrigger"), None, minimum=1),
            max_bytes=_int("maxBytesPerTrigger", lower.get("maxbytespertrigger"), None, minimum=1),
            fail_on_data_loss=_bool("failOnDataLoss", lower.get("failondataloss"), True),
            read_back=_int("chunkReadBack", lower.get("chunkreadback"), 100_000) or 0,
            txn=TxnLimits(
                timeout_ms=_int("transactionTimeoutMs", lower.get("transactiontimeoutms"), 60_000, minimum=1) or 1,
                read_back=_int("transactionReadBack", lower.get("transactionreadback"), 100_000) or 0,
            ),
        )


class PulsarTopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch reader of ``spark.readStream.format("pulsar")``."""

    def __init__(self, opts: TopicOptions, stream: StreamOptions) -> None:
        self.opts = opts
        self.stream = stream
        self._layouts: list[TopicLayout] | None = None
        self._target: dict[str, Position] | None = None
        self._latest: dict[str, Any] | None = None
        self._readers: dict[str, Any] = {}

    # ------------------------------------------------------------------ the driver's look-ups

    def _reader(self, bookies: Mapping[str, str]) -> Any:
        key = repr(sorted(bookies.items()))
        if key not in self._readers:
            options = bookie_client_options(self.opts.timeout, self.opts.bookie_tls)
            self._readers[key] = _native.BookieReader(dict(bookies), options=options)
        return self._readers[key]

    def _refresh(self) -> list[TopicLayout]:
        self._layouts = resolve_layouts(self.opts)
        return self._layouts

    def _reader_for(self, layouts: list[TopicLayout]) -> Any:
        parts = partitions_of(layouts)
        return lambda name: self._reader(parts[name][0].bookies)

    def _backlogs(self, layouts: list[TopicLayout], start: Mapping[str, Position]) -> dict[str, Backlog]:
        out = {}
        for name, (layout, part) in partitions_of(layouts).items():
            b = backlog(part, start.get(name, EARLIEST), self._reader(layout.bookies))
            if b.lost is not None and self.stream.fail_on_data_loss:
                raise DataLossError(
                    f"pulsar: data loss: {b.lost}; set failOnDataLoss=false to skip it (reported as a status row)"
                )
            out[name] = b
        return out

    def _ends(self, backlogs: Mapping[str, Backlog], counts: Mapping[str, int] | None = None) -> dict[str, Position]:
        out = {}
        for name, b in backlogs.items():
            end = b.end if counts is None else b.cut(counts[name])
            out[name] = normalize(b.part, end, self._reader(self._bookies(name))) if end != b.start else b.start
        return out

    def _bookies(self, name: str) -> Mapping[str, str]:
        assert self._layouts is not None
        return partitions_of(self._layouts)[name][0].bookies

    # ------------------------------------------------------------------ offsets

    def initialOffset(self) -> dict:
        layouts = self._refresh()
        parts = partitions_of(layouts)
        starting = self.stream.starting
        if self.stream.starting_time is not None:
            return offset_json(self._seek(layouts, self.stream.starting_time))
        if isinstance(starting, dict):
            unknown = sorted(set(starting) - set(parts))
            if unknown:
                raise ValueError(
                    f"option startingOffsets: no partition {unknown} in the topics read; they have {sorted(parts)}"
                )
        latest = self._ends(self._backlogs(layouts, {}))
        out: dict[str, Position] = {}
        for name in parts:
            want = starting if isinstance(starting, str) else starting.get(name, "earliest")
            if want == "earliest":
                out[name] = EARLIEST
            elif want == "latest":
                out[name] = latest[name]
            else:
                assert isinstance(want, tuple)
                out[name] = want
        return offset_json(out)

    def _seek(self, layouts: list[TopicLayout], ms: int) -> dict[str, Position]:
        """Each partition's first entry published at or after ``ms`` (the end when none is)."""
        fs, prefix = self.opts.offload()
        out: dict[str, Position] = {}
        ends = self._ends(self._backlogs(layouts, {}))
        for name, (layout, part) in partitions_of(layouts).items():
            reader = self._reader(layout.bookies)
            segs = partition_segments(part, reader)
            found = seek_by_time(
                segs, part.partition, reader, lower=(ms, True), offload_filesystem=fs, offload_prefix=prefix
            )
            first = None if found is None else found[0]
            out[name] = ends[name] if found is None else (first if first is not None else EARLIEST)
        return out

    def getDefaultReadLimit(self) -> Any:
        if ReadMaxRows is None:
            return None
        # Spark's rows are messages when the stream counts them, else entries.
        if self.stream.max_messages is not None:
            return ReadMaxRows(self.stream.max_messages)
        if self.stream.max_entries is not None:
            return ReadMaxRows(self.stream.max_entries)
        if self.stream.max_bytes is not None:
            return ReadMaxBytes(self.stream.max_bytes)
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        layouts = self._refresh()
        begin = positions_of(start or {}, "offset") if start is not None else {}
        backlogs = self._backlogs(layouts, begin)
        if self._target is not None:
            # Trigger.AvailableNow: nothing past what existed when the query started.
            for name in list(backlogs):
                cap = self._target.get(name)
                b = backlogs[name]
                if cap is None:
                    backlogs[name] = Backlog(b.part, b.start, [], b.lost)
                else:
                    backlogs[name] = Backlog(b.part, b.start, _upto(b.segments, cap), b.lost)
        self._latest = {
            name: {"ledgerId": b.end[0], "entryId": b.end[1], "backlogEntries": b.entries, "backlogBytes": b.bytes}
            for name, b in sorted(backlogs.items())
        }
        max_entries, max_bytes = self.stream.max_entries, self.stream.max_bytes
        max_messages = self.stream.max_messages
        if start is None:
            # Spark 4.0 / 4.1 ask for the newest offset with no start, and cannot be limited.
            max_entries = max_bytes = max_messages = None
        elif ReadMaxRows is not None and limit is not None:
            # The engine's limit wins (ReadAllAvailable for Trigger.Once, say).
            rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            if max_messages is not None:
                max_messages = rows
                max_entries = self.stream.max_entries if rows is not None else None
            else:
                max_entries = rows
            max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
            if isinstance(limit, ReadMaxRows) and self.stream.max_bytes is not None:
                max_bytes = self.stream.max_bytes
        counts = admit(backlogs, max_entries=max_entries, max_bytes=max_bytes)
        if max_messages is not None:
            fs, prefix = self.opts.offload()
            counter = MessageCounter(self._reader_for(layouts), fs, prefix)
            counts = admit_messages(backlogs, counts, max_messages, counter)
        ends = self._ends(backlogs, counts)
        # A partition that did not move keeps its start (which may be earliest).
        for name, b in backlogs.items():
            if counts.get(name, 0) == 0 and name in begin:
                ends[name] = begin[name] if b.lost is None else b.start
        return offset_json(ends)

    def reportLatestOffset(self) -> dict | None:
        """Per partition: the newest position and the backlog, in entries and (estimated) bytes."""
        return self._latest

    def prepareForTriggerAvailableNow(self) -> None:
        layouts = self._refresh()
        self._target = self._ends(self._backlogs(layouts, {}))

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        layouts = self._layouts or self._refresh()
        begin, stop = positions_of(start, "offset"), positions_of(end, "offset")
        if any(name not in partitions_of(layouts) for name in stop):
            layouts = self._refresh()
        fs, prefix = self.opts.offload()
        ranges = plan_stream(
            layouts,
            begin,
            stop,
            reader_for=self._reader_for(layouts),
            entries_per_partition=self.opts.entries_per_partition,
            read_back=self.stream.read_back,
            txn=self.stream.txn,
            offload_filesystem=fs,
            offload_prefix=prefix,
        )
        return [InputPartition(r) for r in ranges]

    # ------------------------------------------------------------------ the tasks

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        sr = partition.value
        opts = self.opts
        fs, prefix = opts.offload()
        for table in stream_range(
            sr,
            decode_options=opts.decode,
            crypto_keys=opts.crypto_keys(),
            reassembly=opts.chunks,
            offload_filesystem=fs,
            offload_prefix=prefix,
            bookie_tls=opts.bookie_tls,
            timeout=opts.timeout,
        ):
            yield from spark_batches(opts, sr.topic, table)

    def commit(self, end: dict) -> None:
        """Nothing to do: the stream holds no subscription and writes nothing to the cluster."""

    def stop(self) -> None:
        self._readers.clear()


def spark_batches(opts: TopicOptions, topic: str, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """A task's messages as the source's rows: typed by the topic's schema, with the ``topic``
    column when several topics are read, as Spark takes them (batch and stream sources alike)."""
    if opts.topic_schemas:
        table = typed(table, opts.topic_schemas[topic], value_column=opts.value_column)
    if opts.several:
        table = table.append_column(
            pa.field("topic", pa.string(), False), pa.array([topic] * table.num_rows, pa.string())
        )
    for batch in table.to_batches():
        if batch.num_rows:
            yield conform(batch, large=False)


def _upto(segments: list[Any], cap: Position) -> list[Any]:
    """``segments`` cut before position ``cap``."""
    from .._cluster.scan import Segment

    out = []
    for s in segments:
        lid = s.ledger.ledger_id
        if lid > cap[0] or (lid == cap[0] and s.first >= cap[1]):
            break
        last = s.last
        if lid == cap[0]:
            last = cap[1] - 1 if last is None else min(last, cap[1] - 1)
        out.append(Segment(s.ledger, s.first, last))
    return out
