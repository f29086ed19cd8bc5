"""TableView: a key → latest value map over a topic's entries, as Pulsar's
client ``TableView`` builds it (spec compaction.md §10).

Messages without a key are ignored; an empty value (a tombstone) deletes its
key. With a strategy, an update is applied only when
``should_keep_left(current, new)`` is false (a rejected update goes to the
strategy's ``handle_skipped_message(key, value)`` when it has one); a merging
strategy stores ``merge(current, new)``, so a view of a topic equals the view
of its compaction by the same strategy. Listeners are called for every
applied update, deletions included (with ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from .strategies import FormatSpec, _Adapter, _Builtin
from .strategies import value_format as _value_format

Listener = Callable[[str, Optional[Any]], None]


class _Item:
    __slots__ = ("batch_index", "entry_id", "ledger_id", "publish_time", "raw")

    def __init__(self, raw: bytes, ledger_id: int, entry_id: int, batch_index: int, publish_time: int | None):
        self.raw = raw
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.batch_index = batch_index
        self.publish_time = publish_time


_DECODED_COLUMNS = {"key", "value", "batch_index", "compacted_out", "error"}


class TableView:
    """Key → latest value. Values are decoded with the strategy's
    ``value_format`` (or ``value_format=`` here); bytes by default."""

    def __init__(self, strategy: Any = None, *, value_format: FormatSpec = None) -> None:
        self._strategy = strategy
        self._adapter = None if strategy is None or isinstance(strategy, _Builtin) else _Adapter(strategy)
        spec = value_format if value_format is not None else getattr(strategy, "value_format", None)
        self._format = _value_format(spec)
        self._items: dict[str, _Item] = {}
        self._decoded: dict[str, Any] = {}
        self._listeners: list[Listener] = []
        self._errors: list[tuple[int | None, int | None, str]] = []
        #: The last (ledger_id, entry_id) applied, per partition: updates come in topic order.
        self._last: dict[int, tuple[int, int]] = {}

    @classmethod
    def from_entries(cls, entries: Any, strategy: Any = None, **kwargs: Any) -> TableView:
        """A view of ``entries`` (raw entries or decoded messages) in topic order."""
        view = cls(strategy, **kwargs)
        view.update(entries)
        return view

    # ------------------------------------------------------------- updates

    def update(self, entries: Any) -> None:
        """Applies entries (raw, with ``data``) or decoded messages (the
        :func:`~pulsar_entries.decode` output), in topic order. Chunked
        messages are reassembled from raw entries; rows that cannot be used
        (unreadable or encrypted entries, or chunks in decoded input) are
        skipped and listed in :attr:`errors`."""
        rows = self._rows(entries)
        if self._strategy is None and not self._listeners:
            self._apply_latest(rows)
            return
        keys = rows["key"].to_pylist()
        values = rows["value"].to_pylist()
        ledgers = rows["ledger_id"].to_pylist()
        entry_ids = rows["entry_id"].to_pylist()
        indexes = rows["batch_index"].to_pylist()
        times = rows["publish_time"].to_pylist()
        for key, value, ledger, entry, index, t in zip(keys, values, ledgers, entry_ids, indexes, times):
            self._offer(key, value or None, ledger, entry, index, t)

    def _offer(self, key: str, raw: bytes | None, ledger: int, entry: int, index: int, t: int | None) -> None:
        current = self._items.get(key)
        if self._strategy is not None:
            prev_raw = None if current is None else current.raw
            if self._keep_left(prev_raw, raw):
                skipped = getattr(self._strategy, "handle_skipped_message", None)
                if callable(skipped):
                    skipped(key, self._decode(raw))
                return
            if raw is not None and prev_raw is not None and self._adapter is not None and self._adapter.merge_enabled:
                raw = self._adapter.merge_raw(prev_raw, raw)
        self._decoded.pop(key, None)
        if raw is None:
            self._items.pop(key, None)
        else:
            self._items[key] = _Item(raw, ledger, entry, index, t)
        for listener in list(self._listeners):
            listener(key, None if raw is None else self.get(key))

    def _keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        if isinstance(self._strategy, _Builtin):
            return bool(self._strategy._native.should_keep_left(prev, cur))
        assert self._adapter is not None
        return self._adapter.keep_left_raw(prev, cur)

    def _apply_latest(self, rows: pa.Table) -> None:
        """Latest wins without listeners: only each key's last row matters."""
        if rows.num_rows == 0:
            return
        numbered = rows.append_column("_row", pa.array(range(rows.num_rows), pa.int64()))
        last = numbered.group_by("key", use_threads=False).aggregate([("_row", "max")])
        row_numbers = last["_row_max"]
        picked = rows.take(pc.take(row_numbers, pc.sort_indices(row_numbers)))
        for key, value, ledger, entry, index, t in zip(
            picked["key"].to_pylist(),
            picked["value"].to_pylist(),
            picked["ledger_id"].to_pylist(),
            picked["entry_id"].to_pylist(),
            picked["batch_index"].to_pylist(),
            picked["publish_time"].to_pylist(),
        ):
            self._decoded.pop(key, None)
            if value:
                self._items[key] = _Item(value, ledger, entry, index, t)
            else:
                self._items.pop(key, None)

    def _check_order(self, table: pa.Table, strict: bool) -> None:
        """Raises :class:`~pulsar_entries.OrderError` unless the rows continue
        the topic order per partition (strictly for raw entries; a decoded
        entry has a row per message), as compaction does: on unsorted rows the
        view would silently keep a stale value."""
        import numpy as np

        if table.num_rows == 0 or not {"ledger_id", "entry_id"} <= set(table.column_names):
            return
        valid = pc.and_(pc.is_valid(table["ledger_id"]), pc.is_valid(table["entry_id"]))
        ids = table.filter(valid)
        ledgers = ids["ledger_id"].cast(pa.int64()).to_numpy()
        entries = ids["entry_id"].cast(pa.int64()).to_numpy()
        if "partition" in ids.column_names:
            partitions = pc.fill_null(ids["partition"].cast(pa.int64()), -1).to_numpy()
        else:
            partitions = np.full(len(ledgers), -1, dtype=np.int64)
        for partition in np.unique(partitions).tolist():
            at = partitions == partition
            lg, en = ledgers[at], entries[at]
            if partition in self._last:
                lg = np.concatenate([[self._last[partition][0]], lg])
                en = np.concatenate([[self._last[partition][1]], en])
            later = en[1:] > en[:-1] if strict else en[1:] >= en[:-1]
            ok = (lg[1:] > lg[:-1]) | ((lg[1:] == lg[:-1]) & later)
            if not ok.all():
                i = int(np.argmin(ok))
                raise _native.OrderError(
                    f"entries are not in topic order: {lg[i + 1]}:{en[i + 1]} comes after {lg[i]}:{en[i]}"
                    f"{'' if partition < 0 else f' (partition {partition})'}; sort by ledger_id, entry_id"
                    f"{' and drop duplicates' if strict else ''} first"
                )
            self._last[partition] = (int(lg[-1]), int(en[-1]))

    def _rows(self, entries: Any) -> pa.Table:
        table = _table(entries)
        names = set(table.column_names)
        self._check_order(table, strict="data" in names)
        if "data" in names:
            rows = _native.keyed_messages(table)
        elif names >= _DECODED_COLUMNS:
            rows = self._from_decoded(table)
        else:
            raise ValueError(
                "entries must be raw entries (ledger_id, entry_id, data) or decoded messages "
                f"(the output of pulsar_entries.decode); got columns {sorted(names)}"
            )
        bad = rows.filter(pc.is_valid(rows["error"]))
        for ledger, entry, error in zip(
            bad["ledger_id"].to_pylist(), bad["entry_id"].to_pylist(), bad["error"].to_pylist()
        ):
            self._errors.append((ledger, entry, error))
        return rows.filter(pc.and_(pc.is_null(rows["error"]), pc.is_valid(rows["key"])))

    def _from_decoded(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        null = pa.nulls(n, pa.string())
        errors = table["error"] if "error" in table.column_names else null
        if "num_chunks" in table.column_names:
            chunk = pc.is_valid(table["num_chunks"])
            errors = pc.if_else(
                pc.and_(chunk, pc.is_null(errors)),
                pa.scalar("chunk of a chunked message: pass raw entries so chunks are reassembled"),
                errors,
            )
        keep = pc.invert(pc.fill_null(table["compacted_out"], False))
        if "marker_type" in table.column_names:
            keep = pc.and_(keep, pc.is_null(table["marker_type"]))
        publish = table["publish_time"].cast(pa.int64()) if "publish_time" in table.column_names else null
        rows = pa.table(
            {
                "ledger_id": table["ledger_id"],
                "entry_id": table["entry_id"],
                "batch_index": table["batch_index"],
                "key": table["key"],
                "value": table["value"],
                "publish_time": publish,
                "error": errors,
            }
        )
        return rows.filter(keep)

    # ------------------------------------------------------------- listeners

    def listen(self, listener: Listener) -> None:
        """Calls ``listener(key, value)`` for every future update (``None`` for a delete)."""
        self._listeners.append(listener)

    def for_each_and_listen(self, listener: Listener) -> None:
        """Calls ``listener`` for every current entry, then for every future update."""
        for key, value in self.items():
            listener(key, value)
        self._listeners.append(listener)

    # ------------------------------------------------------------- reading

    def _decode(self, raw: bytes | None) -> Any:
        return None if raw is None else self._format.decode(raw)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._items:
            return default
        if key not in self._decoded:
            self._decoded[key] = self._decode(self._items[key].raw)
        return self._decoded[key]

    def __getitem__(self, key: str) -> Any:
        if key not in self._items:
            raise KeyError(key)
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def keys(self) -> list[str]:
        return list(self._items)

    def values(self) -> list[Any]:
        return [self.get(k) for k in self._items]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, self.get(k)) for k in self._items]

    @property
    def errors(self) -> list[tuple[int | None, int | None, str]]:
        """``(ledger_id, entry_id, error)`` of every row skipped so far."""
        return list(self._errors)

    def to_arrow(self) -> pa.Table:
        """The view as a table sorted by key: ``key``, ``value`` (raw bytes),
        ``ledger_id``, ``entry_id``, ``batch_index``, ``publish_time``."""
        keys = sorted(self._items)
        items = [self._items[k] for k in keys]
        return pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "value": pa.array([i.raw for i in items], pa.binary()),
                "ledger_id": pa.array([i.ledger_id for i in items], pa.int64()),
                "entry_id": pa.array([i.entry_id for i in items], pa.int64()),
                "batch_index": pa.array([i.batch_index for i in items], pa.int32()),
                "publish_time": pa.array([i.publish_time for i in items], pa.int64()),
            }
        )

    def __repr__(self) -> str:
        return f"TableView({len(self)} keys, strategy={self._strategy!r})"


def _table(entries: Any) -> pa.Table:
    if isinstance(entries, pa.Table):
        return entries
    if isinstance(entries, pa.RecordBatch):
        return pa.Table.from_batches([entries])
    if hasattr(entries, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(entries).read_all()
    raise TypeError(f"entries must be a pyarrow Table or RecordBatch, not {type(entries).__name__}")
