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


def _ledger(store: MetadataStore, ledger_id: int, entries: int = 0, size: int = 0, offload: Any = None) -> Ledger:
    node = store.get(_native.ledger_path(ledger_id))
    info = {} if node is None else _native.ledger_metadata(ledger_id, node)
    return Ledger(ledger_id, entries, size, node, info, offload)


def _bookie_addresses(store: MetadataStore, ids: set[str]) -> dict[str, str]:
    out = {}
    for bookie in sorted(ids):
        node = store.get(f"/ledgers/available/{bookie}")
        if node is None:
            node = store.get(f"/ledgers/available/readonly/{bookie}")
        # Not registered (down, or never registered): the id itself may be host:port.
        out[bookie] = bookie if node is None else _native.bookie_address(bookie, node)
    return out


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
    """A topic's partitions, ledgers, compacted ledger and bookies, read from the store."""
    paths = _native.topic_paths(topic)
    names: list[tuple[str, int]]
    if paths["partition"] is not None:
        names = [(paths["topic"], paths["partition"])]
    else:
        node = store.get(paths["partitioned_metadata"])
        if node is None:
            names = [(paths["topic"], -1)]
        else:
            n = check_partition_count(
                paths["topic"], _native.partition_count(node), f"the partition count at {paths['partitioned_metadata']}"
            )
            names = [(_native.partition_name(paths["topic"], i), i) for i in range(n)]
    names = select_partitions(paths["topic"], names, partitions)
    parts = []
    for name, index in names:
        p = _native.topic_paths(name)
        node = store.get(p["managed_ledger"])
        if node is None:
            raise LookupError(f"unknown topic {name}: no managed ledger at {p['managed_ledger']}")
        ml = _native.managed_ledger_info(node)
        ledgers = [_ledger(store, x["ledger_id"], x["entries"], x["size"], x["offload"]) for x in ml["ledgers"]]
        parts.append(Partition(name, index, ledgers, *_compacted(store, p["compaction_cursor"])))
    ids = {
        b
        for part in parts
        for led in [*part.ledgers, part.compacted]
        if led is not None
        for _, ens in led.info.get("ensembles", [])
        for b in ens
    }
    return TopicLayout(paths["topic"], parts, _bookie_addresses(store, ids))


def _compacted(store: MetadataStore, cursor_path: str) -> tuple[Ledger | None, tuple[int, int] | None]:
    """The compacted ledger and the horizon, from the ``__compaction`` cursor."""
    node = store.get(cursor_path)
    if node is None:
        return None, None
    ledger_id, horizon, cursor_ledger = _native.compacted_ledger(node)
    if cursor_ledger >= 0:
        # The cursor ledger's last entry holds the authoritative position and properties.
        cl = _ledger(store, cursor_ledger)
        if cl.metadata is not None:
            reader = _native.BookieReader(_bookie_addresses(store, {b for _, e in cl.info["ensembles"] for b in e}))
            try:
                last = reader.last_readable(cursor_ledger, cl.metadata)
            except OSError:
                # No bookie answers (a stopped cluster read from its files): the node's
                # own snapshot of the position and properties is what there is.
                last = -1
            if last >= 0:
                rows = reader.read_ledger(cursor_ledger, cl.metadata, last, last)
                data = rows.column("data")[0].as_py()
                if data is not None:
                    ledger_id, horizon, _ = _native.compacted_ledger(node, data)
    if ledger_id is None:
        return None, None
    return _ledger(store, ledger_id), horizon
