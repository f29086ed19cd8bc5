"""pulsar-entries: Apache Pulsar's stored entries, outside the broker.

Decode the entries a Pulsar topic keeps in BookKeeper ledgers and tiered
storage into Arrow tables, and encode messages back into byte-identical
entries. The work happens in a Rust core; Arrow data moves zero-copy.
"""

from __future__ import annotations

from . import offload
from ._native import (
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
    EntryFormatError,
    OffloadFormatError,
    __version__,
    decode,
    encode_entry,
    entry_metadata,
    parse_entry,
)
from .entries import entries_table

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "EntryFormatError",
    "OffloadFormatError",
    "__version__",
    "decode",
    "encode_entry",
    "entries_table",
    "entry_metadata",
    "offload",
    "parse_entry",
]
