"""Strategic compaction (PIP-215) on Spark: see :func:`compact_with_strategy`."""

from __future__ import annotations

from typing import Any


def compact_with_strategy(df: Any, strategy: Any, **options: Any) -> Any:
    raise NotImplementedError("compaction strategies run in-process for now: pulsar_entries.compact(strategy=...)")
