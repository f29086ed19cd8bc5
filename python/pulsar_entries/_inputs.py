"""Finding and reading entry inputs, without Spark: the data source's
partitions and the CLI's local engine both come from here.

Inputs live on any filesystem pyarrow knows (local, HDFS, S3, GCS, ...):
- entry tables: Parquet or Arrow IPC files;
- Pulsar tiered-storage offload objects (``<uuid>-ledger-<id>`` with its
  ``-index``, and the streaming variant), found by their names.
Each yields Arrow record batches of ``ledger_id``, ``entry_id``, ``data`` and
``error``: null unless the source was unreadable there (a damaged offload
block, an entry the index promises but the object lacks, an empty object),
then ``partition`` and every other column of the input, unchanged. A file
that cannot be read at all raises an error that names it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs

from . import _native, offload
from ._redact import filesystem_from_uri, redact_uri

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
    fs, root = filesystem_for(path)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"{redact_uri(path)}: no such file or directory")
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


#: The columns every entry batch starts with; ``partition`` and any other input columns follow.
BASE_COLUMNS = tuple(ARROW_SCHEMA.names)


def _duplicates(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


def entry_schema(schema: pa.Schema, where: str = "") -> pa.Schema:
    """The schema an input with ``schema`` is read as: ``ledger_id``,
    ``entry_id``, ``data`` and ``error`` in our types, then ``partition``
    (int32) when the input has it, then every other input column unchanged."""
    at = f"{where}: " if where else ""
    names = list(schema.names)
    twice = _duplicates(names)
    if twice:
        raise _native.InputSchemaError(f"{at}more than one column named {', '.join(repr(n) for n in twice)}")
    missing = [c for c in ("ledger_id", "entry_id", "data") if c not in names]
    if missing:
        raise _native.InputSchemaError(f"{at}entry file lacks columns {', '.join(missing)}")
    fields = list(ARROW_SCHEMA)
    if "partition" in names:
        fields.append(pa.field("partition", pa.int32()))
    fields += [schema.field(n) for n in names if n not in BASE_COLUMNS and n != "partition"]
    return pa.schema(fields)


def merge_schemas(schemas: list[tuple[str, pa.Schema]]) -> pa.Schema:
    """One schema for inputs read together: every column of any of them (a
    column an input lacks reads as null there); a column whose type differs
    between two inputs is an error naming both."""
    merged = ARROW_SCHEMA
    seen: dict[str, str] = {}
    for where, schema in schemas:
        for field in schema:
            if field.name in merged.names:
                have = merged.field(field.name)
                if not have.type.equals(field.type):
                    raise _native.InputSchemaError(
                        f"column {field.name!r} is {have.type} in {seen.get(field.name, 'another input')} "
                        f"but {field.type} in {where}"
                    )
            else:
                merged = merged.append(field.with_nullable(True))
            seen.setdefault(field.name, where)
    return merged


def file_schema(uri: str, kind: str, index: str = "") -> pa.Schema:
    """The schema :func:`read_file` gives for one input (read from the file's footer or header)."""
    if kind == "offload":
        return ARROW_SCHEMA
    fs, path = filesystem_for(uri)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(path, filesystem=fs)
        else:
            with fs.open_input_file(path) as f:
                schema = pa.ipc.open_file(f).schema
    except (pa.ArrowException, OSError) as e:
        raise _unreadable(uri, kind, e) from e
    return entry_schema(schema, uri)


def inputs_schema(files: list[tuple[str, ...]]) -> pa.Schema:
    """The schema of every input of ``files`` read together (see :func:`merge_schemas`)."""
    return merge_schemas([(item[0], file_schema(*item)) for item in files])


def filesystem_for(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of ``uri`` (a URI, or a local path) and the path in it."""
    return filesystem_from_uri(uri) if "://" in uri else (pafs.LocalFileSystem(), uri)


def _unreadable(uri: str, kind: str, e: BaseException) -> Exception:
    what = {"parquet": "a Parquet file", "arrow": "an Arrow IPC file"}.get(kind, "an input")
    message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, OSError) and not isinstance(e, pa.ArrowException):
        return _native.StorageError(f"{uri}: cannot read {what}: {message}")
    return _native.DataError(f"{uri}: cannot read {what}: {message}")


def _conform(table: pa.Table, schema: pa.Schema | None = None, where: str = "") -> pa.Table:
    """The entry columns in our types, ``partition`` and the other input
    columns after them (``schema``'s columns when given, nulls where the table
    lacks one); a null ``error`` column if absent."""
    own = entry_schema(table.schema, where)
    target = own if schema is None else schema
    at = f"{where}: " if where else ""
    cols = []
    for field in target:
        if field.name in table.column_names:
            try:
                cols.append(table.column(field.name).cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise _native.InputSchemaError(f"{at}column {field.name!r}: {e}") from None
        else:
            cols.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(cols, schema=target)


def read_file(uri: str, kind: str, index: str = "", *, schema: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
    """The entries of one input as batches (see the module's docstring); with
    ``schema`` (:func:`inputs_schema` of every input read together) each batch
    has exactly those columns. An unreadable file raises an error naming it."""
    if kind == "offload":
        yield from _conform(offload.read_offloaded_ledger(uri, index or None), schema, uri).to_batches(
            max_chunksize=4096
        )
        return
    fs, path = filesystem_for(uri)
    if kind == "parquet":
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path, filesystem=fs)
            batches = pf.iter_batches(batch_size=4096)
            for batch in batches:
                yield from _conform(pa.Table.from_batches([batch]), schema, uri).to_batches()
        except (pa.ArrowException, OSError) as e:
            if isinstance(e, _native.PulsarEntriesError):
                raise
            raise _unreadable(uri, kind, e) from e
    else:
        try:
            with fs.open_input_file(path) as f:
                reader = pa.ipc.open_file(f)
                for i in range(reader.num_record_batches):
                    yield from _conform(pa.Table.from_batches([reader.get_batch(i)]), schema, uri).to_batches()
        except (pa.ArrowException, OSError) as e:
            if isinstance(e, _native.PulsarEntriesError):
                raise
            raise _unreadable(uri, kind, e) from e
