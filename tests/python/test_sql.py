"""The publish_time bounds ``pulsar_entries.sql`` pushes down as a seek, read from DuckDB's own parse of a query:
only ``AND``-joined conditions of a single ``SELECT ... FROM topic``, literals in UTC, exclusive for ``<`` and ``>``
on a whole millisecond, rounded outwards otherwise (a bound only widens what is read)."""

from __future__ import annotations

import pytest

from pulsar_entries.query import publish_time_bounds

DAY = 1767225600000  # 2026-01-01 00:00:00 UTC, in ms
HOUR = 3600 * 1000


@pytest.mark.parametrize(
    ("where", "bounds"),
    [
        (
            "publish_time >= TIMESTAMP '2026-01-01' AND publish_time < '2026-01-02'",
            ((DAY, True), (DAY + 24 * HOUR, False)),
        ),
        ("publish_time > '2026-01-01' AND key = 'k1'", ((DAY, False), None)),
        ("'2026-01-01 01:00' > publish_time", (None, (DAY + HOUR, False))),
        ("publish_time BETWEEN DATE '2026-01-01' AND '2026-01-01 01:00'", ((DAY, True), (DAY + HOUR, True))),
        ("publish_time = TIMESTAMPTZ '2026-01-01 02:00:00+01'", ((DAY + HOUR, True), (DAY + HOUR, True))),
        # Sub-millisecond literals: the bounds widen to whole milliseconds, inclusive.
        (
            "publish_time > '2026-01-01 00:00:00.0005' AND publish_time < '2026-01-01 00:00:00.0015'",
            ((DAY, True), (DAY + 2, True)),
        ),
        # The tighter of two bounds on one side.
        ("publish_time >= '2026-01-01' AND publish_time >= '2026-01-01 01:00'", ((DAY + HOUR, True), None)),
        # No bound: an OR, a non-literal, another column.
        ("publish_time >= '2026-01-01' OR key = 'k1'", (None, None)),
        ("publish_time >= now() - INTERVAL 1 HOUR", (None, None)),
        ("event_time >= '2026-01-01'", (None, None)),
    ],
)
def test_bounds_from_the_where_clause(where: str, bounds: tuple[object, object]) -> None:
    assert publish_time_bounds(f"SELECT key, count(*) FROM topic WHERE {where} GROUP BY key") == bounds


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM other WHERE publish_time >= '2026-01-01'",  # not the topic
        "SELECT * FROM topic t JOIN other o ON t.key = o.key WHERE publish_time >= '2026-01-01'",  # a join
        "SELECT * FROM topic WHERE publish_time >= '2026-01-01' UNION ALL SELECT * FROM topic",  # a set operation
        "SELECT 1; SELECT 2",
        "not SQL",
    ],
)
def test_anything_else_reads_the_whole_topic(query: str) -> None:
    assert publish_time_bounds(query) == (None, None)
