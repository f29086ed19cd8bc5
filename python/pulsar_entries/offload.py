"""Tiered-storage offload objects: the entries of ledgers Pulsar moved to S3, GCS, Azure, ...

Pulsar's blob-store offloader turns a closed ledger into a data object ``<uuid>-ledger-<id>`` and an
index object ``<uuid>-ledger-<id>-index``; the streaming variant (PIP-76) writes ``<uuid>`` and
``<uuid>-index``. This module finds those objects, reads their entries into the table shape
:func:`pulsar_entries.decode` takes (``ledger_id``, ``entry_id``, ``data``) plus an ``error`` column,
and writes them.

Paths may be local or any URI pyarrow understands (``s3://``, ``gs://``, ``hdfs://``, ...), or come
with an explicit ``pyarrow.fs.FileSystem``. Callers that fetch bytes themselves (a Spark task, say)
use :func:`list_blocks`, :func:`split_blocks` and :func:`read_blocks`: every block can be read on
its own from its byte range.

Bad data never aborts a read: a damaged block or entry becomes a row whose ``error`` says what
failed and at which object offset, and entries the index promises but the data lacks are reported
as error rows too (one per missing run).
"""

from __future__ import annotations

import os
import time
import uuid as uuid_module
from collections.abc import Sequence
from typing import Any, NamedTuple, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from . import _native
from ._native import OffloadFormatError
from ._redact import filesystem_from_uri

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_STREAMING_BLOCK_SIZE",
    "OffloadBlock",
    "OffloadFormatError",
    "OffloadedObject",
    "discover",
    "list_blocks",
    "read_blocks",
    "read_offload_index",
    "read_offloaded_ledger",
    "split_blocks",
    "write_offloaded_ledger",
    "write_offloaded_ledgers",
]

#: Pulsar's default ``maxBlockSizeInBytes`` for ledger offloads (64 MiB).
DEFAULT_BLOCK_SIZE = _native.DEFAULT_OFFLOAD_BLOCK_SIZE
#: Pulsar's default ``minBlockSizeInBytes`` for streaming offloads (5 MiB).
DEFAULT_STREAMING_BLOCK_SIZE = _native.DEFAULT_STREAMING_BLOCK_SIZE
DEFAULT_MANAGED_LEDGER = _native.DEFAULT_MANAGED_LEDGER
_MAX_ENTRY_ID = 2**63 - 1

BytesLike = Union[bytes, bytearray, memoryview, pa.Buffer]
PathLike = Union[str, "os.PathLike[str]"]


class OffloadedObject(NamedTuple):
    """One offloaded data object and its index (``None`` when absent)."""

    data_path: str
    index_path: str | None
    #: ``None`` for streaming objects, which can hold several ledgers.
    ledger_id: int | None
    uuid: str


class OffloadBlock(NamedTuple):
    """One data block as the index places it; ``offset``/``length`` fetch it alone."""

    ledger_id: int | None
    first_entry_id: int
    #: The next block's first entry − 1, or the ledger's last entry (``None`` if unknown).
    last_entry_id: int | None
    part_id: int
    offset: int
    length: int


# ----------------------------------------------------------------------------- bytes and files


def _binary(obj: BytesLike) -> pa.Array:
    """A one-element large_binary array over ``obj``'s memory, without copying it."""
    buf = obj if isinstance(obj, pa.Buffer) else pa.py_buffer(obj)
    offsets = pa.array([0, buf.size], pa.int64()).buffers()[1]
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, buf])


def _filesystem(path: PathLike, filesystem: pafs.FileSystem | None) -> tuple[pafs.FileSystem, str]:
    path = os.fspath(path)
    if filesystem is not None:
        return filesystem, path
    if "://" in path:
        fs, inner = filesystem_from_uri(path)
        return fs, inner
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _read_all(fs: pafs.FileSystem, path: str) -> pa.Buffer:
    if isinstance(fs, pafs.LocalFileSystem):
        if os.path.getsize(path) == 0:
            return pa.py_buffer(b"")
        return pa.memory_map(path).read_buffer()  # zero-copy; the buffer keeps the map alive
    with fs.open_input_file(path) as f:
        return f.read_buffer()


def _read_range(fs: pafs.FileSystem, path: str, offset: int, length: int) -> pa.Buffer:
    with fs.open_input_file(path) as f:
        f.seek(offset)
        return f.read_buffer(length)


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type == pafs.FileType.File


def _sibling(path: str, name: str) -> str:
    head, sep, _ = path.rpartition("/")
    return f"{head}{sep}{name}"


def _basename(path: str) -> str:
    return path.rstrip("/").rpartition("/")[2]


# ------------------------------------------------------------------------------------ discover


def _object_name(uuid: str, ledger_id: int | None, index: bool) -> str:
    name = uuid if ledger_id is None else f"{uuid}-ledger-{ledger_id}"
    return f"{name}-index" if index else name


def discover(
    path: PathLike, *, filesystem: pafs.FileSystem | None = None, recursive: bool = False
) -> list[OffloadedObject]:
    """Finds offload objects in a directory (bucket prefix), or names the one at ``path``.

    Objects are recognised by Pulsar's names: ``<uuid>-ledger-<id>`` (+ ``-index``) and the
    streaming ``<uuid>`` (+ ``-index``). Each data object is paired with its index when present;
    an index whose data object is missing is not listed. Sorted by ledger id, then uuid.
    """
    fs, root = _filesystem(path, filesystem)
    uri = os.fspath(path) if filesystem is None and "://" in os.fspath(path) else None

    def located(p: str) -> str:
        # Paths from a URI come back as URIs, so they can be passed on without a filesystem.
        if uri is None:
            return p
        return uri.rstrip("/") + p[len(root.rstrip("/")) :]

    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(root)
    if info.type == pafs.FileType.File:
        parsed = _native.parse_offload_name(_basename(root))
        if parsed is None:
            raise ValueError(f"{root} is not named like an offload object (<uuid>-ledger-<id>[-index])")
        data = _sibling(root, _object_name(parsed["uuid"], parsed["ledger_id"], False))
        index = _sibling(root, _object_name(parsed["uuid"], parsed["ledger_id"], True))
        if not _exists(fs, data):
            raise FileNotFoundError(f"{data} (the data object of index {root})")
        if uri is not None:
            root = root.rpartition("/")[0]
            uri = uri.rpartition("/")[0]
        return [
            OffloadedObject(
                located(data), located(index) if _exists(fs, index) else None, parsed["ledger_id"], parsed["uuid"]
            )
        ]
    found: dict[tuple[str, str, int | None], dict[str, str]] = {}
    for f in fs.get_file_info(pafs.FileSelector(root, recursive=recursive)):
        if f.type != pafs.FileType.File:
            continue
        parsed = _native.parse_offload_name(f.base_name)
        if parsed is None:
            continue
        key = (f.path.rpartition("/")[0], parsed["uuid"], parsed["ledger_id"])
        found.setdefault(key, {})[parsed["role"]] = f.path
    out = [
        OffloadedObject(located(roles["data"]), located(roles["index"]) if "index" in roles else None, ledger, uuid)
        for (_, uuid, ledger), roles in found.items()
        if "data" in roles
    ]
    return sorted(out, key=lambda o: (-1 if o.ledger_id is None else o.ledger_id, o.uuid, o.data_path))


# ----------------------------------------------------------------------------------- the index


def _index_bytes(
    index: PathLike | BytesLike, filesystem: pafs.FileSystem | None
) -> tuple[pa.Buffer | BytesLike, int | None]:
    """Index bytes, and the ledger id its name gives (a v1 index does not store it)."""
    if isinstance(index, (bytes, bytearray, memoryview, pa.Buffer)):
        return index, None
    fs, path = _filesystem(index, filesystem)
    parsed = _native.parse_offload_name(_basename(path))
    return _read_all(fs, path), parsed["ledger_id"] if parsed else None


def read_offload_index(
    index: PathLike | BytesLike,
    *,
    ledger_id: int | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> dict[str, Any]:
    """An index object's fields: ``version`` (1 or 2), ``data_object_length``,
    ``data_header_length``, ``index_block_length`` and ``ledgers``, each with ``ledger_id``,
    ``last_entry_id``, ``length``, ``metadata`` (BookKeeper ledger metadata for v1, the
    managed ledger's LedgerInfo for v2) and ``blocks``.

    ``index`` is the object's bytes or its path. Raises :class:`OffloadFormatError` when the
    index cannot be parsed.
    """
    data, named = _index_bytes(index, filesystem)
    return dict(_native.parse_offload_index(_binary(data), ledger_id=ledger_id if ledger_id is not None else named))


def list_blocks(
    index: PathLike | BytesLike,
    *,
    ledger_id: int | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> list[OffloadBlock]:
    """Every data block the index lists, in data-object order, with the byte range that fetches
    it and the entries it should hold. A v1 index's ledger id comes from ``ledger_id`` or the
    index's object name."""
    data, named = _index_bytes(index, filesystem)
    ledger = ledger_id if ledger_id is not None else named
    return [OffloadBlock(**b) for b in _native.offload_blocks(_binary(data), ledger_id=ledger)]


def split_blocks(blocks: Sequence[OffloadBlock], target_bytes: int = 128 * 1024 * 1024) -> list[list[OffloadBlock]]:
    """Groups consecutive blocks into splits of at most ``target_bytes`` (at least one block
    each), for reading a large object in parallel. Each split is one contiguous byte range."""
    splits: list[list[OffloadBlock]] = []
    size = 0
    for b in sorted(blocks, key=lambda b: b.offset):
        if splits and size + b.length <= target_bytes and splits[-1][-1].offset + splits[-1][-1].length == b.offset:
            splits[-1].append(b)
            size += b.length
        else:
            splits.append([b])
            size = b.length
    return splits


# --------------------------------------------------------------------------------------- read


def _ranges(blocks: Sequence[OffloadBlock], ledger_id: int | None, first: int, last: int) -> list[tuple[int, int, int]]:
    out = []
    for b in blocks:
        ledger = b.ledger_id if b.ledger_id is not None else ledger_id
        block_last = _MAX_ENTRY_ID if b.last_entry_id is None else b.last_entry_id
        lo, hi = max(first, b.first_entry_id), min(last, block_last)
        if lo <= hi:
            out.append((-1 if ledger is None else ledger, lo, hi))
    return out


def read_blocks(
    data: BytesLike,
    blocks: Sequence[OffloadBlock],
    *,
    ledger_id: int | None = None,
    first_entry: int | None = None,
    last_entry: int | None = None,
) -> pa.Table:
    """Reads consecutive blocks from their bytes: ``data`` is the data object's byte range
    ``[blocks[0].offset, blocks[-1].offset + blocks[-1].length)``, fetched by the caller from any
    filesystem. Returns the blocks' entries (optionally only ``first_entry..=last_entry``) and
    one error row per entry the index places in them that the bytes lack."""
    if not blocks:
        return _native.read_offload_blocks(_binary(b""), 0, ranges=[])
    blocks = sorted(blocks, key=lambda b: b.offset)
    base = blocks[0].offset
    ledger = ledger_id if ledger_id is not None else blocks[0].ledger_id
    first = 0 if first_entry is None else first_entry
    last = _MAX_ENTRY_ID if last_entry is None else last_entry
    return _native.read_offload_blocks(
        _binary(data), base, ledger_id=ledger, ranges=_ranges(blocks, ledger, first, last)
    )


def read_offloaded_ledger(
    data_path: PathLike,
    index_path: PathLike | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
    ledger_id: int | None = None,
    first_entry: int | None = None,
    last_entry: int | None = None,
) -> pa.Table:
    """The entries of an offloaded ledger: columns ``ledger_id``, ``entry_id``, ``data`` and
    ``error`` (null when the row is a clean entry).

    ``index_path`` defaults to the data object's ``-index`` sibling when it exists; without an
    index the blocks are read from their headers alone (missing entries then go unnoticed).
    ``ledger_id`` defaults to the one in the object name; for a streaming object it selects one
    of its ledgers. With ``first_entry``/``last_entry`` and an index, only the blocks holding
    that range are fetched.
    """
    fs, path = _filesystem(data_path, filesystem)
    name = _native.parse_offload_name(_basename(path))
    index_location: tuple[pafs.FileSystem, str] | None = None
    if index_path is not None:
        index_location = _filesystem(index_path, filesystem)
    elif name is not None:
        candidate = _sibling(path, _object_name(name["uuid"], name["ledger_id"], True))
        if _exists(fs, candidate):
            index_location = (fs, candidate)
    if ledger_id is None and name is not None:
        ledger_id = name["ledger_id"]
    index = None if index_location is None else _read_all(*index_location)
    streaming = name is not None and name["ledger_id"] is None
    selective = first_entry is not None or last_entry is not None or (streaming and ledger_id is not None)
    if not selective:
        data = _read_all(fs, path)
        table = _native.read_offload_object(
            _binary(data), index=None if index is None else _binary(index), ledger_id=ledger_id
        )
        if data.size == 0:
            # An empty object holds no block to report on: a row says so, naming it.
            row = {"ledger_id": [-1 if ledger_id is None else ledger_id], "entry_id": [-1], "data": [None]}
            row["error"] = [f"{path}: the offload object is empty (0 bytes)"]
            return pa.concat_tables([pa.table(row, schema=table.schema), table])
        return table
    first = 0 if first_entry is None else first_entry
    last = _MAX_ENTRY_ID if last_entry is None else last_entry
    if index is None:
        table = _native.read_offload_object(_binary(_read_all(fs, path)), ledger_id=ledger_id)
        keep = pc.and_(pc.greater_equal(table["entry_id"], first), pc.less_equal(table["entry_id"], last))
        if ledger_id is not None:
            keep = pc.and_(keep, pc.equal(table["ledger_id"], ledger_id))
        keep = pc.or_(keep, pc.and_(pc.is_valid(table["error"]), pc.equal(table["entry_id"], -1)))
        return table.filter(keep)
    try:
        blocks = [OffloadBlock(**b) for b in _native.offload_blocks(_binary(index), ledger_id=ledger_id)]
    except OffloadFormatError:
        # The whole-object read reports the broken index in a row and reads the headers alone.
        table = _native.read_offload_object(_binary(_read_all(fs, path)), index=_binary(index), ledger_id=ledger_id)
        keep = pc.and_(pc.greater_equal(table["entry_id"], first), pc.less_equal(table["entry_id"], last))
        return table.filter(pc.or_(keep, pc.equal(table["entry_id"], -1)))
    wanted = [
        b
        for b in blocks
        if (ledger_id is None or b.ledger_id == ledger_id)
        and b.first_entry_id <= last
        and (b.last_entry_id is None or b.last_entry_id >= first)
    ]
    tables = []
    for run in split_blocks(wanted, target_bytes=_MAX_ENTRY_ID):
        start = run[0].offset
        end = run[-1].offset + run[-1].length
        tables.append(
            read_blocks(
                _read_range(fs, path, start, end - start), run, ledger_id=ledger_id, first_entry=first, last_entry=last
            )
        )
    if not tables:
        return read_blocks(b"", [])
    return pa.concat_tables(tables)


# -------------------------------------------------------------------------------------- write


def write_offloaded_ledger(
    entries: Any,
    directory: PathLike,
    *,
    ledger_id: int | None = None,
    uuid: str | None = None,
    block_size: int | None = None,
    index_version: int = 1,
    ctime: int | None = None,
    managed_ledger_name: str = DEFAULT_MANAGED_LEDGER,
    ensemble: Sequence[str] | None = None,
) -> OffloadedObject:
    """Writes entries as Pulsar's offloader would, into ``directory`` (local).

    ``entries`` is a pyarrow Table/RecordBatch (or any Arrow stream) with ``entry_id`` and
    ``data`` columns and, unless ``ledger_id`` is given, ``ledger_id``.

    ``index_version=1`` (the default) writes a ledger-based object, ``<uuid>-ledger-<id>`` plus a
    v1 index holding the ledger's BookKeeper metadata: one ledger, entry ids ``0..n-1``.
    ``block_size`` is the maximum block size (Pulsar's default 64 MiB); blocks are sized and
    packed exactly as Pulsar's offloader does. ``index_version=2`` writes a streaming (PIP-76)
    object ``<uuid>`` with a v2 index; it may hold several ledgers, each with contiguous ids,
    and ``block_size`` is the minimum block size (default 5 MiB).

    ``ctime`` (ms) defaults to now; ``managed_ledger_name`` and ``ensemble`` (bookie ids) go into
    the v1 ledger metadata. Raises ``ValueError`` for entries Pulsar could not have offloaded
    (an entry larger than a block, gaps in the ids, ...).
    """
    if index_version not in (1, 2):
        raise ValueError(f"index_version must be 1 or 2, not {index_version!r}")
    uuid = str(uuid_module.uuid4()) if uuid is None else str(uuid).lower()
    if _native.parse_offload_name(uuid) is None or "-ledger-" in uuid or uuid.endswith("-index"):
        raise ValueError(f"uuid {uuid!r} is not a UUID string")
    os.makedirs(directory, exist_ok=True)
    directory = os.path.abspath(os.fspath(directory))
    ctime = int(time.time() * 1000) if ctime is None else ctime
    options = _native.OffloadOptions(
        block_size=block_size,
        managed_ledger_name=managed_ledger_name,
        ensemble=None if ensemble is None else list(ensemble),
    )
    if index_version == 1:
        if ledger_id is None:
            ledger_id = _single_ledger(entries)
        data_path = os.path.join(directory, _object_name(uuid, ledger_id, False))
        index_path = os.path.join(directory, _object_name(uuid, ledger_id, True))
        _native.write_offload_ledger(
            entries,
            data_path,
            index_path,
            ledger_id=ledger_id,
            ctime=ctime,
            options=options,
        )
        return OffloadedObject(data_path, index_path, ledger_id, uuid)
    data_path = os.path.join(directory, _object_name(uuid, None, False))
    index_path = os.path.join(directory, _object_name(uuid, None, True))
    _native.write_offload_streaming(
        entries,
        data_path,
        index_path,
        timestamp=ctime,
        ledger_id=ledger_id,
        options=options,
    )
    return OffloadedObject(data_path, index_path, None, uuid)


def _single_ledger(entries: Any) -> int:
    table = _as_table(entries)
    if "ledger_id" not in table.column_names:
        raise ValueError("entries have no ledger_id column; pass ledger_id=")
    ledgers = pc.unique(table["ledger_id"]).to_pylist()
    if len(ledgers) != 1:
        raise ValueError(
            f"a ledger-based object holds one ledger, the entries hold {len(ledgers)}; "
            "use write_offloaded_ledgers() to write one object per ledger"
        )
    return int(ledgers[0])


def _as_table(entries: Any) -> pa.Table:
    if isinstance(entries, pa.Table):
        return entries
    if isinstance(entries, pa.RecordBatch):
        return pa.Table.from_batches([entries])
    return pa.table(entries)


def write_offloaded_ledgers(entries: Any, directory: PathLike, **options: Any) -> list[OffloadedObject]:
    """Writes one ledger-based object per ledger in ``entries`` (each with its own UUID, as
    Pulsar gives every ledger offload its own), with the options of
    :func:`write_offloaded_ledger`."""
    if "uuid" in options or "ledger_id" in options or options.get("index_version", 1) != 1:
        raise ValueError("write_offloaded_ledgers takes neither uuid nor ledger_id, and writes v1 objects")
    table = _as_table(entries)
    out = []
    for ledger in sorted(pc.unique(table["ledger_id"]).to_pylist()):
        part = table.filter(pc.equal(table["ledger_id"], ledger))
        out.append(write_offloaded_ledger(part, directory, ledger_id=ledger, **options))
    return out
