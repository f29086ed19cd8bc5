"""Compacted topics: compaction, compacted-ledger records, last-message
position (PIP-429) and the publish-time lookup.

All work happens in the Rust core; Arrow tables cross without copies.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import pyarrow as pa

from . import _native
from .strategies import native_strategy


class _Position(NamedTuple):
    ledger_id: int
    entry_id: int
    batch_index: int
    publish_time: int


class MessagePosition(_Position):
    """``MessagePosition(ledger_id, entry_id, batch_index, publish_time)`` (PIP-429).

    ``batch_index`` is −1 for a non-batched entry; ``publish_time`` is the
    entry's batch-level publish time (ms). Immutable, and equal to the plain
    tuple of its fields: ``MessagePosition.EARLIEST == (-1, -1, 0, 0)``.
    """

    __slots__ = ()

    EARLIEST: ClassVar[MessagePosition]


MessagePosition.EARLIEST = MessagePosition(-1, -1, 0, 0)


def _as_table(entries: Any) -> pa.Table:
    """Entries as a table (compaction reads them twice)."""
    if isinstance(entries, pa.Table):
        return entries
    if isinstance(entries, pa.RecordBatch):
        return pa.Table.from_batches([entries])
    if hasattr(entries, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(entries).read_all()
    raise TypeError(
        f"entries must be a pyarrow Table or RecordBatch, or export an Arrow stream, not {type(entries).__name__}"
    )


def compact(
    entries: Any,
    *,
    order: str | None = None,
    strategy: Any = None,
    retain_null_key: bool | None = None,
    verify_checksum: bool | None = None,
    max_uncompressed_size: int | None = None,
) -> pa.Table:
    """Compacts a topic's entries as Pulsar's broker does.

    ``entries`` are in topic order (``ledger_id``, ``entry_id`` strictly
    increasing per ``partition``), with the decode input schema. The result is
    the compacted entries ``(ledger_id, entry_id[, partition], data, error)``
    with their original ids; ``error`` is null except for entries that could
    not be read and were kept unchanged.

    ``order="publish"`` (the default) keeps each key's last published value;
    ``order="event_time"`` its newest event time (PIP-352). ``strategy``
    switches to the strategic compactor (PIP-215, see
    :mod:`pulsar_entries.strategies`). Key-less messages are dropped unless
    ``retain_null_key``. Messages of transactions that a ``TXN_ABORT``
    marker among the entries aborts are skipped, as the broker's compactors
    (plain and strategic) skip them: a key keeps its last committed value.
    """
    table = _as_table(entries)
    compactor = Compactor(
        order=order,
        strategy=strategy,
        retain_null_key=retain_null_key,
        verify_checksum=verify_checksum,
        max_uncompressed_size=max_uncompressed_size,
        aborted_transactions=_native.aborted_transactions(table),
    )
    compactor.observe(table)
    return compactor.write(table)


class Compactor:
    """A two-pass compactor for inputs too large to hold at once: call
    ``observe(batch)`` for every batch of entries in topic order, then
    ``write(batch)`` for the same batches in the same order; ``stats()``
    gives the counts. Memory is bounded by the number of keys.

    The options are :func:`compact`'s (``None``: the core's default, see
    ``CompactionOptions``). ``aborted_transactions``
    (``(most, least)`` id bits, e.g. from
    ``pulsar_entries._native.aborted_transactions`` over the topic) are skipped
    as the broker skips them; the markers come after their messages, so a
    streaming pass cannot find them itself.
    """

    def __init__(
        self,
        *,
        order: str | None = None,
        strategy: Any = None,
        retain_null_key: bool | None = None,
        verify_checksum: bool | None = None,
        max_uncompressed_size: int | None = None,
        aborted_transactions: list[tuple[int, int]] | None = None,
    ) -> None:
        options = _native.CompactionOptions(
            order=order,
            retain_null_key=retain_null_key,
            verify_checksum=verify_checksum,
            max_uncompressed_size=max_uncompressed_size,
        )
        self._pass = _native.Compactor(
            strategy=native_strategy(strategy), options=options, aborted_transactions=aborted_transactions
        )

    def observe(self, entries: Any) -> None:
        """Phase one over a batch of entries (topic order)."""
        self._pass.observe(entries)

    def write(self, entries: Any) -> pa.Table:
        """Phase two over the same batch: its compacted entries."""
        return self._pass.write(entries)

    def stats(self) -> dict[str, int]:
        """The counts so far (messages read, kept, dropped, ...)."""
        return self._pass.stats()


def to_ledger_records(compacted: Any) -> pa.Table:
    """Each entry as a compacted-ledger record ``[u32 idLen][MessageIdData][u32 len][entry]``.

    Returns ``(ledger_id, entry_id, record)``. The id carries the entry's
    original ledger and entry ids, and its partition when the input has a
    ``partition`` column.
    """
    return _native.to_ledger_records(_as_table(compacted).select(_entry_columns(compacted)))


def _entry_columns(table: Any) -> list[str]:
    names = _as_table(table).column_names
    return [c for c in ("ledger_id", "entry_id", "partition", "data") if c in names]


def from_ledger_records(records: Any) -> pa.Table:
    """Reads compacted-ledger records back into entries.

    ``records`` is a table with a binary ``record`` column, or a sequence of
    bytes. Returns ``(ledger_id, entry_id, partition, data, error)``; a record
    that cannot be read gives a row with ``error`` set and its raw bytes.
    """
    if not isinstance(records, (pa.Table, pa.RecordBatch)) and not hasattr(records, "__arrow_c_stream__"):
        records = pa.table({"record": pa.array(list(records), pa.binary())})
    return _native.from_ledger_records(_as_table(records))


def _position(t: tuple | None) -> MessagePosition | None:
    return None if t is None else MessagePosition(*t[:4])


def last_message_position(
    compacted_entries: Any,
    *,
    topic_entries: Any = None,
    read_compacted: bool = True,
    horizon: tuple[int, int] | None = None,
    max_uncompressed_size: int | None = None,
) -> MessagePosition:
    """The last message position, as the broker answers GetLastMessageId.

    With only ``compacted_entries`` (a compaction's output, or ``None`` for
    none): the last message of the compacted ledger by PIP-429's rules — the
    last element of ``compacted_batch_indexes`` without reading the payload;
    ``num_messages_in_batch − 1`` for an encrypted batch; otherwise a scan of
    the decompressed records for the last one not compacted out (an entry with
    none raises). No entry gives :attr:`MessagePosition.EARLIEST`.

    With ``topic_entries`` (the topic's entries), the source is chosen as the
    broker does: the topic's last dispatchable entry (markers and aborted
    transactions skipped), answered from the managed ledger as
    ``(ledger, entry, n − 1, publish_time)``, unless the reader reads
    compacted (``read_compacted``), a compaction exists and that entry is at
    or before the compaction ``horizon`` — then the compacted ledger answers.
    ``horizon`` is the ``(ledger_id, entry_id)`` phase one read up to; it
    defaults to the last of ``topic_entries`` (the compacted entries being a
    compaction of all of them).
    """

    def compacted() -> MessagePosition:
        if compacted_entries is None:
            return MessagePosition.EARLIEST
        found = _native.compacted_last_position(
            _as_table(compacted_entries), max_uncompressed_size=max_uncompressed_size
        )
        return _position(found) or MessagePosition.EARLIEST

    if topic_entries is None:
        if not read_compacted:
            raise ValueError("read_compacted=False answers from the topic: pass topic_entries")
        return compacted()
    topic = _as_table(topic_entries)
    last = _position(_native.topic_last_position(topic))
    if not read_compacted or compacted_entries is None:
        return last or MessagePosition.EARLIEST
    if horizon is None:
        horizon = _native.max_entry_position(topic)
    if last is None or horizon is None or (last.ledger_id, last.entry_id) <= tuple(horizon):
        return compacted()
    return last


def find_position_by_publish_time(compacted_entries: Any, publish_time: int) -> tuple[int, int] | None:
    """``findEntryByPublishTime``: the ``(ledger_id, entry_id)`` of the first
    compacted entry whose batch-level ``publish_time`` is ≥ ``publish_time``,
    found by binary search over the entries in ledger order, or ``None``.

    Like the broker, the search assumes publish times grow along the compacted
    ledger; skewed producer clocks can mislead it. ``broker_timestamp`` is not
    used.
    """
    found = _native.find_by_publish_time(_as_table(compacted_entries), int(publish_time))
    return None if found is None else (found[0], found[1])


__all__ = [
    "Compactor",
    "MessagePosition",
    "compact",
    "find_position_by_publish_time",
    "from_ledger_records",
    "last_message_position",
    "to_ledger_records",
]
