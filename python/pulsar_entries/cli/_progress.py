"""Progress bars for long CLI work (topic reads, decodes, compactions, exports), drawn by tqdm on
stderr: entries done of the total when it is known, the bytes read, the rates and the time left.
A bar is drawn only on a terminal and never with ``--quiet`` (see ``_commands.progress``); otherwise
:class:`Bar` does nothing, so callers need not ask."""

from __future__ import annotations

import sys
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def progress(args: Any) -> bool:
    """Whether this run draws progress bars: stderr is a terminal and ``--quiet`` was not given."""
    return sys.stderr.isatty() and not args.quiet


def data_bytes(table: pa.Table | pa.RecordBatch, column: str = "data") -> int:
    """The bytes of the entries' payloads in ``table`` (0 without a ``column`` column)."""
    if column not in table.column_names or not len(table):
        return 0
    total = pc.sum(pc.binary_length(table[column])).as_py()
    return int(total or 0)


class Bar:
    """One bar: ``update(entries, bytes)`` as work is done; ``note`` adds a short text after the figures."""

    def __init__(self, enabled: bool, what: str, total: int | None = None, unit: str = "entries") -> None:
        self.bytes = 0
        self.started = time.monotonic()
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=what,
                unit=f" {unit}",
                unit_scale=True,
                file=sys.stderr,
                dynamic_ncols=True,
                leave=True,
                mininterval=0.2,
            )

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_total(self, total: int | None) -> None:
        if self._bar is not None and total != self._bar.total:
            self._bar.total = total
            self._bar.refresh()

    def update(self, entries: int, nbytes: int = 0, note: str = "") -> None:
        self.bytes += nbytes
        if self._bar is None:
            return
        took = max(1e-9, time.monotonic() - self.started)
        figures = f"{self.bytes / 2**20:,.1f} MiB, {self.bytes / 2**20 / took:,.1f} MiB/s" if self.bytes else ""
        self._bar.set_postfix_str(", ".join(x for x in (figures, note) if x), refresh=False)
        self._bar.update(entries)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
