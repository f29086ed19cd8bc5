"""The entry-table shape every pulsar-entries function reads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

ENTRY_SCHEMA = pa.schema(
    [
        pa.field("ledger_id", pa.int64(), nullable=False),
        pa.field("entry_id", pa.int64(), nullable=False),
        pa.field("data", pa.binary()),
    ]
)


def entries_table(
    data: Sequence[bytes],
    *,
    ledger_id: int | Sequence[int] = 0,
    entry_ids: Iterable[int] | None = None,
    partition: int | None = None,
) -> pa.Table:
    """Builds an entry table from raw entry bytes.

    With one ``ledger_id``, entries get consecutive ``entry_id`` values from 0
    (or the given ``entry_ids``); a sequence of ledger ids pairs up one per entry.
    """
    n = len(data)
    ledgers = [ledger_id] * n if isinstance(ledger_id, int) else list(ledger_id)
    ids = list(range(n)) if entry_ids is None else list(entry_ids)
    if len(ledgers) != n or len(ids) != n:
        raise ValueError(f"{n} entries but {len(ledgers)} ledger ids and {len(ids)} entry ids")
    columns = {
        "ledger_id": pa.array(ledgers, pa.int64()),
        "entry_id": pa.array(ids, pa.int64()),
        "data": pa.array(data, pa.binary()),
    }
    if partition is not None:
        columns["partition"] = pa.array([partition] * n, pa.int32())
    return pa.table(columns)
