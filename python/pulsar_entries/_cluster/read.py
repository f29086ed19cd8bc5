"""Reading a topic's entries: from the bookies, their files or tiered storage,
with the compacted view.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries._native as _native

from .._arrow import as_table, repeat_int32
from .._crypto import CryptoKeysLike
from .._decode import decode
from ..auth import AdminTls, Authentication, BookieTls, ZooKeeperAccess, bookie_client_options
from .admin import AdminRest, _unresolved_bookies, is_admin_url, resolve_topic_admin
from .files import BookieFiles
from .layout import Ledger, Partition, TopicLayout, resolve_topic
from .stores import open_store

#: Why a ledger without metadata cannot be read.
NO_METADATA = "no ledger metadata (none in the store, or none from the admin REST API)"


ENTRY_SCHEMA = pa.schema(
    [
        pa.field("ledger_id", pa.int64(), nullable=False),
        pa.field("entry_id", pa.int64(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("data", pa.binary()),
        pa.field("error", pa.string()),
    ]
)


def _offload_where(offload: dict[str, Any]) -> str:
    """The offload driver and its properties when known (the metadata store
    has them), else the object name's offload id (all the admin REST API gives)."""
    if offload.get("driver") is None:
        return f"offload id {offloaded_uuid(offload)}"
    return f"driver {offload.get('driver')!r}, properties {offload.get('driver_properties')}"


def offloaded_uuid(offload: dict[str, Any]) -> str:
    if offload.get("uuid"):
        return str(uuid.UUID(offload["uuid"]))
    mask = (1 << 64) - 1
    return str(uuid.UUID(int=((offload["uid_msb"] & mask) << 64) | (offload["uid_lsb"] & mask)))


def offload_path(led: Ledger, prefix: str) -> str:
    """The data object of an offloaded ledger under ``prefix`` (its index is this plus ``-index``)."""
    assert led.offload is not None
    name = f"{offloaded_uuid(led.offload)}-ledger-{led.ledger_id}"
    return f"{prefix.rstrip('/')}/{name}" if prefix else name


def from_offload(led: Ledger, fs: Any) -> bool:
    """Whether a ledger is read from tiered storage: offloaded, and its BookKeeper copy gone or
    an offload filesystem given (an offload filesystem wins over the bookies)."""
    off = led.offload
    return off is not None and (led.metadata is None or bool(off.get("bookkeeper_deleted")) or fs is not None)


def with_partition(batch: Any, partition: int) -> pa.Table:
    t = as_table(batch)
    t = t.add_column(2, "partition", repeat_int32(partition, t.num_rows))
    return t.select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA)


def error_rows(ledger_id: int, partition: int, message: str) -> pa.Table:
    return pa.table(
        {"ledger_id": [ledger_id], "entry_id": [-1], "partition": [partition], "data": [None], "error": [message]},
        schema=ENTRY_SCHEMA,
    )


#: What :func:`iter_topic` may hold at once by default: entries being read, the batch being
#: built and the one handed out (bytes).
DEFAULT_MEMORY_BUDGET = 256 << 20
#: The smallest budget: a bookie frame may carry an entry of up to 5 MiB.
MIN_MEMORY_BUDGET = 16 << 20


def _window_bytes(memory_budget: int) -> int:
    """The entry bytes of one window: an eighth of the budget. A window is held twice while it
    is read (the reader's rows, the Arrow batch built from them), the batch handed out stays
    alive while the next is read, and the allocators keep some of what was freed: measured,
    the peak is about 2.5 windows over the interpreter and its modules (benches/README.md)."""
    if not isinstance(memory_budget, int) or isinstance(memory_budget, bool) or memory_budget < MIN_MEMORY_BUDGET:
        raise ValueError(f"memory_budget: expected an int of at least {MIN_MEMORY_BUDGET} bytes, got {memory_budget!r}")
    return memory_budget // 8


def iter_layout(
    layout: TopicLayout,
    *,
    reader: Any | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
    read_compacted: bool = False,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> Iterator[pa.Table]:
    """The entries of a resolved layout, in topic order, partition by partition, in tables of
    about an eighth of ``memory_budget`` of entry data each (a bookie ledger is read window by
    window; an offloaded one block run by block run). A ledger that cannot be read at all gives
    one error row."""
    window = _window_bytes(memory_budget)
    reader = reader or _native.BookieReader(layout.bookies)
    for part in layout.partitions:
        # The first position to read: the later of `start` and the entry after the compaction horizon.
        lower = start
        if read_compacted and part.compacted is not None and part.compacted.metadata is None:
            # A compacted view without its compacted ledger would silently be the whole topic.
            yield error_rows(
                part.compacted.ledger_id,
                part.partition,
                f"compacted ledger {part.compacted.ledger_id}: {NO_METADATA}",
            )
        if read_compacted and part.compacted is not None and part.compacted.metadata is not None:
            for records in _ledger_windows(part.compacted, part.partition, reader, 0, None, window):
                yield from compacted_entries(records, part)
            horizon = part.horizon or compacted_to(part.compacted)
            if horizon is not None:
                after = (horizon[0], horizon[1] + 1)
                lower = after if lower is None else max(lower, after)
        for led in part.ledgers:
            first, last = 0, None
            if lower is not None:
                if led.ledger_id < lower[0]:
                    continue
                if led.ledger_id == lower[0]:
                    first = lower[1]
            if end is not None:
                if led.ledger_id > end[0]:
                    break
                if led.ledger_id == end[0]:
                    last = end[1]
            yield from _read_ledger_windows(
                led, part.partition, reader, first, last, offload_filesystem, offload_prefix, window
            )


def _read_ledger_windows(
    led: Ledger, partition: int, reader: Any, first: int, last: int | None, fs: Any, prefix: str, window: int
) -> Iterator[pa.Table]:
    """:func:`read_ledger` in tables of about ``window`` bytes of entries."""
    if from_offload(led, fs):
        if fs is not None:
            yield from _offloaded_windows(led, partition, first, last, fs, prefix, window)
            return
        yield read_ledger(led, partition, reader, first, last, fs, prefix)
        return
    if led.metadata is None:
        yield error_rows(led.ledger_id, partition, f"ledger {led.ledger_id}: {NO_METADATA}")
        return
    for batch in _ledger_windows(led, partition, reader, first, last, window):
        yield with_partition(batch, partition)


def _ledger_windows(
    led: Ledger, partition: int, reader: Any, first: int, last: int | None, window: int
) -> Iterator[pa.Table]:
    """A bookie ledger's entries (``ledger_id, entry_id, data, error``), window by window, up to
    the last entry the evidence supports (see ``BookieReader.bounded_last``); a failure of the
    whole ledger is one error row."""
    assert led.metadata is not None
    if not hasattr(reader, "read_window"):
        # A bookie's files (BookieFiles): already in memory.
        try:
            yield as_table(reader.read_ledger(led.ledger_id, led.metadata, first, last))
        except OSError as e:
            yield error_rows(led.ledger_id, partition, str(e)).drop_columns(["partition"])
        return
    try:
        bound, conflict = reader.bounded_last(led.ledger_id, led.metadata, led.entries if led.entries > 0 else None)
    except OSError as e:
        yield error_rows(led.ledger_id, partition, str(e)).drop_columns(["partition"])
        return
    stop = bound if last is None else min(last, bound)
    for table, _ in bookie_windows(led, partition, reader, first, stop, window):
        yield table
    if conflict is not None and (last is None or last > bound):
        yield (
            error_rows(led.ledger_id, partition, conflict)
            .drop_columns(["partition"])
            .set_column(1, "entry_id", pa.array([bound + 1], pa.int64()))
        )


def bookie_windows(
    led: Ledger, partition: int, reader: Any, first: int, stop: int, max_bytes: int
) -> Iterator[tuple[pa.Table, bool]]:
    """Entries ``first..=stop`` of a bookie ledger (``ledger_id, entry_id, data, error``), a
    window of about ``max_bytes`` at a time, each with whether the read ended there short of
    ``stop``: its last row stands for the rest (entries no bookie holds, the deadline), or the
    read failed whole (one error row)."""
    assert led.metadata is not None
    nxt: int | None = first
    while nxt is not None and nxt <= stop:
        try:
            batch, nxt = reader.read_window(led.ledger_id, led.metadata, nxt, stop, max_bytes)
        except OSError as e:
            yield error_rows(led.ledger_id, partition, str(e)).drop_columns(["partition"]), True
            return
        table = as_table(batch)
        yield table, nxt is None and table.num_rows > 0 and table["entry_id"][-1].as_py() < stop


def _offloaded_windows(
    led: Ledger, partition: int, first: int, last: int | None, fs: Any, prefix: str, window: int
) -> Iterator[pa.Table]:
    """An offloaded ledger read a run of blocks at a time (about ``window`` bytes each, from its
    index); without a usable index, whole."""
    from ..offload import list_blocks, read_blocks, split_blocks

    path = offload_path(led, prefix)
    try:
        blocks = list_blocks(path + "-index", ledger_id=led.ledger_id, filesystem=fs)
    except Exception:
        # No index, or one that cannot be read: the whole-object read reports it.
        yield read_ledger(led, partition, None, first, last, fs, prefix)
        return
    hi = last if last is not None else 2**63 - 1
    wanted = [b for b in blocks if b.first_entry_id <= hi and (b.last_entry_id is None or b.last_entry_id >= first)]
    for run in split_blocks(wanted, target_bytes=window):
        lo_off, hi_off = run[0].offset, run[-1].offset + run[-1].length
        try:
            with fs.open_input_file(path) as f:
                data = f.read_at(hi_off - lo_off, lo_off)
            table = read_blocks(data, run, ledger_id=led.ledger_id, first_entry=first, last_entry=last)
        except OSError as e:
            yield error_rows(led.ledger_id, partition, f"offloaded ledger {led.ledger_id} at {path}: {e}")
            continue
        yield with_partition(table, partition)


def read_ledger(
    led: Ledger, partition: int, reader: Any, first: int, last: int | None, fs: Any, prefix: str
) -> pa.Table:
    off = led.offload
    if off is not None and from_offload(led, fs):
        if fs is None:
            return error_rows(
                led.ledger_id,
                partition,
                f"ledger {led.ledger_id} is offloaded ({_offload_where(off)}) and no offload_filesystem was given",
            )
        from ..offload import read_offloaded_ledger

        path = offload_path(led, prefix)
        try:
            table = read_offloaded_ledger(
                path, filesystem=fs, ledger_id=led.ledger_id, first_entry=first, last_entry=last
            )
        except OSError as e:
            return error_rows(led.ledger_id, partition, f"offloaded ledger {led.ledger_id} at {path}: {e}")
        return with_partition(table, partition)
    if led.metadata is None:
        return error_rows(led.ledger_id, partition, f"ledger {led.ledger_id}: {NO_METADATA}")
    try:
        batch = reader.read_ledger(led.ledger_id, led.metadata, first, last)
    except OSError as e:
        return error_rows(led.ledger_id, partition, str(e))
    return with_partition(batch, partition)


def compacted_entries(records: Any, part: Partition) -> Iterator[pa.Table]:
    """The compacted ledger's records as topic entries (their original ids). A record that
    cannot be read is one error row (its place in the compacted ledger, and why)."""
    from .._compaction import from_ledger_records

    table = as_table(records)
    good = table.filter(table["error"].is_null())
    bad = table.filter(table["error"].is_valid())
    if good.num_rows:
        entries = from_ledger_records(pa.table({"record": good["data"]}))
        entries = entries.set_column(
            entries.schema.get_field_index("partition"),
            "partition",
            pa.array([part.partition] * entries.num_rows, pa.int32()),
        )
        ok = pc.and_(pc.is_valid(entries["ledger_id"]), pc.is_valid(entries["entry_id"]))
        unreadable = entries.filter(pc.invert(ok))
        if unreadable.num_rows:
            # The record's own id could not be read: the row keeps its place in the compacted ledger.
            where = good.filter(pc.invert(ok))
            errors = [
                f"compacted ledger record {lid}:{eid}: {why or 'unreadable record'}"
                for lid, eid, why in zip(
                    where["ledger_id"].to_pylist(), where["entry_id"].to_pylist(), unreadable["error"].to_pylist()
                )
            ]
            yield pa.table(
                {
                    "ledger_id": where["ledger_id"],
                    "entry_id": where["entry_id"],
                    "partition": pa.array([part.partition] * where.num_rows, pa.int32()),
                    "data": where["data"].cast(pa.binary()),
                    "error": pa.array(errors, pa.string()),
                },
                schema=ENTRY_SCHEMA,
            )
        yield entries.filter(ok).select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA)
    if bad.num_rows:
        yield with_partition(bad, part.partition)


def compacted_to(compacted: Ledger) -> tuple[int, int] | None:
    """The compacted ledger's ``pulsar/compactedTo``: the last message compaction
    kept, a lower bound of the horizon when the cursor does not give it."""
    raw = compacted.info.get("custom_metadata", {}).get("pulsar/compactedTo")
    if raw is None:
        return None
    ledger_id, entry_id, *_ = _native.deserialize_message_id(bytes(raw))
    return (ledger_id, entry_id)


def read_topic(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    admin_auth: Authentication | None = None,
    admin_tls: AdminTls | None = None,
    metadata_access: ZooKeeperAccess | None = None,
    bookie_tls: BookieTls | None = None,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    partitions: Sequence[int] | None = None,
    start_message_id: tuple[int, int] | None = None,
    end_message_id: tuple[int, int] | None = None,
    read_compacted: bool = False,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    timeout: float = 30.0,
    deadline: float | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    typed: bool = False,
    schema: Any = None,
    value_column: bool = True,
    crypto_keys: CryptoKeysLike | None = None,
) -> pa.Table:
    """A topic's entries straight from the cluster's storage, in topic order:
    ``ledger_id, entry_id, partition, data, error``, ready for :func:`decode`.

    ``typed=True`` (or a ``schema``) gives messages instead: decoded, chunks
    reassembled, and the topic's schema as typed columns
    (:mod:`pulsar_entries.schemas`). The schema comes from the same metadata
    store or admin REST API as the layout unless ``schema`` is given (a
    :class:`~pulsar_entries.schemas.TopicSchema`, or a ``SchemaInfo`` dict);
    ``value_column`` keeps the raw ``value``. ``crypto_keys`` decrypts end-to-end
    encrypted messages on the way (see :func:`pulsar_entries.decode`).

    Live ledgers come from the bookies (read only: no fencing, nothing past
    the last-add-confirmed); offloaded ones from ``offload_filesystem`` (a
    ``pyarrow.fs`` filesystem, ``offload_prefix`` the bucket or directory).
    ``read_compacted`` gives the compacted view: the compacted ledger, then
    the topic after the compaction horizon. ``start_message_id`` and
    ``end_message_id`` are inclusive ``(ledger_id, entry_id)`` bounds.

    ``bookie_dirs`` reads a stopped cluster from its bookies' data directories
    instead (see :class:`BookieFiles`: entry logs under ``.../current/``, the
    DbLedgerStorage ``locations`` index when present, the journals for what
    was not flushed): each copy's digest is checked, ledgers are bounded by
    their metadata, and damaged places in the files become error rows naming
    the file and offset.

    The layout comes from the metadata store (``metadata_url`` ``zk:...`` or
    ``rocksdb:...``) or, for users who cannot reach it, from the broker's
    admin REST API (``admin_url``, or an ``http(s)://`` ``metadata_url``;
    ``admin_token`` is sent as ``Authorization: Bearer``; ``admin_auth`` is any
    :mod:`pulsar_entries.auth` method, OAuth2 included, and ``admin_tls`` sets up
    https). ``metadata_access`` sets up TLS and authentication to ZooKeeper
    (:class:`pulsar_entries.auth.ZooKeeperAccess`), and ``bookie_tls`` TLS to
    the bookies (:class:`pulsar_entries.auth.BookieTls`). The entries never go
    through the broker. The REST API gives bookie ids, not addresses: ids that
    are not ``host:port`` need ``bookie_addresses`` (id -> ``host:port``); it
    omits ledger passwords, which ``ledger_password`` stands in for (Pulsar's
    default is empty; only HMAC digests use it).

    ``timeout`` bounds each request: to a bookie (connecting, then each read
    or READ_LAC, however slowly the bookie answers), to the metadata store and
    to the admin REST API. ``deadline`` (seconds, optional) bounds the whole
    read: the entries not read by then are error rows saying so. Ctrl-C
    stops a read within a second. The result is built from
    :func:`iter_topic`'s batches (``memory_budget`` bounds what is read at
    once; the table itself holds the whole topic).
    """
    batches = iter_topic(
        topic,
        metadata_url=metadata_url,
        admin_url=admin_url,
        admin_token=admin_token,
        admin_auth=admin_auth,
        admin_tls=admin_tls,
        metadata_access=metadata_access,
        bookie_tls=bookie_tls,
        bookie_addresses=bookie_addresses,
        ledger_password=ledger_password,
        partitions=partitions,
        start_message_id=start_message_id,
        end_message_id=end_message_id,
        read_compacted=read_compacted,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        bookie_dirs=bookie_dirs,
        timeout=timeout,
        deadline=deadline,
        memory_budget=memory_budget,
    )
    entries = pa.Table.from_batches(list(batches), schema=ENTRY_SCHEMA)
    if not typed and schema is None:
        return entries
    from ..schemas import topic_schemas
    from ..schemas import typed as typed_messages

    if schema is None:
        schema = topic_schemas(
            topic,
            metadata_url=metadata_url,
            admin_url=admin_url,
            admin_token=admin_token,
            admin_auth=admin_auth,
            admin_tls=admin_tls,
            metadata_access=metadata_access,
            bookie_tls=bookie_tls,
            timeout=timeout,
        )
    messages = entries_to_messages(entries, crypto_keys=crypto_keys)
    return typed_messages(messages, schema, value_column=value_column)


def iter_topic(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    admin_auth: Authentication | None = None,
    admin_tls: AdminTls | None = None,
    metadata_access: ZooKeeperAccess | None = None,
    bookie_tls: BookieTls | None = None,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    partitions: Sequence[int] | None = None,
    start_message_id: tuple[int, int] | None = None,
    end_message_id: tuple[int, int] | None = None,
    read_compacted: bool = False,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    timeout: float = 30.0,
    deadline: float | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> Iterator[pa.RecordBatch]:
    """A topic's entries as :func:`read_topic` reads them, as a stream of record batches
    (``ledger_id, entry_id, partition, data, error``, in topic order), for topics larger than
    memory. Each batch holds about an eighth of ``memory_budget`` bytes of entries (the budget is
    256 MiB by default, 16 MiB at least): ledgers are read from the bookies in windows bounded in bytes, and
    offloaded ones a run of blocks at a time, so what the reader holds stays within the budget
    whatever the topic's size, as long as the caller lets each batch go (decode it with
    :func:`pulsar_entries.decode`, write it out, ...). The arguments are :func:`read_topic`'s.

    Reading a stopped bookie's files (``bookie_dirs``) loads the wanted ledgers' entries from the
    files first, so that path is not bounded by ``memory_budget``.
    """
    _window_bytes(memory_budget)  # checked now, not at the first batch
    for name, value in (("timeout", timeout), ("deadline", deadline)):
        if value is None and name == "deadline":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < float("inf")):
            raise ValueError(f"{name}: expected a positive number of seconds, got {value!r}")
    started = time.monotonic()
    layout = topic_layout(
        topic,
        metadata_url=metadata_url,
        admin_url=admin_url,
        admin_token=admin_token,
        admin_auth=admin_auth,
        admin_tls=admin_tls,
        metadata_access=metadata_access,
        bookie_addresses=bookie_addresses,
        ledger_password=ledger_password,
        partitions=partitions,
        timeout=timeout if deadline is None else min(timeout, deadline),
        offline=bookie_dirs is not None,
        deadline=None if deadline is None else started + deadline,
    )
    left = None if deadline is None else max(0.0, deadline - (time.monotonic() - started))
    # The arguments and the layout are checked now; the entries are read as the batches are taken.
    tables = _layout_tables(
        layout,
        start_message_id=start_message_id,
        end_message_id=end_message_id,
        read_compacted=read_compacted,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        bookie_dirs=bookie_dirs,
        bookie_tls=bookie_tls,
        timeout=timeout,
        deadline=left,
        memory_budget=memory_budget,
    )
    return (batch for table in tables for batch in _single_chunks(table).to_batches())


def _single_chunks(table: pa.Table) -> pa.Table:
    """``table`` with one chunk per column (no copy when it already has)."""
    return table if all(c.num_chunks <= 1 for c in table.columns) else table.combine_chunks()


def entries_to_messages(entries: pa.Table, **decode_options: Any) -> pa.Table:
    """Entries decoded and chunks reassembled; an entry the read could not
    get becomes one row with its read error (after the decoded rows)."""
    import pyarrow.compute as pc

    good = entries.filter(pc.is_null(entries["error"])).drop_columns(["error"])
    bad = entries.filter(pc.is_valid(entries["error"]))
    messages = as_table(_native.reassemble_chunks(decode(good, **decode_options)))
    if not bad.num_rows:
        return messages
    columns = {name: pa.nulls(bad.num_rows, messages.schema.field(name).type) for name in messages.schema.names}
    for name in ("ledger_id", "entry_id", "partition", "error"):
        if name in bad.column_names:
            columns[name] = bad[name].cast(messages.schema.field(name).type)
    return pa.concat_tables([messages, pa.table(columns, schema=messages.schema)])


def topic_layout(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    admin_auth: Authentication | None = None,
    admin_tls: AdminTls | None = None,
    metadata_access: ZooKeeperAccess | None = None,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    partitions: Sequence[int] | None = None,
    timeout: float = 30.0,
    offline: bool = False,
    deadline: float | None = None,
) -> TopicLayout:
    """The layout :func:`read_topic` reads, from the metadata store or the
    admin REST API (see :func:`read_topic`); ``offline`` (reading bookie
    files) needs no bookie addresses. ``deadline`` (a :func:`time.monotonic` value) bounds
    the admin REST API's requests together."""
    if (metadata_url is None) == (admin_url is None):
        raise ValueError(
            "give one of metadata_url ('zk:host:2181', 'rocksdb:/path', 'http://broker:8080') or admin_url"
        )
    rest_url = admin_url if admin_url is not None else metadata_url if is_admin_url(metadata_url or "") else None
    if rest_url is not None:
        admin = AdminRest(rest_url, token=admin_token, auth=admin_auth, tls=admin_tls, timeout=timeout)
        layout = resolve_topic_admin(
            topic,
            admin,
            partitions=partitions,
            ledger_password=ledger_password,
            bookie_addresses=bookie_addresses,
            deadline=deadline,
        )
        unresolved = _unresolved_bookies(layout, bookie_addresses)
        if unresolved and not offline:
            raise ValueError(
                f"bookie ids {unresolved} are not host:port and the admin REST API gives no bookie addresses: "
                f"pass bookie_addresses={{{unresolved[0]!r}: 'host:port', ...}}"
            )
    else:
        assert metadata_url is not None
        store = open_store(metadata_url, timeout=timeout, access=metadata_access)
        try:
            layout = resolve_topic(topic, store, partitions=partitions)
        finally:
            store.close()
        if bookie_addresses:
            layout = TopicLayout(layout.topic, layout.partitions, {**layout.bookies, **bookie_addresses})
    return layout


def read_layout(
    layout: TopicLayout,
    *,
    start_message_id: tuple[int, int] | None = None,
    end_message_id: tuple[int, int] | None = None,
    read_compacted: bool = False,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    bookie_tls: BookieTls | None = None,
    timeout: float = 30.0,
    deadline: float | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    on_table: Callable[[pa.Table], None] | None = None,
) -> pa.Table:
    """The entries of a resolved layout, as :func:`read_topic` gives them; ``on_table`` sees each
    table of entries as it is read (for a progress bar)."""
    tables = _layout_tables(
        layout,
        start_message_id=start_message_id,
        end_message_id=end_message_id,
        read_compacted=read_compacted,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        bookie_dirs=bookie_dirs,
        bookie_tls=bookie_tls,
        timeout=timeout,
        deadline=deadline,
        memory_budget=memory_budget,
    )
    # One chunk per table in every column, and no empty chunks: consumers that walk the record
    # batches (PySpark's createDataFrame stops at an empty one) see every row.
    batches = []
    for t in tables:
        batches += _single_chunks(t).to_batches()
        if on_table is not None:
            on_table(t)
    return pa.Table.from_batches(batches, schema=ENTRY_SCHEMA)


def _layout_tables(
    layout: TopicLayout,
    *,
    start_message_id: tuple[int, int] | None,
    end_message_id: tuple[int, int] | None,
    read_compacted: bool,
    offload_filesystem: Any,
    offload_prefix: str,
    bookie_dirs: Sequence[str] | None,
    bookie_tls: BookieTls | None,
    timeout: float,
    deadline: float | None,
    memory_budget: int,
) -> Iterator[pa.Table]:
    """The non-empty entry tables of a layout, the damaged places of a bookie's files first."""
    reader: Any
    if bookie_dirs is not None:
        ledgers = [led for p in layout.partitions for led in [*p.ledgers, p.compacted] if led is not None]
        reader = BookieFiles(bookie_dirs, ledgers)
        if reader.errors.num_rows:
            yield with_partition(reader.errors, -1)
    else:
        reader = _native.BookieReader(layout.bookies, options=bookie_client_options(timeout, bookie_tls))
        if deadline is not None:
            reader.set_deadline(deadline)
    for table in iter_layout(
        layout,
        reader=reader,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        start=start_message_id,
        end=end_message_id,
        read_compacted=read_compacted,
        memory_budget=memory_budget,
    ):
        if table.num_rows:
            yield table
