"""``decode``: entries into messages. The processor list is checked here
(:func:`pulsar_entries.processors.native_processors`); the work is the Rust core's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from . import _native
from .processors import native_processors


def decode(
    entries: Any,
    *,
    verify_checksum: bool = True,
    keep_markers: bool = False,
    max_uncompressed_size: int = _native.DEFAULT_MAX_UNCOMPRESSED_SIZE,
    processors: Sequence[Any] | None = None,
    utf8_errors: str = "replace",
    max_output_bytes: int | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Decodes entries into one row per message.

    ``entries`` is a pyarrow Table or RecordBatch, or any object exporting an
    Arrow stream (``__arrow_c_stream__``), with columns ``ledger_id`` (int64),
    ``entry_id`` (int64), ``data`` (binary or large_binary) and optionally
    ``partition`` (int32). An entry that cannot be decoded yields exactly one
    row whose ``error`` says what failed and at which byte offset.

    ``processors`` (default ``[KAFKA, PULSAR]``) are tried in order per entry;
    see ``pulsar_entries.processors``.

    ``utf8_errors``: a text field (producer name, key, property, uuid,
    replicated_from, ...) that is not valid UTF-8 is ``"replace"``d, each
    malformed sequence by U+FFFD as Pulsar's Java client reads it (default),
    or makes the entry one ``"error"`` row naming the field and offset.
    ``max_output_bytes`` caps the decompressed payload bytes of this call;
    an entry that would exceed it is an error row.
    ``columns`` builds only those output columns, in that order (the same
    values as the full table's columns, without the work for the others);
    an unknown or repeated name raises OptionsError.
    """
    return _native.decode(
        entries,
        verify_checksum=verify_checksum,
        keep_markers=keep_markers,
        max_uncompressed_size=max_uncompressed_size,
        processors=native_processors(processors),
        utf8_errors=utf8_errors,
        max_output_bytes=max_output_bytes,
        columns=columns,
    )
