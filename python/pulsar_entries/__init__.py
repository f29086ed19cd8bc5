"""pulsar-entries: Apache Pulsar's stored entries, outside the broker.

Decode the entries a Pulsar topic keeps in BookKeeper ledgers and tiered
storage into Arrow tables, and encode messages back into byte-identical
entries. The work happens in a Rust core; Arrow data moves zero-copy.
"""

from __future__ import annotations

from . import kafka, processors
from ._native import (
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
    EntryContext,
    EntryFormatError,
    Position,
    ChunkMessageId,
    MessageId,
    __version__,
    decode,
    encode_chunked,
    encode_entry,
    entry_metadata,
    find_position_by_offset,
    find_position_by_time,
    parse_entry,
    stamp,
    reassemble_chunks,
    seek_position,
    set_broker_entry_metadata,
    with_message_ids,
)
from .entries import entries_table
from .message_ids import message_ids, seek

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "EntryContext",
    "EntryFormatError",
    "Position",
    "ChunkMessageId",
    "MessageId",
    "__version__",
    "decode",
    "encode_chunked",
    "encode_entry",
    "entries_table",
    "entry_metadata",
    "find_position_by_offset",
    "find_position_by_time",
    "kafka",
    "parse_entry",
    "processors",
    "stamp",
    "message_ids",
    "reassemble_chunks",
    "seek",
    "seek_position",
    "set_broker_entry_metadata",
    "with_message_ids",
]
