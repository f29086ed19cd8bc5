"""A bookie's files as a ledger source (entry logs, the ``locations`` index,
journals), read only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries._native as _native

from .._arrow import as_table
from .._install import install_hint
from .layout import Ledger
from .stores import ReadOnlyRocksDB


def _locations_index(current: str, ledger_ids: Sequence[int]) -> tuple[list[tuple[int, int, int]] | None, str | None]:
    """The DbLedgerStorage ``locations`` index rows ``(ledger, entry, location)`` of ``ledger_ids``
    (keys ``ledger || entry``, values ``log id << 32 | offset``, all 8-byte big-endian), read only;
    ``(None, why)`` when the directory has no index or it cannot be read."""
    path = os.path.join(current, "locations")
    if not os.path.isdir(path):
        return None, None
    try:
        import rocksdict  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the install
        return None, f"{path}: reading the locations index needs rocksdict ({install_hint('cluster')})"
    try:
        store = ReadOnlyRocksDB(path)
        db = store.db
    except Exception as e:
        return None, f"{path}: the locations index cannot be opened ({e}); its entry logs are scanned instead"
    rows: list[tuple[int, int, int]] = []
    try:
        it = db.iter()
        for ledger_id in sorted(set(ledger_ids)):
            prefix = ledger_id.to_bytes(8, "big", signed=True)
            it.seek(prefix + bytes(8))
            while it.valid():
                key = bytes(it.key())
                if key[:8] != prefix:
                    break
                value = bytes(it.value())
                if len(key) != 16 or len(value) != 8:
                    return None, (
                        f"{path}: a locations-index key {key.hex()} holds {len(value)} bytes, not a location; "
                        "its entry logs are scanned instead"
                    )
                rows.append((ledger_id, int.from_bytes(key[8:], "big", signed=True), int.from_bytes(value, "big")))
                it.next()
        del it
    except Exception as e:
        return None, f"{path}: the locations index cannot be read ({e}); its entry logs are scanned instead"
    finally:
        store.close()
    return rows, None


def _shown(path: str) -> str:
    """``path`` as text that is valid UTF-8: the bytes of a name that is not (``os`` gives them as
    surrogate escapes) as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unlisted(e: OSError) -> str:
    where = _shown(os.fsdecode(e.filename)) if e.filename is not None else "a bookie directory"
    return f"{where}: the directory cannot be listed ({type(e).__name__}: {e.strerror or e}); nothing in it is read"


def _current_dirs(dirs: Sequence[str]) -> tuple[list[tuple[str, list[str], list[str]]], list[OSError], list[str]]:
    """Each ``current/`` directory under ``dirs`` with its entry logs and journals; the directories that
    could not be listed (a ``current/`` among them would otherwise read as one without entry logs); and
    why a file or directory is left out (a name that is not UTF-8 cannot reach the native reader: it is
    an error row naming it, and the rest is read)."""
    failed: list[OSError] = []
    notes: list[str] = []
    currents = sorted(
        {root for d in dirs for root, _, _ in os.walk(d, onerror=failed.append) if os.path.basename(root) == "current"}
    )
    found: list[tuple[str, list[str], list[str]]] = []
    for current in currents:
        try:
            names = sorted(os.listdir(current))
        except OSError as e:
            failed.append(e)
            continue
        if not _is_utf8(current):
            notes.append(f"{_shown(current)}: the directory's path is not UTF-8; its files are not read")
            continue
        logs: list[str] = []
        journals: list[str] = []
        for n in names:
            if not n.endswith((".log", ".txn")):
                continue
            path = os.path.join(current, n)
            if not _is_utf8(n):
                notes.append(f"{_shown(path)}: the file name is not UTF-8; the file is not read")
                continue
            (logs if n.endswith(".log") else journals).append(path)
        found.append((current, logs, journals))
    return found, failed, notes


class BookieFiles:
    """A bookie's files as a ledger source: read once for the given ledgers, then read like
    :class:`pulsar_entries._native.BookieReader`.

    Each ``current/`` directory under ``dirs`` with entry logs (``*.log``; ``*.log.compacting``
    and ``*.compacted`` are in-flight compaction copies and are left out) is a ledger directory.
    Where it has the DbLedgerStorage ``locations`` index (and ``use_index``), entries are read
    where the index puts them, and a ledger is scanned for in the entry logs only when the index
    and the logs disagree about it, when an entry is missing or fails its digest, or when the
    ledger is not closed. ``journal`` also reads the journals (``current/*.txn``) for the ledgers
    still incomplete or not closed: entries a bookie killed hard had not flushed yet.

    A directory that cannot be listed, and a log or journal whose name is not UTF-8, are error
    rows naming them (the rest is read); when nothing could be read at all that is an error
    saying why (``PermissionError`` for a directory the user may not list)."""

    def __init__(
        self, dirs: Sequence[str], ledgers: Sequence[Ledger], *, use_index: bool = True, journal: bool = True
    ) -> None:
        wanted = [(led.ledger_id, led.metadata) for led in ledgers if led.metadata is not None]
        ids = [led_id for led_id, _ in wanted]
        ledger_dirs: list[tuple[str, list[str], list[tuple[int, int, int]] | None]] = []
        journals: list[str] = []
        currents, failed, skipped = _current_dirs(dirs)
        notes = [_unlisted(e) for e in failed] + skipped
        for current, logs, txns in currents:
            journals += txns
            if not logs and not os.path.isdir(os.path.join(current, "locations")):
                continue
            index, why = _locations_index(current, ids) if use_index else (None, None)
            if why is not None:
                notes.append(_shown(why))
            ledger_dirs.append((current, logs, index))
        if not ledger_dirs and not journals:
            where = f"no entry logs (current/*.log) or journals (current/*.txn) under {list(dirs)}"
            if failed:
                # Not "no entry logs": what is there could not be read, and says why.
                kinds = {type(e) for e in failed}
                cls = PermissionError if PermissionError in kinds else kinds.pop() if len(kinds) == 1 else OSError
                raise cls(f"{where}: " + "; ".join(notes))
            raise FileNotFoundError(where + (": " + "; ".join(notes) if notes else ""))
        batch, scanned, journaled = _native.read_bookie_dirs(ledger_dirs, wanted, journals if journal else [])
        table = as_table(batch)
        damaged = pc.equal(table["ledger_id"], -1)
        if notes:
            n = len(notes)
            note = pa.table(
                {
                    "ledger_id": pa.array([-1] * n, pa.int64()),
                    "entry_id": pa.array([-1] * n, pa.int64()),
                    "data": pa.array([None] * n, pa.binary()),
                    "error": pa.array(notes, pa.string()),
                }
            ).cast(table.schema)
        #: Damaged places in the files (and indexes that could not be used), each naming the file
        #: and offset.
        self.errors = pa.concat_tables([note, table.filter(damaged)]) if notes else table.filter(damaged)
        #: Whether a ``locations`` index was used.
        self.indexed = any(index is not None for _, _, index in ledger_dirs)
        #: The ledgers scanned for in the entry logs, and those read from the journals.
        self.scanned: list[int] = scanned
        self.journaled: list[int] = journaled
        self._entries = table.filter(pc.invert(damaged))

    def read_ledger(self, ledger_id: int, metadata: bytes, first: int = 0, last: int | None = None) -> pa.Table:
        t = self._entries
        keep = pc.and_(pc.equal(t["ledger_id"], ledger_id), pc.greater_equal(t["entry_id"], first))
        if last is not None:
            keep = pc.and_(keep, pc.less_equal(t["entry_id"], last))
        return t.filter(keep)
