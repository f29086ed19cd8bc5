"""Message ids of table rows, and reading a table from a message id (seek)."""

from __future__ import annotations

from typing import Literal, Union

import pyarrow as pa
import pyarrow.compute as pc

from ._message_id import ChunkMessageId, MessageId, seek_position
from ._native import with_message_ids

AnyMessageId = Union[MessageId, ChunkMessageId]


def message_ids(table: pa.Table, form: Literal["bytes", "str"] = "bytes") -> pa.ChunkedArray:
    """The message id of every row of a decoded or reassembled table.

    ``form="bytes"``: serialized as Java's ``MessageId.toByteArray()`` (load
    with ``MessageId.deserialize``); ``form="str"``: as Java prints it
    (``ledger:entry:partition[:batch_index]``, ``first;last`` for a chunked
    message). Rows that are not messages (incomplete, expired, evicted or
    duplicate chunks after reassembly) are null.
    """
    if form not in ("bytes", "str"):
        raise ValueError(f"form must be 'bytes' or 'str', not {form!r}")
    column = "message_id" if form == "bytes" else "message_id_str"
    return with_message_ids(table).column(column)


def seek(table: pa.Table, message_id: AnyMessageId, *, inclusive: bool = True) -> pa.Table:
    """The rows a consumer reads after seeking to ``message_id``.

    ``table`` is an entry table (``ledger_id``, ``entry_id``, ``data``) or a
    decoded one, in topic order. Reading starts at ``seek_position(message_id)``:
    the first chunk for a chunked message (PIP-107), so reassembling the result
    returns that message first. With ``inclusive=False`` reading starts after
    the message instead (after its last chunk; after its batch index within a
    batch). Reassemble after seeking, not before: chunks of a message that
    started before the seek position are not served.

    When the id names a partition (``partition`` ≥ 0) and the table has a
    ``partition`` column, only that partition's rows are kept.
    """
    if not isinstance(message_id, MessageId):
        raise TypeError("seek expects a MessageId or ChunkMessageId")
    if "status" in table.column_names:
        raise ValueError("seek reads entry or decoded tables: seek first, then reassemble")
    start = seek_position(message_id)
    ledger, entry = table["ledger_id"], table["entry_id"]

    def at_or_after(lid: int, eid: int) -> pa.ChunkedArray:
        return pc.or_(pc.greater(ledger, lid), pc.and_(pc.equal(ledger, lid), pc.greater_equal(entry, eid)))

    mask = at_or_after(start.ledger_id, start.entry_id)
    # The message's own position: the last chunk for a chunk id.
    own_ledger, own_entry = message_id.ledger_id, message_id.entry_id
    in_own_entry = pc.and_(pc.equal(ledger, own_ledger), pc.equal(entry, own_entry))
    if message_id.batch_index >= 0:
        if "batch_index" in table.column_names:
            index = pc.fill_null(table["batch_index"], -1)
            before = (
                pc.less(index, message_id.batch_index) if inclusive else pc.less_equal(index, message_id.batch_index)
            )
            mask = pc.and_(mask, pc.invert(pc.and_(in_own_entry, before)))
        # On an entry table the batch entry stays: the consumer skips within it.
    elif not inclusive:
        mask = pc.and_(mask, at_or_after(own_ledger, own_entry + 1))
    if message_id.partition >= 0 and "partition" in table.column_names:
        mask = pc.and_(mask, pc.equal(table["partition"], message_id.partition))
    return table.filter(mask)
