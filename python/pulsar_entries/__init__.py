"""pulsar-entries: Apache Pulsar's stored entries, outside the broker.

Decode the entries a Pulsar topic keeps in BookKeeper ledgers and tiered
storage into Arrow tables, encode messages back into byte-identical entries,
and compact topics as the broker does. The work happens in a Rust core; Arrow
data moves zero-copy.
"""

from __future__ import annotations

from . import auth, kafka, offload, processors, query, strategies
from ._broker import Position, find_position_by_offset, find_position_by_time, stamp
from ._cluster import iter_topic, read_topic
from ._compaction import (
    Compactor,
    MessagePosition,
    compact,
    find_position_by_publish_time,
    from_ledger_records,
    last_message_position,
    to_ledger_records,
)
from ._context import EntryContext
from ._decode import decode
from ._entries import entries_table
from ._message_id import ChunkMessageId, MessageId, seek_position
from ._native import (
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
    CryptoKeys,
    DataError,
    EntryFormatError,
    InputSchemaError,
    OffloadFormatError,
    OptionsError,
    OrderError,
    PulsarEntriesError,
    StorageError,
    __version__,
    encode_chunked,
    encode_entry,
    entry_metadata,
    parse_entry,
    set_broker_entry_metadata,
    with_message_ids,
)
from ._table_view import TableView
from .chunks import reassemble_chunks
from .message_ids import message_ids, seek
from .query import scan_topic, sql

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "ChunkMessageId",
    "Compactor",
    "CryptoKeys",
    "DataError",
    "EntryContext",
    "EntryFormatError",
    "InputSchemaError",
    "MessageId",
    "MessagePosition",
    "OffloadFormatError",
    "OptionsError",
    "OrderError",
    "Position",
    "PulsarEntriesError",
    "StorageError",
    "TableView",
    "__version__",
    "auth",
    "compact",
    "decode",
    "encode_chunked",
    "encode_entry",
    "entries_table",
    "entry_metadata",
    "find_position_by_offset",
    "find_position_by_publish_time",
    "find_position_by_time",
    "from_ledger_records",
    "iter_topic",
    "kafka",
    "last_message_position",
    "message_ids",
    "offload",
    "parse_entry",
    "processors",
    "query",
    "read_topic",
    "reassemble_chunks",
    "scan_topic",
    "seek",
    "seek_position",
    "set_broker_entry_metadata",
    "sql",
    "stamp",
    "strategies",
    "to_ledger_records",
    "with_message_ids",
]
