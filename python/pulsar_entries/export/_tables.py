"""The tables an export writes: Delta Lake through ``deltalake`` (delta-rs) and Iceberg through
``pyiceberg``. Each commit carries the export's progress (see ``_progress``), so the table itself
says how far each topic partition has been exported.

* Delta: the progress is the commit's custom metadata (``pulsar-entries.export``), and an
  application transaction (``txn``: app id ``pulsar-entries:<topic>``, version the export's
  commit number). Two exporters that read the same version race on the app id: delta-rs fails
  the second commit with a ``ConcurrentTransaction`` conflict.
* Iceberg: the progress is a snapshot summary property (``pulsar-entries.export``). A commit
  asserts the snapshot it started from; pyiceberg's own retry, which would re-apply an append
  onto a newer snapshot, is turned off for the export's commits.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._install import install_hint
from .._redact import redact_uri

#: The commit property that holds an export's progress.
PROGRESS_KEY = "pulsar-entries.export"
#: Iceberg snapshot property: the Spark query and micro-batch a commit holds (``{"app", "version"}``).
BATCH_KEY = "pulsar-entries.batch"
#: Column name of the tombstone flag in an upsert's source rows (never written to a table).
TOMBSTONE = "__pulsar_entries_tombstone"

#: The Delta Lake release the Spark export (:func:`pulsar_entries.spark.export_topic`) is tested with,
#: as Maven coordinates: Delta 4.4 supports Spark 4.2 (on Spark 4.3 it fails to read its tables).
DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"

#: The session settings Delta needs on Spark, beside its jars.
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


class ExportError(RuntimeError):
    """An export stopped: the message is one line saying why and what was kept."""


class ConcurrentExportError(ExportError):
    """Another writer committed to the table first; nothing of this commit landed."""


@dataclass(frozen=True)
class TableTarget:
    """Where an export writes: ``delta:<path or URI>`` or ``iceberg:<catalog>.<namespace>.<table>``."""

    format: str
    location: str
    #: Iceberg: the catalog's name, namespace and table.
    catalog: str = ""
    namespace: tuple[str, ...] = ()
    table: str = ""

    @staticmethod
    def parse(text: str) -> TableTarget:
        if not isinstance(text, str) or ":" not in text:
            raise ValueError(f"table {text!r}: expected delta:<path or URI> or iceberg:<catalog>.<namespace>.<table>")
        kind, _, rest = text.partition(":")
        kind = kind.lower()
        if kind == "delta":
            if not rest.strip():
                raise ValueError(
                    f"table {text!r}: delta: needs a path or URI (delta:/lake/orders, delta:s3://b/orders)"
                )
            return TableTarget("delta", rest)
        if kind == "iceberg":
            parts = rest.split(".")
            if len(parts) < 3 or not all(re.fullmatch(r"[A-Za-z0-9_\-]+", p) for p in parts):
                raise ValueError(
                    f"table {text!r}: iceberg: needs <catalog>.<namespace>.<table> (letters, digits, _ and -)"
                )
            return TableTarget("iceberg", rest, parts[0], tuple(parts[1:-1]), parts[-1])
        raise ValueError(f"table {text!r}: unknown table format {kind!r}; use delta:... or iceberg:...")

    def dead_letters(self) -> TableTarget:
        """The dead-letter table beside this one (``<table>_dead_letters``)."""
        if self.format == "delta":
            return TableTarget("delta", self.location.rstrip("/") + "_dead_letters")
        name = self.table + "_dead_letters"
        return TableTarget(
            "iceberg", ".".join((self.catalog, *self.namespace, name)), self.catalog, self.namespace, name
        )

    def __str__(self) -> str:
        return f"{self.format}:{redact_uri(self.location)}"


@dataclass
class Progress:
    """What a table says the export has done, per topic partition (by its full name):
    ``next``, the next entry to read (every message decided before it is in the table), and
    ``resume``, where reading must start again (at most ``next``: the first entry of a transaction
    still open at ``next``). ``abandoned`` transactions (undecided past the timeout) are never
    exported."""

    topic: str
    seq: int = 0
    next: dict[str, tuple[int, int]] = field(default_factory=dict)
    resume: dict[str, tuple[int, int]] = field(default_factory=dict)
    abandoned: list[tuple[int, int]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(
            {
                "topic": self.topic,
                "seq": self.seq,
                "partitions": {
                    name: {"next": list(pos), "resume": list(self.resume.get(name, pos))}
                    for name, pos in sorted(self.next.items())
                },
                "abandoned": [list(t) for t in self.abandoned],
            },
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(text: str, where: str) -> Progress:
        try:
            d = json.loads(text)
            parts = d["partitions"]
            return Progress(
                topic=str(d["topic"]),
                seq=int(d["seq"]),
                next={n: (int(p["next"][0]), int(p["next"][1])) for n, p in parts.items()},
                resume={n: (int(p["resume"][0]), int(p["resume"][1])) for n, p in parts.items()},
                abandoned=[(int(a), int(b)) for a, b in d.get("abandoned", [])],
            )
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise ExportError(f"{where}: the export progress it records is not readable ({e})") from None


# ------------------------------------------------------------------------------------- types


def table_schema(schema: pa.Schema, fmt: str) -> pa.Schema:
    """``schema`` as the table format takes it: timestamps in microseconds, ``large_*`` as the plain
    types; a type the format cannot hold stops the export naming its column."""
    return pa.schema([pa.field(f.name, _table_type(f.type, f.name, fmt), f.nullable) for f in schema])


def _table_type(t: pa.DataType, name: str, fmt: str) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary() if fmt == "delta" or not pa.types.is_fixed_size_binary(t) else t
    if pa.types.is_time(t):
        if fmt == "delta":
            raise ExportError(f"column {name!r}: Delta has no time-of-day type ({t}); export it to Iceberg")
        return pa.time64("us")
    if pa.types.is_unsigned_integer(t):
        widths = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}
        if t.bit_width not in widths:
            raise ExportError(f"column {name!r}: {t} does not fit a signed 64-bit column")
        return widths[t.bit_width]
    if pa.types.is_dictionary(t):
        return _table_type(t.value_type, name, fmt)
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _table_type(t.value_type, name, fmt), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(_table_type(t.key_type, name, fmt), _table_type(t.item_type, name, fmt))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _table_type(f.type, name, fmt), f.nullable) for f in t])
    if pa.types.is_null(t):
        return pa.string()
    return t


def conform(table: pa.Table, fmt: str) -> pa.Table:
    return table.cast(table_schema(table.schema, fmt))


def _kind(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return f"timestamp[{'tz' if t.tz else 'local'}]"
    return str(t)


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether a column of type ``a`` holds values of type ``b`` as they are (field names of list
    items and map entries, nullability, string and binary widths and timestamp units aside)."""
    if pa.types.is_list(a) or pa.types.is_large_list(a):
        return (pa.types.is_list(b) or pa.types.is_large_list(b)) and same_type(a.value_type, b.value_type)
    if pa.types.is_map(a):
        return pa.types.is_map(b) and same_type(a.key_type, b.key_type) and same_type(a.item_type, b.item_type)
    if pa.types.is_struct(a):
        if not pa.types.is_struct(b) or {f.name for f in a} != {f.name for f in b}:
            return False
        return all(same_type(a.field(f.name).type, f.type) for f in b)
    return _kind(a) == _kind(b)


#: Promotions a column takes from a schema version that writes a narrower type (Avro's rules).
_WIDER = {
    "int64": ("int8", "int16", "int32"),
    "int32": ("int8", "int16"),
    "double": ("float", "int8", "int16", "int32", "int64"),
    "float": ("int8", "int16", "int32", "int64"),
}


def reconcile(have: pa.Schema | None, rows: pa.Table, where: str) -> pa.Table:
    """``rows`` fitted to a table of schema ``have``: a column the table lacks is added (by the
    write), one the rows lack is null, one a schema version widened is cast (int to long, ...); any
    other change of a column's type stops with one line naming it."""
    if have is None:
        return rows
    for f in rows.schema:
        if f.name not in have.names or f.name == TOMBSTONE:
            continue
        want = have.field(f.name).type
        if same_type(want, f.type):
            continue
        if str(f.type) in _WIDER.get(str(want), ()):
            rows = rows.set_column(rows.schema.get_field_index(f.name), f.name, rows[f.name].cast(want))
            continue
        raise ExportError(
            f"{where}: column {f.name!r} is {want} in the table, but the topic's schema now gives {f.type}; "
            "a table cannot change a column's type (export to a new table)"
        )
    for f in have:
        if f.name not in rows.column_names:
            rows = rows.append_column(pa.field(f.name, f.type), pa.nulls(rows.num_rows, f.type))
    return rows


def _position_key(t: pa.Table) -> list[tuple[int, int, int, int]]:
    bi = pc.fill_null(t["batch_index"], -1).to_pylist()
    return list(zip(t["partition"].to_pylist(), t["ledger_id"].to_pylist(), t["entry_id"].to_pylist(), bi))


# ------------------------------------------------------------------------------------- Delta


class DeltaTable:
    """A Delta table (created by its first commit)."""

    def __init__(self, target: TableTarget, storage_options: Mapping[str, str] | None = None) -> None:
        try:
            import deltalake
        except ImportError as e:
            raise ExportError(f"delta: tables need the deltalake package: {install_hint('delta')}") from e
        self._dl = deltalake
        self.target = target
        self.uri = target.location
        self.storage_options = dict(storage_options or {})
        self._table: Any = None
        self.version: int | None = None
        if "://" not in self.uri:
            parent = os.path.dirname(os.path.abspath(self.uri)) or "."
            if os.path.exists(self.uri) and not os.path.isdir(self.uri):
                raise ExportError(f"{target}: is a file, not a table directory")
            probe = parent
            while not os.path.exists(probe):
                probe = os.path.dirname(probe)
            if not os.access(probe, os.W_OK):
                raise ExportError(f"{target}: {probe} is not writable")
        self.refresh()

    def refresh(self) -> None:
        try:
            self._table = self._dl.DeltaTable(self.uri, storage_options=self.storage_options or None)
            self.version = self._table.version()
        except self._dl.exceptions.TableNotFoundError:
            self._table, self.version = None, None
        except Exception as e:
            raise ExportError(f"{self.target}: cannot open the table: {_one_line(e)}") from None

    def schema(self) -> pa.Schema | None:
        if self._table is None:
            return None
        return pa.schema(self._table.schema().to_arrow())

    def progress(self, topic: str) -> Progress | None:
        if self._table is None:
            return None
        app = _app_id(topic)
        seq = self._table.transaction_version(app)
        if seq is None:
            return None
        # The commit that recorded ``seq``: newest first, a page at a time.
        limit = 64
        while True:
            history = self._table.history(limit)
            for commit in history:
                text = commit.get(PROGRESS_KEY)
                if text is None:
                    continue
                p = Progress.from_json(text, str(self.target))
                if p.topic == topic and p.seq == seq:
                    return p
            if len(history) < limit:
                raise ExportError(
                    f"{self.target}: its transaction {app} is at {seq}, but no commit in its history "
                    "records that progress (was the log vacuumed or rewritten?)"
                )
            limit *= 4

    def commit(
        self,
        rows: pa.Table | None,
        progress: Progress,
        *,
        upsert: bool = False,
    ) -> None:
        from deltalake import CommitProperties, Transaction, write_deltalake

        props = CommitProperties(
            custom_metadata={PROGRESS_KEY: progress.to_json()},
            app_transactions=[Transaction(_app_id(progress.topic), progress.seq)],
        )
        if rows is not None:
            rows = reconcile(self.schema(), rows, str(self.target))
        try:
            if rows is None or not rows.num_rows:
                # A commit with no rows records the progress (and creates the table the first time).
                have = self.schema()
                data = have.empty_table() if have is not None else rows
                if data is None:
                    raise ExportError(f"{self.target}: nothing to create the table from")
                if TOMBSTONE in data.column_names:
                    data = data.drop_columns([TOMBSTONE])
                write_deltalake(
                    self._table if self._table is not None else self.uri,
                    data,
                    mode="append",
                    storage_options=self.storage_options or None,
                    commit_properties=props,
                )
            elif not upsert or self._table is None:
                data = rows.drop_columns([TOMBSTONE]) if TOMBSTONE in rows.column_names else rows
                if upsert:
                    data = data.filter(pc.invert(rows[TOMBSTONE]))
                write_deltalake(
                    self._table if self._table is not None else self.uri,
                    data,
                    mode="append",
                    schema_mode="merge",
                    storage_options=self.storage_options or None,
                    commit_properties=props,
                )
            else:
                self._merge(rows, props)
        except self._dl.exceptions.CommitFailedError as e:
            raise ConcurrentExportError(
                f"{self.target}: another writer committed first ({_one_line(e)}); nothing of this commit landed"
            ) from None
        except self._dl.exceptions.SchemaMismatchError as e:
            raise ExportError(f"{self.target}: the table cannot take the topic's new schema: {_one_line(e)}") from None
        self.refresh()

    def current(self, rows: pa.Table, cols: Sequence[str]) -> pa.Table | None:
        """The table's rows for the keys of ``rows`` (``cols`` of them); None when the table lacks one
        of ``cols``."""
        keys = sorted({k for k in rows["key"].to_pylist() if k is not None})
        have = self.schema()
        if have is not None and any(c not in have.names for c in cols):
            return None
        if self._table is None or not keys:
            return pa.table({c: rows[c].slice(0, 0) for c in cols})
        # delta-rs's own query engine (DataFusion), which prunes files by their statistics: pyarrow's
        # dataset of the table cannot filter its view-typed strings.
        names = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
        keys_sql = ", ".join("'" + k.replace("'", "''") + "'" for k in keys)
        found = (
            self._dl.QueryBuilder()
            .register("t", self._table)
            .execute(f'SELECT {names} FROM t WHERE "key" IN ({keys_sql})')
        )
        got = pa.RecordBatchReader.from_stream(found).read_all()
        return got.cast(pa.schema([pa.field(c, rows.schema.field(c).type) for c in cols]))

    def _merge(self, rows: pa.Table, props: Any) -> None:
        cols = [c for c in rows.column_names if c != TOMBSTONE]
        q = {c: f"`{c}`" for c in cols}
        newer = (
            "(s.ledger_id > t.ledger_id OR (s.ledger_id = t.ledger_id AND (s.entry_id > t.entry_id OR "
            "(s.entry_id = t.entry_id AND coalesce(s.batch_index, -1) > coalesce(t.batch_index, -1)))))"
        )
        (
            self._table.merge(
                rows,
                predicate="t.`partition` = s.`partition` AND t.`key` = s.`key`",
                source_alias="s",
                target_alias="t",
                merge_schema=True,
                commit_properties=props,
            )
            .when_matched_delete(predicate=f"s.`{TOMBSTONE}` AND {newer}")
            .when_matched_update(
                updates={q[c]: f"s.{q[c]}" for c in cols}, predicate=f"NOT s.`{TOMBSTONE}` AND {newer}"
            )
            .when_not_matched_insert(updates={q[c]: f"s.{q[c]}" for c in cols}, predicate=f"NOT s.`{TOMBSTONE}`")
            .execute()
        )


# ------------------------------------------------------------------------------------- Iceberg


class IcebergTable:
    """An Iceberg table in a catalog: by default a SQL catalog on SQLite under ``warehouse``
    (``<warehouse>/<catalog>.db``), a REST catalog when ``catalog_uri`` is ``http(s)://``, or any
    catalog pyiceberg's own configuration names (``catalog_properties``)."""

    def __init__(
        self,
        target: TableTarget,
        *,
        catalog_uri: str | None = None,
        warehouse: str | None = None,
        catalog_properties: Mapping[str, str] | None = None,
    ) -> None:
        try:
            from pyiceberg.catalog import load_catalog
            from pyiceberg.exceptions import NoSuchTableError
        except ImportError as e:
            raise ExportError(f"iceberg: tables need the pyiceberg package: {install_hint('iceberg')}") from e
        self._no_table = NoSuchTableError
        self.target = target
        props = dict(catalog_properties or {})
        if catalog_uri is not None:
            props["uri"] = catalog_uri
            props.setdefault("type", "rest" if catalog_uri.startswith(("http://", "https://")) else "sql")
        if not props:
            where = os.path.abspath(warehouse or "warehouse")
            try:
                os.makedirs(where, exist_ok=True)
            except OSError as e:
                raise ExportError(f"{target}: cannot create the warehouse {where}: {e.strerror}") from None
            if not os.access(where, os.W_OK):
                raise ExportError(f"{target}: the warehouse {where} is not writable")
            props = {"type": "sql", "uri": f"sqlite:///{where}/{target.catalog}.db", "warehouse": f"file://{where}"}
        elif warehouse is not None:
            props.setdefault("warehouse", warehouse if "://" in warehouse else f"file://{os.path.abspath(warehouse)}")
        if props.get("type") == "sql":
            props.setdefault("init_catalog_tables", "true")
        try:
            self.catalog = load_catalog(target.catalog, **props)
        except Exception as e:
            raise ExportError(f"{target}: cannot open catalog {target.catalog!r}: {_one_line(e)}") from None
        self.ident = (*target.namespace, target.table)
        self._table: Any = None
        self.refresh()

    def refresh(self) -> None:
        try:
            self._table = self.catalog.load_table(self.ident)
        except self._no_table:
            self._table = None
        except Exception as e:
            raise ExportError(f"{self.target}: cannot load the table: {_one_line(e)}") from None

    def schema(self) -> pa.Schema | None:
        return None if self._table is None else self._table.schema().as_arrow()

    def _recorded(self, key: str) -> Iterator[str]:
        """The values of the snapshot property ``key``, newest first, along the current snapshot's
        ancestry."""
        if self._table is None:
            return
        meta = self._table.metadata
        snap = self._table.current_snapshot()
        while snap is not None:
            text = snap.summary.additional_properties.get(key) if snap.summary else None
            if text is not None:
                yield text
            snap = None if snap.parent_snapshot_id is None else meta.snapshot_by_id(snap.parent_snapshot_id)

    def progress(self, topic: str) -> Progress | None:
        for text in self._recorded(PROGRESS_KEY):
            p = Progress.from_json(text, str(self.target))
            if p.topic == topic:
                return p
        return None

    def _create(self, schema: pa.Schema) -> None:
        from pyiceberg.exceptions import NamespaceAlreadyExistsError

        ns = self.ident[:-1]
        with contextlib.suppress(NamespaceAlreadyExistsError):
            self.catalog.create_namespace(ns)
        self._table = self.catalog.create_table_if_not_exists(
            self.ident, schema=schema, properties={"commit.retry.num-retries": "0"}
        )

    def commit(
        self,
        rows: pa.Table | None,
        progress: Progress,
        *,
        upsert: bool = False,
    ) -> None:
        self._write(rows, {PROGRESS_KEY: progress.to_json()}, upsert)

    def batch_done(self, app: str) -> int | None:
        """The highest micro-batch id the snapshots record as committed under ``app`` (a Spark
        query's; Delta's ``txn`` does this for Delta tables), or None."""
        for text in self._recorded(BATCH_KEY):
            try:
                done = json.loads(text)
                if done["app"] == app:
                    return int(done["version"])
            except (ValueError, KeyError, TypeError) as e:
                raise ExportError(f"{self.target}: the micro-batch it records is not readable ({e})") from None
        return None

    def commit_batch(self, rows: pa.Table, app: str, version: int, *, upsert: bool = False) -> bool:
        """Commits ``rows`` as micro-batch ``version`` of ``app``, unless the table holds it already
        (a batch Spark runs again after a crash): False then, and nothing is written."""
        self.refresh()
        done = self.batch_done(app)
        if done is not None and version <= done:
            return False
        marker = json.dumps({"app": app, "version": version}, separators=(",", ":"))
        self._write(rows, {BATCH_KEY: marker}, upsert)
        return True

    def _write(self, rows: pa.Table | None, props: dict[str, str], upsert: bool) -> None:
        import pyiceberg.expressions as expressions
        from pyiceberg.exceptions import CommitFailedException, ValidationError

        ice: Any = expressions  # its expressions take their terms positionally, as its docs show

        data = None
        if rows is not None:
            rows = reconcile(self.schema(), rows, str(self.target))
            data = rows.drop_columns([TOMBSTONE]) if TOMBSTONE in rows.column_names else rows
            if self._table is None:
                self._create(data.schema)
        if self._table is None:
            raise ExportError(f"{self.target}: nothing to create the table from")
        try:
            if data is not None and data.num_rows:
                have = self._table.schema().as_arrow()
                if any(f.name not in have.names for f in data.schema):
                    with self._table.update_schema() as u:
                        u.union_by_name(data.schema)
                    self.refresh()
            tx = self._table.transaction()
            if data is None or not data.num_rows:
                # A commit with no rows records the progress (a snapshot with no data files).
                tx.append(self._table.schema().as_arrow().empty_table(), snapshot_properties=props)
            elif not upsert:
                tx.append(data, snapshot_properties=props)
            else:
                assert rows is not None
                current = self.current(rows)
                assert current is not None
                write, drop = _upsert_plan(rows, current)
                if drop:
                    terms = [
                        ice.And(ice.EqualTo("partition", p), ice.In("key", sorted(keys))) for p, keys in drop.items()
                    ]
                    cond = terms[0] if len(terms) == 1 else ice.Or(*terms)
                    tx.delete(cond, snapshot_properties=props)
                tx.append(write.drop_columns([TOMBSTONE]), snapshot_properties=props)
            # pyiceberg would re-apply the append onto a snapshot another writer made: a duplicate.
            if hasattr(tx, "_snapshot_producers"):
                tx._snapshot_producers = []
            tx.commit_transaction()
        except CommitFailedException as e:
            raise ConcurrentExportError(
                f"{self.target}: another writer committed first ({_one_line(e)}); nothing of this commit landed"
            ) from None
        except ValidationError as e:
            raise ExportError(f"{self.target}: the table cannot take the topic's new schema: {_one_line(e)}") from None
        self.refresh()

    def current(
        self, rows: pa.Table, cols: Sequence[str] = ("partition", "key", "ledger_id", "entry_id", "batch_index")
    ) -> pa.Table | None:
        """The table's rows for the keys of ``rows`` (``cols`` of them, by default their positions);
        None when the table lacks one of ``cols``."""
        import pyiceberg.expressions as expressions

        ice: Any = expressions
        keys = sorted({k for k in rows["key"].to_pylist() if k is not None})
        if self._table is not None and any(c not in self._table.schema().as_arrow().names for c in cols):
            return None
        if not keys or self._table is None or self._table.current_snapshot() is None:
            return pa.table({c: rows[c].slice(0, 0) for c in cols})
        return self._table.scan(row_filter=ice.In("key", keys), selected_fields=tuple(cols)).to_arrow()


def _upsert_plan(rows: pa.Table, current: pa.Table) -> tuple[pa.Table, dict[int, set[str]]]:
    """For an upsert without MERGE: the source rows newer than the table's row of their key
    (``write``), and the keys whose table row goes (replaced or deleted by a tombstone)."""
    have: dict[tuple[int, str], tuple[int, int, int]] = {}
    for p, k, led, e, b in zip(
        current["partition"].to_pylist(),
        current["key"].to_pylist(),
        current["ledger_id"].to_pylist(),
        current["entry_id"].to_pylist(),
        pc.fill_null(current["batch_index"], -1).to_pylist(),
    ):
        have[(p, k)] = (led, e, b)
    keep: list[bool] = []
    drop: dict[int, set[str]] = {}
    for (p, led, e, b), k, dead in zip(_position_key(rows), rows["key"].to_pylist(), rows[TOMBSTONE].to_pylist()):
        old = have.get((p, k))
        newer = old is None or (led, e, b) > old
        if newer and old is not None:
            drop.setdefault(p, set()).add(k)
        keep.append(bool(newer and not dead))
    return rows.filter(pa.array(keep, pa.bool_())), drop


def _app_id(topic: str) -> str:
    return f"pulsar-entries:{topic}"


def _one_line(e: BaseException) -> str:
    """A library's error in one line, without credentials a URI in it may carry."""
    text = redact_uri(" ".join(str(e).split()))
    return text[:300] + ("…" if len(text) > 300 else "")


def open_table(
    target: TableTarget,
    *,
    storage_options: Mapping[str, str] | None = None,
    catalog_uri: str | None = None,
    warehouse: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
) -> DeltaTable | IcebergTable:
    if target.format == "delta":
        return DeltaTable(target, storage_options)
    return IcebergTable(target, catalog_uri=catalog_uri, warehouse=warehouse, catalog_properties=catalog_properties)
