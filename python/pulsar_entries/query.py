"""SQL on a topic, on one machine, without Spark: DuckDB over the topic's messages read straight from storage.

:func:`scan_topic` streams a topic's messages (decoded, chunked messages whole, optionally typed by the topic's
schema) as a :class:`pyarrow.RecordBatchReader`: a batch at a time, so a topic larger than memory can be
aggregated in bounded memory. :func:`sql` runs a query over it with DuckDB, where the topic is the table
``topic``::

    pe.sql(
        "SELECT key, count(*) AS n FROM topic GROUP BY key ORDER BY n DESC",
        "persistent://public/default/orders",
        metadata_url="zk:zookeeper:2181",
    )

Bounds on ``publish_time`` in the query's ``WHERE`` (``>``, ``>=``, ``<``, ``<=``, ``=``, ``BETWEEN``, joined by
``AND``, against a timestamp or date literal) are pushed down: each partition is sought by publish time, two
binary searches reading O(log n) entries, and only the entries between are read. DuckDB still applies the whole
``WHERE``, so pushing down only ever narrows what is read, never what is answered. The rows are the messages as
:func:`pulsar_entries.decode` gives them (``txn_status``, ``compacted_out`` and ``error`` included): a Reader
would not be delivered the aborted ones (``WHERE txn_status IS DISTINCT FROM 'aborted'``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from . import _native
from ._cluster.layout import TopicLayout
from ._cluster.read import topic_layout
from ._cluster.scan import ReadCounter, output_schema, plan_ranges, scan_range
from ._cluster.seek import Positions, seek_partitions
from ._crypto import CryptoKeysLike
from ._crypto import crypto_keys as to_crypto_keys
from .auth import AdminTls, Authentication, BookieTls, ZooKeeperAccess, bookie_client_options

__all__ = ["publish_time_bounds", "scan_topic", "sql"]

#: A ``(milliseconds, inclusive)`` bound on ``publish_time``.
Bound = tuple[int, bool]

#: ``a OP b`` as ``b OP' a``.
FLIP = {
    "COMPARE_GREATERTHAN": "COMPARE_LESSTHAN",
    "COMPARE_GREATERTHANOREQUALTO": "COMPARE_LESSTHANOREQUALTO",
    "COMPARE_LESSTHAN": "COMPARE_GREATERTHAN",
    "COMPARE_LESSTHANOREQUALTO": "COMPARE_GREATERTHANOREQUALTO",
    "COMPARE_EQUAL": "COMPARE_EQUAL",
}

#: The types a literal may be cast to and still bound ``publish_time``.
TIME_TYPES = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_TZ", "DATE")


def scan_topic(
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
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    typed: bool = False,
    crypto_keys: CryptoKeysLike | None = None,
    publish_time: tuple[Bound | None, Bound | None] = (None, None),
    timeout: float = 30.0,
    counter: ReadCounter | None = None,
) -> pa.RecordBatchReader:
    """A topic's messages as a stream of record batches, in topic order per partition: decoded, chunked
    messages whole, and with ``typed`` the topic's schema as columns (from the same metadata route). The
    cluster arguments are :func:`pulsar_entries.read_topic`'s. ``publish_time`` is ``(lower, upper)``, each
    ``(milliseconds, inclusive)`` or None: the partitions are sought to those bounds (the batches hold at
    least the messages inside them; filter for exactly). ``counter`` counts the entries the seek read."""
    where: dict[str, Any] = dict(
        metadata_url=metadata_url,
        admin_url=admin_url,
        admin_token=admin_token,
        admin_auth=admin_auth,
        admin_tls=admin_tls,
        metadata_access=metadata_access,
    )
    layout = topic_layout(
        topic,
        **where,
        bookie_addresses=bookie_addresses,
        ledger_password=ledger_password,
        timeout=timeout,
    )
    keys = to_crypto_keys(crypto_keys)
    schema = None
    if typed:
        from .schemas import topic_schemas

        schema = topic_schemas(topic, **where, bookie_tls=bookie_tls, timeout=timeout)
    reader = _native.BookieReader(layout.bookies, options=bookie_client_options(timeout, bookie_tls))
    fs, prefix = offload_filesystem, offload_prefix
    bounds = _bounds(layout, reader, publish_time, fs, prefix, counter)
    # A partition none of whose entries can match is not read at all.
    parts = [p for p in layout.partitions if bounds.get(p.partition) is not None or p.partition not in bounds]
    ranges = plan_ranges(
        TopicLayout(layout.topic, parts, layout.bookies),
        reader=reader,
        bounds={k: v for k, v in bounds.items() if v is not None},
        offload_filesystem=fs,
        offload_prefix=prefix,
        counter=counter,
    )
    messages_schema = output_schema(None)
    out_schema = messages_schema
    if schema is not None:
        from .schemas import typed_schema

        out_schema = typed_schema(messages_schema, schema)

    def batches() -> Iterator[pa.RecordBatch]:
        for rng in ranges:
            for table in scan_range(rng, crypto_keys=keys, offload_filesystem=fs, offload_prefix=prefix, reader=reader):
                if schema is not None:
                    from .schemas import typed as typed_messages

                    table = typed_messages(table, schema)
                yield from table.cast(out_schema).to_batches()

    return pa.RecordBatchReader.from_batches(out_schema, batches())


def _bounds(
    layout: TopicLayout,
    reader: Any,
    publish_time: tuple[Bound | None, Bound | None],
    fs: Any,
    prefix: str,
    counter: ReadCounter | None,
) -> dict[int, Positions | None]:
    """Each partition's positions for the ``publish_time`` bounds (two binary searches each); None for
    a partition none of whose entries can match."""
    if publish_time == (None, None):
        return {}
    return seek_partitions(
        layout.partitions,
        reader,
        {"publish_time": publish_time},
        offload_filesystem=fs,
        offload_prefix=prefix,
        counter=counter,
    )


def publish_time_bounds(
    query: str, table: str = "topic", *, connection: Any = None
) -> tuple[Bound | None, Bound | None]:
    """The bounds on ``publish_time`` that the query's ``WHERE`` puts on every row of ``table``, as
    ``((ms, inclusive) | None, (ms, inclusive) | None)``, read from DuckDB's own parse of the query
    (``json_serialize_sql``). Only a single ``SELECT ... FROM <table>`` is read, and only conditions
    joined by ``AND`` at the top of its ``WHERE``; anything else gives no bound (the whole topic is read).
    Literals are read in the connection's time zone (``sql`` sets UTC); a bound is exclusive for ``<`` and
    ``>`` on a whole millisecond, and rounded outwards to one otherwise, so it only widens."""
    import duckdb

    con = connection
    if con is None:
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
    row = con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()
    parsed = json.loads(row[0]) if row is not None else {}
    if parsed.get("error") or len(parsed.get("statements", [])) != 1:
        return (None, None)
    node = parsed["statements"][0]["node"]
    frm = node.get("from_table") or {}
    if (
        node.get("type") != "SELECT_NODE"
        or frm.get("type") != "BASE_TABLE"
        or str(frm.get("table_name", "")).lower() != table.lower()
        or node.get("where_clause") is None
    ):
        return (None, None)
    lower: Bound | None = None
    upper: Bound | None = None

    def conjuncts(e: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if e.get("class") == "CONJUNCTION" and e.get("type") == "CONJUNCTION_AND":
            for c in e.get("children", []):
                yield from conjuncts(c)
        else:
            yield e

    def is_time(e: dict[str, Any]) -> bool:
        return e.get("class") == "COLUMN_REF" and [n.lower() for n in e.get("column_names", [])][-1:] == [
            "publish_time"
        ]

    def micros(e: dict[str, Any]) -> int | None:
        """A timestamp or date literal's time in microseconds since the epoch, or None."""
        while e.get("class") == "CAST" and e.get("cast_type", {}).get("id") in TIME_TYPES:
            e = e["child"]
        value = e.get("value") or {}
        if e.get("class") != "CONSTANT" or value.get("is_null") or value.get("type", {}).get("id") != "VARCHAR":
            return None
        try:
            got = con.execute("SELECT epoch_us(CAST(CAST(? AS VARCHAR) AS TIMESTAMPTZ))", [value["value"]]).fetchone()
        except duckdb.Error:
            return None
        return None if got is None or got[0] is None else int(got[0])

    def lower_at(us: int | None, strict: bool) -> None:
        # Whole milliseconds, rounded outwards: a bound only widens.
        nonlocal lower
        if us is not None:
            bound = (us // 1000, not strict or us % 1000 != 0)
            if lower is None or (bound[0], not bound[1]) > (lower[0], not lower[1]):
                lower = bound

    def upper_at(us: int | None, strict: bool) -> None:
        nonlocal upper
        if us is not None:
            bound = (-(-us // 1000), not strict or us % 1000 != 0)
            if upper is None or bound < upper:
                upper = bound

    for c in conjuncts(node["where_clause"]):
        if c.get("class") == "COMPARISON" and c.get("type") in FLIP:
            kind, left, right = c["type"], c["left"], c["right"]
            if is_time(right) and not is_time(left):
                kind, left, right = FLIP[kind], right, left
            if not is_time(left):
                continue
            if kind in ("COMPARE_GREATERTHAN", "COMPARE_GREATERTHANOREQUALTO", "COMPARE_EQUAL"):
                lower_at(micros(right), strict=kind == "COMPARE_GREATERTHAN")
            if kind in ("COMPARE_LESSTHAN", "COMPARE_LESSTHANOREQUALTO", "COMPARE_EQUAL"):
                upper_at(micros(right), strict=kind == "COMPARE_LESSTHAN")
        elif c.get("class") == "BETWEEN" and is_time(c.get("input", {})):
            lower_at(micros(c["lower"]), strict=False)
            upper_at(micros(c["upper"]), strict=False)
    return (lower, upper)


def sql(query: str, topic: str, *, table: str = "topic", **scan: Any) -> pa.Table:
    """The answer to ``query`` (DuckDB's SQL) over ``topic``'s messages, the table named ``table``; ``scan``
    takes :func:`scan_topic`'s arguments (the cluster, ``typed``, ``crypto_keys``, ...). Bounds on
    ``publish_time`` are pushed down as a seek (see the module). The topic is read once, in bounded
    memory; a query that reads the table twice (a self-join) needs it materialized first
    (``pulsar_entries.read_topic``)."""
    import duckdb

    con = duckdb.connect()
    try:
        # Literals without a zone are UTC, in the bounds pushed down and in DuckDB's own comparisons.
        con.execute("SET TimeZone = 'UTC'")
        if "publish_time" not in scan:
            scan["publish_time"] = publish_time_bounds(query, table, connection=con)
        con.register(table, scan_topic(topic, **scan))
        result = con.execute(query)
        # DuckDB 1.5 renamed fetch_arrow_table (deprecated there) to to_arrow_table.
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()
    finally:
        con.close()
