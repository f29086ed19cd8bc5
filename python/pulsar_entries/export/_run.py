"""One export: rounds that each read the topic from where the table says it stopped up to the newest
readable entry (or a cap), and end in one commit per table.

**Which rows a round writes.** Every message has a *decision point*: its own entry, the last chunk
of a chunked message (PIP-107), or its transaction's ``TXN_COMMIT`` marker. A message is written
by the round that reads its decision point, so a round's output does not depend on where rounds
were cut:

* a transaction still open at a round's end is not written; the table records ``resume``, the
  first entry of the earliest such transaction, and the next round reads again from there (what it
  reads before ``next`` is only looked at for transactions, never written twice);
* an aborted transaction's messages are never written; a transaction undecided for longer than
  ``transaction_timeout`` (the transaction coordinator aborts it after the client's timeout, so
  this means a coordinator that is gone) is given up: a status row in the dead-letter table says
  so, and its messages are never written;
* a chunked message is kept whole by the stream reader (``_cluster.stream``), at its last chunk.

**Exactly once.** The dead-letter table commits before the main table, each commit recording how
far it got; a run resumes from what the tables say, and each table takes only the rows decided at
or after its own position. After a run is killed anywhere, the next run leaves no duplicate and no
gap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from .._arrow import repeat_bool
from .._cluster import TopicLayout
from .._cluster.read import topic_layout
from .._cluster.scan import output_schema
from .._cluster.stream import (
    EARLIEST,
    Backlog,
    Position,
    admit,
    backlog,
    lost_range,
    normalize,
    partitions_of,
    plan_stream,
    stream_range,
)
from .._crypto import CryptoKeysLike
from .._crypto import crypto_keys as to_crypto_keys
from ..auth import AdminTls, Authentication, BookieTls, ZooKeeperAccess, bookie_client_options
from ..strategies import _Adapter
from ._tables import TOMBSTONE, ExportError, Progress, TableTarget, conform, open_table

#: Pulsar's marker types for a transaction's end (``MarkerType`` in PulsarMarkers.proto).
TXN_COMMIT, TXN_ABORT = 21, 22

#: Transaction markers are kept as rows: a message is written at its transaction's commit marker.
KEEP_MARKERS = _native.DecodeOptions(keep_markers=True)

#: The message columns a table keeps beside the schema's own.
MESSAGE_COLUMNS = (
    "partition",
    "ledger_id",
    "entry_id",
    "batch_index",
    "key",
    "publish_time",
    "event_time",
    "producer_name",
    "sequence_id",
    "properties",
)

DEAD_LETTER_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.int32(), False),
        pa.field("ledger_id", pa.int64(), False),
        pa.field("entry_id", pa.int64(), False),
        pa.field("batch_index", pa.int32()),
        pa.field("key", pa.string()),
        pa.field("publish_time", pa.timestamp("us", tz="UTC")),
        pa.field("schema_version", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("error", pa.string()),
    ]
)


@dataclass
class ExportStats:
    """What an export (or one commit of it) did."""

    commits: int = 0
    entries: int = 0
    #: Message payload bytes read (decompressed, chunked messages whole).
    bytes: int = 0
    rows: int = 0
    deleted: int = 0
    dead_letters: int = 0
    keyless: int = 0
    #: Per partition, the next entry the table will take.
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Entries readable past ``positions`` when the last commit was made.
    lag_entries: int = 0

    def add(self, other: ExportStats) -> None:
        self.commits += other.commits
        self.entries += other.entries
        self.bytes += other.bytes
        self.rows += other.rows
        self.deleted += other.deleted
        self.dead_letters += other.dead_letters
        self.keyless += other.keyless
        self.positions = dict(other.positions)
        self.lag_entries = other.lag_entries


def _pos_ge(t: pa.Table, pos: Position) -> pa.Array:
    """Rows of ``t`` at or after ``pos``."""
    lid, eid = t["ledger_id"], t["entry_id"]
    after = pc.greater(lid, pos[0])
    same = pc.and_(pc.equal(lid, pos[0]), pc.greater_equal(eid, pos[1]))
    return pc.or_(after, same)


@dataclass
class _Txn:
    first: Position
    publish_ms: int | None
    rows: list[pa.Table] = field(default_factory=list)
    count: int = 0


class _PartitionPass:
    """One partition's messages in one round, in order, sorted into what each table takes."""

    def __init__(self, name: str, partition: int, main_next: Position, dead_next: Position, abandoned: set) -> None:
        self.name = name
        self.partition = partition
        self.main_next = main_next
        self.dead_next = dead_next
        self.abandoned = abandoned
        self.open: dict[tuple[int, int], _Txn] = {}
        self.ready: list[pa.Table] = []
        self.entry_errors: list[pa.Table] = []

    def take(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        marker = pc.fill_null(pc.is_valid(t["marker_type"]), False)
        txn = pc.and_(pc.fill_null(pc.is_valid(t["txnid_most_bits"]), False), pc.invert(marker))
        special = pc.or_(marker, txn)
        if not pc.any(special).as_py():
            self._decided(t, None)
            return
        flags = special.to_pylist()
        kinds = t.select(["marker_type", "txnid_most_bits", "txnid_least_bits", "ledger_id", "entry_id"]).to_pylist()
        publish = pc.cast(t["publish_time"], pa.int64()).to_pylist()
        run = 0
        for i, is_special in enumerate(flags):
            if not is_special:
                continue
            if run < i:
                self._decided(t.slice(run, i - run), None)
            run = i + 1
            k = kinds[i]
            tid = (k["txnid_most_bits"], k["txnid_least_bits"])
            pos = (k["ledger_id"], k["entry_id"])
            if k["marker_type"] is None:
                if tid in self.abandoned:
                    continue
                open_ = self.open.get(tid)
                if open_ is None:
                    open_ = self.open[tid] = _Txn(pos, publish[i])
                open_.rows.append(t.slice(i, 1))
                open_.count += 1
            elif k["marker_type"] in (TXN_COMMIT, TXN_ABORT) and tid[0] is not None:
                done = self.open.pop(tid, None)
                if done is not None and k["marker_type"] == TXN_COMMIT and tid not in self.abandoned:
                    self._decided(pa.concat_tables(done.rows), pos)
        if run < t.num_rows:
            self._decided(t.slice(run), None)

    def _decided(self, rows: pa.Table, at: Position | None) -> None:
        """Rows decided at ``at`` (their own positions when None), each to the table it goes to."""
        if not rows.num_rows:
            return
        bad = pc.fill_null(pc.is_valid(rows["error"]), False)
        for table, mask, since in (
            (self.ready, pc.invert(bad), self.main_next),
            (self.entry_errors, bad, self.dead_next),
        ):
            if at is None:
                # A status row (ledger -1: data retention deleted) is reported by the range that
                # meets it, once; it has no position of its own to compare.
                mask = pc.and_(mask, pc.or_(_pos_ge(rows, since), _data_loss(rows)))
            elif at < since:
                continue
            if not pc.any(mask).as_py():
                continue
            # Most slices go whole to one table: no copy then.
            table.append(rows if pc.all(mask).as_py() else rows.filter(mask))

    def finish(
        self, end: Position, timeout_ms: int, now_ms: int
    ) -> tuple[Position, list[tuple[tuple[int, int], _Txn]]]:
        """``(resume, given up)``: where the next round must read from, and the transactions
        undecided for longer than ``timeout_ms``."""
        given_up = []
        resume = end
        for tid, t in sorted(self.open.items(), key=lambda kv: kv[1].first):
            if t.publish_ms is not None and now_ms - t.publish_ms > timeout_ms:
                given_up.append((tid, t))
            else:
                resume = min(resume, t.first)
        return resume, given_up


class Exporter:
    """Reads a topic into a table, round by round (see the module's docs)."""

    def __init__(
        self,
        topic: str,
        table: str,
        *,
        mode: str = "append",
        metadata_url: str | None = None,
        admin_url: str | None = None,
        admin_token: str | None = None,
        admin_auth: Authentication | None = None,
        admin_tls: AdminTls | None = None,
        metadata_access: ZooKeeperAccess | None = None,
        bookie_tls: BookieTls | None = None,
        bookie_addresses: Mapping[str, str] | None = None,
        ledger_password: bytes = b"",
        offload_filesystem: Any = None,
        offload_prefix: str = "",
        timeout: float = 30.0,
        max_entries_per_commit: int = 100_000,
        max_bytes_per_commit: int = 32 << 20,
        transaction_timeout: float = 3 * 3600.0,
        chunk_read_back: int = 100_000,
        on_entry_error: str = "stop",
        fail_on_data_loss: bool = True,
        storage_options: Mapping[str, str] | None = None,
        catalog_uri: str | None = None,
        warehouse: str | None = None,
        catalog_properties: Mapping[str, str] | None = None,
        schema: Any = None,
        crypto_keys: CryptoKeysLike | None = None,
        strategy: Any = None,
    ) -> None:
        if mode not in ("append", "upsert"):
            raise ValueError(f"mode: expected 'append' or 'upsert', got {mode!r}")
        if strategy is not None and mode != "upsert":
            raise ValueError("strategy: a compaction strategy decides between a key's values: give mode='upsert'")
        #: The PIP-215 strategy of upsert mode, as raw bytes in and out (None: the latest position wins).
        self.strategy = None if strategy is None else _Adapter(strategy)
        if on_entry_error not in ("stop", "dead-letter"):
            raise ValueError(f"on_entry_error: expected 'stop' or 'dead-letter', got {on_entry_error!r}")
        for name, value in (
            ("max_entries_per_commit", max_entries_per_commit),
            ("max_bytes_per_commit", max_bytes_per_commit),
            ("chunk_read_back", chunk_read_back),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name[0] == "m" else 0):
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        for name, secs in (("timeout", timeout), ("transaction_timeout", transaction_timeout)):
            if isinstance(secs, bool) or not isinstance(secs, (int, float)) or not (0 < secs < float("inf")):
                raise ValueError(f"{name}: expected a positive number of seconds, got {secs!r}")
        if (metadata_url is None) == (admin_url is None):
            raise ValueError(
                "give one of metadata_url ('zk:host:2181', 'rocksdb:/path', 'http://broker:8080') or admin_url"
            )
        self.topic = _native.topic_paths(topic)["base"] if "://" not in topic else topic
        self.target = TableTarget.parse(table)
        self.mode = mode
        self.where: dict[str, Any] = dict(
            metadata_url=metadata_url,
            admin_url=admin_url,
            admin_token=admin_token,
            admin_auth=admin_auth,
            admin_tls=admin_tls,
            metadata_access=metadata_access,
        )
        self.bookie_addresses = bookie_addresses
        self.bookie_tls = bookie_tls
        self.ledger_password = ledger_password
        self.fs, self.prefix = offload_filesystem, offload_prefix
        self.timeout = float(timeout)
        self.max_entries = max_entries_per_commit
        self.max_bytes = max_bytes_per_commit
        self.txn_timeout_ms = int(transaction_timeout * 1000)
        self.read_back = chunk_read_back
        self.on_entry_error = on_entry_error
        self.fail_on_data_loss = fail_on_data_loss
        self.fixed_schema = schema
        self.crypto_keys = to_crypto_keys(crypto_keys)
        opened: dict[str, Any] = dict(
            storage_options=storage_options,
            catalog_uri=catalog_uri,
            warehouse=warehouse,
            catalog_properties=catalog_properties,
        )
        self.main = open_table(self.target, **opened)
        self.dead = open_table(self.target.dead_letters(), **opened)
        self._readers: dict[str, Any] = {}

    # ------------------------------------------------------------------ the cluster

    def _reader(self, bookies: Mapping[str, str]) -> Any:
        key = repr(sorted(bookies.items()))
        if key not in self._readers:
            options = bookie_client_options(self.timeout, self.bookie_tls)
            self._readers[key] = _native.BookieReader(dict(bookies), options=options)
        return self._readers[key]

    def close(self) -> None:
        """Lets the bookie connections go. (The metadata store is opened per round: a RocksDB store
        is a snapshot of when it was opened, and a ZooKeeper session kept open across rounds did not
        recover from a dropped connection within its timeout.)"""
        self._readers.clear()

    def _layouts(self) -> list[TopicLayout]:
        return [
            topic_layout(
                self.topic,
                bookie_addresses=self.bookie_addresses,
                ledger_password=self.ledger_password,
                timeout=self.timeout,
                **self.where,
            )
        ]

    def _schema(self) -> Any:
        if self.fixed_schema is not None:
            return self.fixed_schema
        from ..schemas import topic_schemas

        try:
            return topic_schemas(self.topic, timeout=self.timeout, bookie_tls=self.bookie_tls, **self.where)
        except LookupError:
            return None

    # ------------------------------------------------------------------ one round

    def round(self) -> ExportStats | None:
        """Reads what the tables lack (at most ``max_entries_per_commit`` new entries, about
        ``max_bytes_per_commit`` of them: what a round holds in memory) and commits
        it: the round's counts, or None when there was nothing new."""
        # What the tables hold now (another exporter may have committed since our last round).
        self.main.refresh()
        self.dead.refresh()
        main_p = self.main.progress(self.topic) or Progress(self.topic)
        dead_p = self.dead.progress(self.topic) or Progress(self.topic)
        layouts = self._layouts()
        parts = partitions_of(layouts)
        main_next = {n: main_p.next.get(n, EARLIEST) for n in parts}
        dead_next = {n: max(dead_p.next.get(n, EARLIEST), main_next[n]) for n in parts}
        resume = {n: min(main_p.resume.get(n, main_next[n]), main_next[n]) for n in parts}
        # The round's end: up to max_entries past what the main table holds.
        backlogs: dict[str, Backlog] = {}
        for name, (layout, part) in parts.items():
            reader = self._reader(layout.bookies)
            for pos in {resume[name], main_next[name]}:
                lost = lost_range(part, pos)
                if lost is not None and self.fail_on_data_loss:
                    raise ExportError(
                        f"export of {self.topic}: data loss: {lost}; pass fail_on_data_loss=False "
                        "(--skip-data-loss) to skip it, reported in the dead-letter table"
                    )
            backlogs[name] = backlog(part, main_next[name], reader)
        counts = admit(backlogs, max_entries=self.max_entries, max_bytes=self.max_bytes)
        ends: dict[str, Position] = {}
        for name, b in backlogs.items():
            reader = self._reader(parts[name][0].bookies)
            ends[name] = normalize(b.part, b.cut(counts[name]), reader) if counts[name] else b.start
        lag = sum(b.entries for b in backlogs.values()) - sum(counts.values())
        if not any(counts.values()):
            return None
        schema = self._schema()
        ranges = plan_stream(
            layouts,
            resume,
            ends,
            reader_for=lambda n: self._reader(parts[n][0].bookies),
            read_back=self.read_back,
            offload_filesystem=self.fs,
            offload_prefix=self.prefix,
        )
        abandoned = set(main_p.abandoned)
        passes = {
            n: _PartitionPass(n, part.partition, main_next[n], dead_next[n], abandoned)
            for n, (_, part) in parts.items()
        }
        by_number = {(layout.topic, part.partition): n for n, (layout, part) in parts.items()}
        entries = 0
        for sr in ranges:
            name = by_number[(sr.topic, sr.partition)]
            reader = self._reader(parts[name][0].bookies)
            for t in stream_range(
                sr,
                decode_options=KEEP_MARKERS,
                crypto_keys=self.crypto_keys,
                offload_filesystem=self.fs,
                offload_prefix=self.prefix,
                timeout=self.timeout,
                reader=reader,
            ):
                passes[name].take(t)
            if sr.range is not None:
                entries += sum(s.last - s.first + 1 for s in sr.range.segments if s.last is not None)
        now_ms = int(time.time() * 1000)
        new_resume: dict[str, Position] = {}
        status: list[pa.Table] = []
        for name, p in passes.items():
            new_resume[name], given_up = p.finish(ends[name], self.txn_timeout_ms, now_ms)
            for tid, txn in given_up:
                abandoned.add(tid)
                status.append(
                    _status_row(
                        p.partition,
                        txn.first,
                        f"transaction ({tid[0]},{tid[1]}) undecided for longer than the transaction timeout "
                        f"({self.txn_timeout_ms // 1000} s): its {txn.count} message(s) from {txn.first} on "
                        "are not exported",
                    )
                )
        errors = [t for p in passes.values() for t in p.entry_errors]
        unreadable = [t for t in errors if not pc.all(_data_loss(t)).as_py()]
        if unreadable and self.on_entry_error == "stop":
            first = pa.concat_tables(unreadable).slice(0, 1).to_pylist()[0]
            raise ExportError(
                f"export of {self.topic} stopped: partition {first['partition']} entry "
                f"{first['ledger_id']}:{first['entry_id']} could not be read ({first['error']}); this round was not "
                "committed, so nothing is lost: run again to retry, or pass on_entry_error='dead-letter' to record "
                "such entries in the dead-letter table and go on"
            )
        good = [t for p in passes.values() for t in p.ready]
        rows = _concat(good)
        stats = ExportStats(commits=1, entries=entries, lag_entries=max(0, lag), positions=dict(ends))
        main_rows, dead_rows = self._shape(rows, schema, stats)
        dead_rows = _concat(
            [*(_dead_letters(t) for t in errors), *status, *([dead_rows] if dead_rows is not None else [])]
        )
        seq = main_p.seq + 1
        if dead_rows is not None and dead_rows.num_rows:
            stats.dead_letters = dead_rows.num_rows
            dprog = Progress(self.topic, seq, dict(ends), dict(ends))
            self.dead.commit(conform(dead_rows, self.target.format), dprog)
        prog = Progress(self.topic, seq, dict(ends), new_resume, sorted(abandoned))
        self.main.commit(main_rows, prog, upsert=self.mode == "upsert")
        return stats

    def _shape(self, rows: pa.Table | None, schema: Any, stats: ExportStats) -> tuple[pa.Table | None, pa.Table | None]:
        """``(main rows, dead letters)``: messages typed by the topic's schema (the table's columns),
        and those the schema cannot read. In upsert mode, each key's latest message, with the
        ``TOMBSTONE`` flag column."""
        if rows is None:
            # Nothing decided this round: an empty table of the columns, so the commit still
            # records how far the round read (a transaction may hold everything it read).
            rows = output_schema(KEEP_MARKERS).empty_table()
        stats.bytes = pc.sum(pc.binary_length(rows["value"])).as_py() or 0
        if self.mode == "upsert":
            has_key = pc.is_valid(rows["key"])
            stats.keyless = rows.num_rows - (pc.sum(pc.cast(has_key, pa.int64())).as_py() or 0)
            keyed = rows.filter(has_key)
            rows = _latest_per_key(keyed) if self.strategy is None else self._strategic(keyed)
        empty = pc.equal(pc.binary_length(rows["value"]), 0)
        tomb = pc.fill_null(pc.or_(pc.is_null(rows["value"]), empty), True)
        dead: pa.Table | None = None
        if schema is not None:
            from ..schemas import typed

            live, gone = rows.filter(pc.invert(tomb)), rows.filter(tomb)
            t = typed(live, schema, value_column=True)
            failed = pc.fill_null(pc.is_valid(t["error"]), False)
            if pc.any(failed).as_py():
                dead = _dead_letters(t.filter(failed))
                t = t.filter(pc.invert(failed))
            extra = [c for c in t.column_names if c not in rows.column_names]
            # With a strategy the table keeps each key's value bytes too: what the strategy sees next.
            own = [*MESSAGE_COLUMNS, *(["value"] if self.strategy is not None else [])]
            out = t.select([*own, *extra])
            tombs = pa.chunked_array([repeat_bool(False, out.num_rows)])
            if gone.num_rows:
                # Tombstones keep their message columns; the schema's are null.
                nulls = {c: pa.nulls(gone.num_rows, out.schema.field(c).type) for c in extra}
                filler = pa.table({**{c: gone[c] for c in own}, **nulls}, schema=out.schema)
                out = pa.concat_tables([out, filler])
                tombs = pa.chunked_array([*tombs.chunks, repeat_bool(True, gone.num_rows)])
        else:
            out = rows.select([*MESSAGE_COLUMNS, "value"])
            tombs = tomb
        out = conform(out, self.target.format)
        if self.mode == "append":
            stats.rows = out.num_rows
            return out, dead
        stats.deleted = pc.sum(pc.cast(tombs, pa.int64())).as_py() or 0
        stats.rows = out.num_rows - stats.deleted
        return out.append_column(TOMBSTONE, tombs), dead

    def _strategic(self, rows: pa.Table) -> pa.Table:
        """Upsert with a PIP-215 strategy: per (partition, key), the table's value, then this round's
        messages in position order, folded as ``compact(strategy=...)`` folds them (a rejected message
        is dropped; an accepted tombstone deletes; with merging, the kept value is ``merge(prev, cur)``
        at the latest contributing message's position). The rows whose outcome changes the table: the
        winning message of each key it changes, its value merged where merged."""
        assert self.strategy is not None
        if not rows.num_rows:
            return rows
        cols = ("partition", "key", "ledger_id", "entry_id", "batch_index", "value")
        current = self.main.current(rows, cols)
        if current is None:
            raise ExportError(
                f"{self.target}: kept without a strategy (it has no value column); a strategy needs a table it kept "
                "from the start"
            )
        return fold_strategy(rows, current, self.strategy, f"export of {self.topic}")[0]

    # ------------------------------------------------------------------ the whole run

    def run(
        self,
        *,
        follow: bool = False,
        poll_interval: float = 1.0,
        on_commit: Callable[[ExportStats], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> ExportStats:
        total = ExportStats()
        try:
            self._loop(total, follow, poll_interval, on_commit, should_stop)
        finally:
            self.close()
        return total

    def _loop(
        self,
        total: ExportStats,
        follow: bool,
        poll_interval: float,
        on_commit: Callable[[ExportStats], None] | None,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        last: dict[str, Position] | None = None
        while True:
            if should_stop is not None and should_stop():
                return
            got = self.round()
            if got is not None:
                total.add(got)
                if on_commit is not None:
                    on_commit(got)
                if got.positions == last:
                    # Never expected (a round with entries to read moves on); never loop on it.
                    raise ExportError(f"export of {self.topic}: a round made no progress at {last}")
                last = dict(got.positions)
                if got.lag_entries:
                    continue
            if not follow:
                if got is None:
                    return
                continue
            deadline = time.monotonic() + poll_interval
            while time.monotonic() < deadline:
                if should_stop is not None and should_stop():
                    return
                time.sleep(min(0.1, poll_interval))


def _concat(tables: Sequence[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]


def _data_loss(t: pa.Table) -> Any:
    """Which rows are data-loss status rows (``stream_range`` gives them ledger -1)."""
    return pc.equal(t["ledger_id"], -1)


def _latest_per_key(rows: pa.Table) -> pa.Table:
    """Each (partition, key)'s message at the highest position, as the broker's compaction keeps it."""
    if not rows.num_rows:
        return rows
    i = "__pulsar_entries_row"
    ranked = rows.select(["partition", "key", "ledger_id", "entry_id", "batch_index"]).append_column(
        i, pa.array(np.arange(rows.num_rows, dtype=np.int64))
    )
    by_position = ranked.sort_by(
        [("partition", "ascending"), ("key", "ascending"), ("ledger_id", "ascending"), ("entry_id", "ascending"),
         ("batch_index", "ascending")]
    )  # fmt: skip
    last = by_position.group_by(["partition", "key"], use_threads=False).aggregate([(i, "last")])
    keep = last[f"{i}_last"]
    return rows.take(pc.take(keep, pc.sort_indices(keep)))  # in the order they were read


def _dead_letters(t: pa.Table) -> pa.Table:
    n = t.num_rows
    cols: dict[str, Any] = {}
    for f in DEAD_LETTER_SCHEMA:
        if f.name in t.column_names:
            cols[f.name] = pc.cast(t[f.name], f.type)
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return pa.table(cols, schema=DEAD_LETTER_SCHEMA)


def _status_row(partition: int, pos: Position, error: str) -> pa.Table:
    row: dict[str, list[Any]] = {f.name: [None] for f in DEAD_LETTER_SCHEMA}
    row.update(partition=[partition], ledger_id=[pos[0]], entry_id=[pos[1]], error=[error])
    return pa.table(row, schema=DEAD_LETTER_SCHEMA)


def fold_strategy(rows: pa.Table, current: pa.Table, adapter: Any, where: str) -> tuple[pa.Table, list[bool]]:
    """A PIP-215 strategy's upsert of ``rows`` (keyed messages with their ``value`` bytes) onto a
    table whose rows for those keys are ``current`` (positions and ``value``): per (partition, key),
    the table's value, then the messages in position order, folded as ``compact(strategy=...)``
    folds them (a rejected message is dropped; an accepted tombstone deletes; with merging, the kept
    value is ``merge(prev, cur)`` at the latest contributing message's position). Returns the rows
    whose outcome changes the table (each changed key's winning message, its value merged where
    merged) and, per row, whether its value was merged."""
    cols = ("partition", "key", "ledger_id", "entry_id", "batch_index", "value")
    # (partition, key) -> [value or None, position, winning row or None, merged value or None]
    state: dict[tuple[int, str], list[Any]] = {}
    for p, k, led, e, b, v in zip(*(current[c].to_pylist() for c in cols)):
        state[(p, k)] = [v or None, (led, e, -1 if b is None else b), None, None]
    ids = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    order = rows.select(["partition", "key", "ledger_id", "entry_id", "batch_index"]).append_column("i", ids)
    order = order.sort_by(
        [("partition", "ascending"), ("key", "ascending"), ("ledger_id", "ascending"),
         ("entry_id", "ascending"), ("batch_index", "ascending")]
    )  # fmt: skip
    values = rows["value"].to_pylist()
    for p, k, led, e, b, i in zip(*(order[c].to_pylist() for c in order.column_names)):
        pos, cur = (led, e, -1 if b is None else b), values[i] or None
        st = state.get((p, k))
        if st is not None and pos <= st[1]:
            continue  # older than what the table holds (a transaction decided after a newer message)
        prev = None if st is None else st[0]
        try:
            if adapter.keep_left_raw(prev, cur):
                continue
            merged = (
                adapter.merge_raw(prev, cur) if cur is not None and prev is not None and adapter.merge_enabled else None
            )
        except Exception as err:
            raise ExportError(
                f"{where}: the strategy failed on key {k!r} of partition {p} at {led}:{e}: {err}"
            ) from None
        state[(p, k)] = [merged if merged is not None else cur, pos, i, merged]
    won = sorted((st[2], st[3]) for st in state.values() if st[2] is not None)
    out = rows.take(pa.array([i for i, _ in won], pa.int64()))
    merged_rows = [m is not None for _, m in won]
    if any(merged_rows):
        new = [m if m is not None else v for (_, m), v in zip(won, out["value"].to_pylist())]
        at = out.schema.get_field_index("value")
        out = out.set_column(at, out.schema.field(at), pa.array(new, out.schema.field(at).type))
    return out, merged_rows
