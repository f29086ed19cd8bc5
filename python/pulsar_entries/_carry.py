"""Decoding that keeps what the input says beyond the entry bytes: the reader's
``error`` text and every extra input column travel to the decoded rows.

:func:`pulsar_entries.decode` reads ``ledger_id``, ``entry_id``, ``data`` and
``partition``; the CLI and :func:`pulsar_entries.spark.decode` decode with
:func:`decode_carrying`, which adds to each message row:

- the input row's ``error`` as the row's ``error`` when the entry bytes are
  null (a storage reader's diagnostic: a damaged offload block, an empty
  object), instead of the decoder's "entry data is null";
- every other input column, after the message columns (an input column named
  like a message column is an error: rename it).

The rows of one entry are contiguous and in input order, so each output row
is matched to its input row by its ``(ledger_id, entry_id, partition)``; a
batch in which an entry's ids occur twice is decoded in runs without repeats.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from ._crypto import CryptoKeysLike
from ._decode import decode_with

#: What the decoder reads; everything else is carried.
DECODER_COLUMNS = ("ledger_id", "entry_id", "data", "partition")
#: The decoder's text for a null ``data`` cell, replaced by the input's ``error``.
NULL_DATA = "entry data is null"


def carried_columns(names: list[str], message_columns: list[str]) -> list[str]:
    """The input columns carried to the output (all but the decoder's and ``error``);
    raises for one named like a message column."""
    extras = [n for n in names if n not in DECODER_COLUMNS and n != "error"]
    clash = [n for n in extras if n in message_columns]
    if clash:
        raise _native.InputSchemaError(
            f"input column{'s' if len(clash) > 1 else ''} {', '.join(repr(c) for c in clash)} "
            "would hide the decoded column of the same name: rename or drop it before decoding"
        )
    return extras


def _ids(table: pa.Table | pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def col(name: str, t: pa.DataType) -> np.ndarray:
        if name not in table.schema.names:
            return np.full(table.num_rows, -1, dtype=np.int64)
        return np.asarray(pc.fill_null(table.column(name).cast(t, safe=False), -1).to_numpy(zero_copy_only=False))

    return col("ledger_id", pa.int64()), col("entry_id", pa.int64()), col("partition", pa.int32()).astype(np.int64)


def _runs_without_repeats(ledger: np.ndarray, entry: np.ndarray, part: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` runs of rows in which no id triple occurs twice."""
    n = len(ledger)
    keys = np.rec.fromarrays([part, ledger, entry])
    ordered = np.sort(keys)
    if n < 2 or not np.any(ordered[1:] == ordered[:-1]):
        yield 0, n
        return
    start = 0
    seen: set[tuple[int, int, int]] = set()
    for i, key in enumerate(zip(part.tolist(), ledger.tolist(), entry.tolist())):
        if key in seen:
            yield start, i
            start, seen = i, set()
        seen.add(key)
    yield start, n


def _input_rows(entries: pa.Table, decoded: pa.Table) -> np.ndarray:
    """For each decoded row, the row of ``entries`` (ids unique in it) it came from."""
    il, ie, ip = _ids(entries)
    ol, oe, op = _ids(decoded)
    n = len(ol)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = (ol[1:] != ol[:-1]) | (oe[1:] != oe[:-1]) | (op[1:] != op[:-1])
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, n))
    keys = np.rec.fromarrays([ip, il, ie])
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    wanted = np.rec.fromarrays([op[starts], ol[starts], oe[starts]])
    at = np.searchsorted(sorted_keys, wanted)
    at = np.minimum(at, len(sorted_keys) - 1)
    if not np.all(sorted_keys[at] == wanted):  # pragma: no cover - the decoder keeps the input ids
        raise AssertionError("a decoded row has ids no input row has")
    return np.repeat(order[at], lengths)


def _carry(entries: pa.Table, decoded: pa.Table, extras: list[str]) -> pa.Table:
    rows = pa.array(_input_rows(entries, decoded), pa.int64())
    if "error" in entries.column_names and entries.column("error").null_count < entries.num_rows:
        reader_error = entries.column("error").cast(pa.string()).take(rows)
        null_data = pc.is_null(entries.column("data")).take(rows)
        use = pc.and_(null_data, pc.is_valid(reader_error))
        i = decoded.schema.get_field_index("error")
        decoded = decoded.set_column(i, "error", pc.if_else(use, reader_error, decoded.column("error")))
    for name in extras:
        decoded = decoded.append_column(entries.schema.field(name), entries.column(name).take(rows))
    return decoded


#: Decoded columns the carrying needs: the ids that match rows up, and ``error``.
CARRY_NEEDS = ("ledger_id", "entry_id", "partition", "error")


def decode_carrying(
    entries: pa.Table | pa.RecordBatch,
    columns: Sequence[str] | None = None,
    *,
    options: _native.DecodeOptions | None = None,
    processors: Sequence[Any] | None = None,
    crypto_keys: CryptoKeysLike | None = None,
) -> pa.Table:
    """:func:`pulsar_entries.decode`, keeping the input's ``error`` text and its
    other columns (see the module's docstring).

    ``columns``: the output needs only these (message or carried) columns. The
    decoder builds only the message columns among them, plus what carrying
    needs; the result may hold more columns than asked, never fewer."""
    table = entries if isinstance(entries, pa.Table) else pa.Table.from_batches([entries])
    names = table.column_names
    has_errors = "error" in names and table.column("error").null_count < table.num_rows
    message_columns = decode_with(table.slice(0, 0).select([c for c in DECODER_COLUMNS if c in names])).column_names
    extras = carried_columns(names, message_columns)
    core = table.select([c for c in DECODER_COLUMNS if c in names])
    wanted = None if columns is None else [c for c in columns if c in message_columns]
    if not extras and not has_errors:
        return decode_with(core, options, processors=processors, columns=wanted, crypto_keys=crypto_keys)
    if wanted is not None:
        wanted += [c for c in CARRY_NEEDS if c not in wanted]

    def decode(entries: pa.Table) -> pa.Table:
        return decode_with(entries, options, processors=processors, columns=wanted, crypto_keys=crypto_keys)

    parts = []
    for start, stop in _runs_without_repeats(*_ids(table)):
        part = table.slice(start, stop - start)
        parts.append(_carry(part, decode(core.slice(start, stop - start)), extras))
    if not parts:
        return _carry(table, decode(core), extras)
    return pa.concat_tables(parts)
