"""A topic's storage layout (partitions, ledgers, compacted ledger, bookies),
read from the metadata store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar_entries._native as _native

from .stores import MetadataStore

#: The compaction subscription's cursor.
COMPACTION_CURSOR = "__compaction"
#: The most partitions a topic's metadata may give (Pulsar caps them with the broker
#: setting ``maxNumPartitionsPerPartitionedTopic``, unlimited by default; 100,000 is
#: far above any real topic and keeps a corrupt or hostile count from building
#: millions of names).
MAX_PARTITIONS = 100_000


def check_partition_count(topic: str, value: object, field: str) -> int:
    """``value`` as a partition count: an int (not a bool), 0 to :data:`MAX_PARTITIONS`;
    else a one-line ValueError naming the topic, ``field`` and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PARTITIONS:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ValueError(f"topic {topic}: {field} is {shown}, expected a partition count from 0 to {MAX_PARTITIONS:,}")
    return value


@dataclass(frozen=True)
class Ledger:
    """One ledger of a topic partition, with what is needed to read it."""

    ledger_id: int
    entries: int
    size: int
    #: The ledger node's bytes (``None`` when the BookKeeper copy is gone).
    metadata: bytes | None
    #: The parsed node, password left out (empty when ``metadata`` is None).
    info: dict[str, Any] = field(default_factory=dict)
    #: Offload state from the managed-ledger info, ``None`` if not offloaded.
    offload: dict[str, Any] | None = None


@dataclass(frozen=True)
class Partition:
    """One managed ledger: a non-partitioned topic, or one partition."""

    topic: str
    #: -1 for a non-partitioned topic.
    partition: int
    ledgers: list[Ledger]
    #: The compacted ledger of the ``__compaction`` cursor, if the topic was compacted.
    compacted: Ledger | None = None
    #: The compaction horizon: the last entry compaction read (the cursor's
    #: mark-delete position). A compacted read continues after it.
    horizon: tuple[int, int] | None = None


@dataclass(frozen=True)
class TopicLayout:
    """A topic's storage layout, as the metadata store describes it."""

    topic: str
    partitions: list[Partition]
    #: Bookie id -> ``host:port``.
    bookies: dict[str, str]


def ledger_of(record: _native.LedgerRecord) -> Ledger:
    """A native ledger record as a :class:`Ledger`."""
    return Ledger(
        record.ledger_id,
        record.entries,
        record.size,
        record.metadata,
        dict(record.info or {}),
        None if record.offload is None else dict(record.offload),
    )


def select_partitions(
    topic: str, names: list[tuple[str, int]], partitions: Sequence[int] | None
) -> list[tuple[str, int]]:
    """The ``(name, index)`` pairs of ``names`` whose index is in ``partitions`` (all when
    ``None``); an index the topic does not have is an error."""
    if partitions is None:
        return names
    wanted = set(partitions)
    unknown = wanted - {p for _, p in names}
    if unknown:
        raise ValueError(f"topic {topic} has no partition {sorted(unknown)}")
    return [(n, p) for n, p in names if p in wanted]


def resolve_topic(topic: str, store: MetadataStore, *, partitions: Sequence[int] | None = None) -> TopicLayout:
    """A topic's partitions, ledgers, compacted ledger and bookies, read from the store
    in one native walk (which calls back ``store.get``; an exception it raises propagates
    as it is). The compaction horizon comes from the ``__compaction`` cursor's own ledger
    when a bookie serves its last entry, else from the cursor node's snapshot."""
    wanted = None if partitions is None else list(partitions)
    r = _native.resolve_topic(topic, store, partitions=wanted)
    parts = [
        Partition(
            p.topic,
            p.partition,
            [ledger_of(x) for x in p.ledgers],
            None if p.compacted is None else ledger_of(p.compacted),
            p.horizon,
        )
        for p in r.partitions
    ]
    return TopicLayout(r.topic, parts, dict(r.bookies))
