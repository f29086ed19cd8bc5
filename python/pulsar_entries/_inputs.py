"""Finding and reading entry inputs, without Spark: the data source's
partitions and the CLI's local engine both come from here.

Inputs live on any filesystem pyarrow knows (local, HDFS, S3, GCS, ...):
- entry tables: Parquet or Arrow IPC files;
- Pulsar tiered-storage offload objects (``<uuid>-ledger-<id>`` with its
  ``-index``, and the streaming variant), found by their names.
Each yields Arrow record batches of ``ledger_id``, ``entry_id``, ``data`` and
``error``: null unless the source was unreadable there (a damaged offload
block, an entry the index promises but the object lacks).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs

from . import offload

ARROW_SCHEMA = pa.schema(
    [
        pa.field("ledger_id", pa.int64()),
        pa.field("entry_id", pa.int64()),
        pa.field("data", pa.binary()),
        pa.field("error", pa.string()),
    ]
)
PARQUET = (".parquet", ".parq")
ARROW_IPC = (".arrow", ".feather", ".ipc")


def _kind(path: str) -> str | None:
    lower = path.lower()
    if lower.endswith(PARQUET):
        return "parquet"
    if lower.endswith(ARROW_IPC):
        return "arrow"
    return None


def list_inputs(path: str) -> list[tuple[str, ...]]:
    """The inputs under ``path`` (a file, object or directory, searched recursively), sorted:
    ``(uri, "parquet" | "arrow")`` for entry files, ``(data, "offload", index)`` for offload objects."""
    fs, root = pafs.FileSystem.from_uri(path) if "://" in path else (pafs.LocalFileSystem(), path)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"{path}: no such file or directory")
    if info.type == pafs.FileType.File:
        infos = [info]
    else:
        infos = [i for i in fs.get_file_info(pafs.FileSelector(root, recursive=True)) if i.type == pafs.FileType.File]
    prefix = path.split("://", 1)[0] + "://" if "://" in path else ""
    found: list[tuple[str, ...]] = []
    for i in sorted(infos, key=lambda i: i.path):
        kind = _kind(i.path)
        base = i.path.rsplit("/", 1)[-1]
        if kind and not base.startswith(("_", ".")):
            found.append((prefix + i.path if prefix and "://" not in i.path else i.path, kind))
    # Offload objects have no extension: look for them in directories, or when
    # the single file named is not an entry table.
    if info.type != pafs.FileType.File or not found:
        for obj in offload.discover(path, recursive=True):
            found.append((obj.data_path, "offload", obj.index_path or ""))
    if not found:
        raise FileNotFoundError(f"{path}: no entry files (.parquet, .arrow) or offload objects found")
    return found


def _conform(table: pa.Table) -> pa.Table:
    """Selects and casts the entry columns; adds a null ``error`` column if absent."""
    missing = [c for c in ("ledger_id", "entry_id", "data") if c not in table.column_names]
    if missing:
        raise ValueError(f"entry file lacks columns {', '.join(missing)}")
    cols = [
        table.column("ledger_id").cast(pa.int64()),
        table.column("entry_id").cast(pa.int64()),
        table.column("data").cast(pa.binary()),
        table.column("error").cast(pa.string())
        if "error" in table.column_names
        else pa.nulls(table.num_rows, pa.string()),
    ]
    return pa.Table.from_arrays(cols, schema=ARROW_SCHEMA)


def read_file(uri: str, kind: str, index: str = "") -> Iterator[pa.RecordBatch]:
    if kind == "offload":
        yield from _conform(offload.read_offloaded_ledger(uri, index or None)).to_batches(max_chunksize=4096)
        return
    fs, path = pafs.FileSystem.from_uri(uri) if "://" in uri else (pafs.LocalFileSystem(), uri)
    if kind == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path, filesystem=fs)
        for batch in pf.iter_batches(batch_size=4096):
            yield from _conform(pa.Table.from_batches([batch])).to_batches()
    else:
        with fs.open_input_file(path) as f:
            reader = pa.ipc.open_file(f)
            for i in range(reader.num_record_batches):
                yield from _conform(pa.Table.from_batches([reader.get_batch(i)])).to_batches()
