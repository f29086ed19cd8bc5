"""Planning a topic read (``pulsar_entries._cluster.scan``, what ``spark.read.format("pulsar")`` runs on the
driver), without a cluster: ledgers whose counts the managed ledger gives are cut into ranges without a read."""

from __future__ import annotations

import pytest

from pulsar_entries._cluster import Ledger, Partition, TopicLayout
from pulsar_entries._cluster.scan import EntryRange, Segment, plan_ranges


def layout(*counts: int, partitions: int = 1) -> TopicLayout:
    parts = []
    for p in range(partitions):
        ledgers = [Ledger(100 * (p + 1) + i, n, n * 10, b"node") for i, n in enumerate(counts)]
        parts.append(Partition(f"persistent://t/ns/x-partition-{p}", p, ledgers))
    return TopicLayout("persistent://t/ns/x", parts, {"b1": "127.0.0.1:3181"})


def spans(r: EntryRange) -> list[tuple[int, int, int | None]]:
    return [(s.ledger.ledger_id, s.first, s.last) for s in r.segments]


def test_large_ledgers_are_cut_and_small_ones_share_a_range() -> None:
    ranges = plan_ranges(layout(25, 3, 4, 2), entries_per_partition=10)
    assert [spans(r) for r in ranges] == [
        [(100, 0, 9)],
        [(100, 10, 19)],
        [(100, 20, 24), (101, 0, 2), (102, 0, 1)],
        [(102, 2, 3), (103, 0, 1)],
    ]
    assert [r.entries for r in ranges] == [10, 10, 10, 4]
    # Only the first range of a topic partition keeps continuation chunks it has no first chunk for.
    assert [r.first for r in ranges] == [True, False, False, False]
    # Every range carries the bookies it reads from.
    assert all(r.bookies == {"b1": "127.0.0.1:3181"} for r in ranges)


def test_read_ahead_follows_the_range_up_to_its_budget_and_the_end() -> None:
    ranges = plan_ranges(layout(25, 3), entries_per_partition=10, read_ahead=12)
    ahead = [[(s.ledger.ledger_id, s.first, s.last) for s in r.ahead] for r in ranges]
    assert ahead[0] == [(100, 10, 21)]
    assert ahead[1] == [(100, 20, 24), (101, 0, 2)]
    assert [spans(r) for r in ranges] == [[(100, 0, 9)], [(100, 10, 19)], [(100, 20, 24), (101, 0, 2)]]
    assert ahead[-1] == []
    # The end bound stops it too.
    bounded = plan_ranges(layout(25, 3), entries_per_partition=10, end=(100, 14))
    assert [spans(r) for r in bounded] == [[(100, 0, 9)], [(100, 10, 14)]]
    assert [(s.ledger.ledger_id, s.first, s.last) for s in bounded[0].ahead] == [(100, 10, 14)]


def test_start_end_and_bounds_narrow_each_partition() -> None:
    ranges = plan_ranges(
        layout(25, 3, partitions=2),
        entries_per_partition=100,
        start=(100, 5),
        bounds={1: ((200, 20), (201, 1))},
    )
    assert [(r.partition, spans(r)) for r in ranges] == [
        (0, [(100, 5, 24), (101, 0, 2)]),
        (1, [(200, 20, 24), (201, 0, 1)]),
    ]


def test_a_bad_partition_size_is_refused() -> None:
    with pytest.raises(ValueError, match="entriesPerPartition must be at least 1"):
        plan_ranges(layout(5), entries_per_partition=0)


def test_segment_counts() -> None:
    led = Ledger(1, 0, 0, None)
    assert Segment(led, 3, 7).count == 5 and Segment(led, 0, None).count is None
