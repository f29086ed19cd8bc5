"""Streaming-query helpers for the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def available_now(stream: Any, tmp_path: Path, timeout: float = 300) -> Any:
    """``stream`` (a streaming DataFrame) run with ``Trigger.AvailableNow`` into a Parquet sink at
    ``tmp_path / "sink"`` (checkpoint ``tmp_path / "ckpt"``) until it ends; the finished query."""
    query = (
        stream.writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start(str(tmp_path / "sink"))
    )
    assert query.awaitTermination(timeout)
    return query
