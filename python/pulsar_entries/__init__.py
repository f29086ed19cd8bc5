"""pulsar-entries: Apache Pulsar's stored entries, outside the broker.

Decode the entries a Pulsar topic keeps in BookKeeper ledgers and tiered
storage into Arrow tables, encode messages back into byte-identical entries,
and compact topics as the broker does. The work happens in a Rust core; Arrow
data moves zero-copy.
"""

from __future__ import annotations

from . import strategies
from ._native import (
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
    EntryFormatError,
    __version__,
    decode,
    encode_entry,
    parse_entry,
)
from .compaction import (
    Compactor,
    MessagePosition,
    compact,
    find_position_by_publish_time,
    from_ledger_records,
    last_message_position,
    to_ledger_records,
)
from .entries import entries_table
from .table_view import TableView

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "Compactor",
    "EntryFormatError",
    "MessagePosition",
    "TableView",
    "__version__",
    "compact",
    "decode",
    "encode_entry",
    "entries_table",
    "find_position_by_publish_time",
    "from_ledger_records",
    "last_message_position",
    "parse_entry",
    "strategies",
    "to_ledger_records",
]
