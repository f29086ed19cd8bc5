"""Type stubs for the Rust extension module."""

from typing import Any, Mapping, Optional, Sequence, TypedDict, Union

import pyarrow as pa

__version__: str
DEFAULT_MAX_UNCOMPRESSED_SIZE: int

class EntryFormatError(ValueError):
    """An entry's bytes are not a valid Pulsar stored entry."""

class OffloadFormatError(ValueError):
    """An offload object's bytes are not a valid Pulsar tiered-storage object."""

class MessageDict(TypedDict, total=False):
    value: Optional[bytes]
    key: Union[str, bytes, None]
    properties: Optional[Mapping[str, str]]
    event_time: Optional[int]
    sequence_id: Optional[int]
    ordering_key: Optional[bytes]

def decode(
    entries: Any,
    *,
    verify_checksum: bool = True,
    keep_markers: bool = False,
    max_uncompressed_size: int = ...,
) -> pa.Table:
    """Decodes entries into one row per message.

    ``entries`` is a pyarrow Table or RecordBatch, or any object exporting an
    Arrow stream (``__arrow_c_stream__``), with columns ``ledger_id`` (int64),
    ``entry_id`` (int64), ``data`` (binary or large_binary) and optionally
    ``partition`` (int32). An entry that cannot be decoded yields exactly one
    row whose ``error`` says what failed and at which byte offset.
    """

def parse_entry(data: bytes) -> dict[str, Any]:
    """All metadata of one entry: ``broker_entry_metadata``, ``checksum``,
    ``metadata`` (present fields only), ``payload`` and sizes.

    Raises EntryFormatError on bad input.
    """

def encode_entry(
    messages: Sequence[MessageDict],
    *,
    batch: Optional[bool] = None,
    compression: str = "none",
    producer_name: str = "pulsar-entries",
    sequence_id: int = 0,
    publish_time: Optional[int] = None,
    broker_timestamp: Optional[int] = None,
    broker_index: Optional[int] = None,
    checksum: bool = True,
    properties: Optional[Mapping[str, str]] = None,
) -> bytes:
    """Encodes messages into one stored entry as Pulsar's Java producer does.

    ``batch=None`` makes a batch when there is more than one message. A
    ``bytes`` key is binary (written base64 with the b64 flag).
    """

def entry_metadata(data: Any) -> pa.Table:
    """One row per entry of a binary (or large_binary) Arrow array: every
    MessageMetadata field (null when absent), the broker entry metadata, the
    stored checksum and whether it is valid, ``is_batch``, ``num_messages``,
    ``entry_timestamp`` (broker timestamp, else publish time) and ``error``.

    Reads only prefixes and metadata; payloads are checksummed, never decompressed.
    """

# ----------------------------------------------------------------- tiered-storage offload objects
# Object bytes are passed as a one-element binary/large_binary Arrow array (zero-copy from a
# pyarrow Buffer); pulsar_entries.offload wraps bytes-like objects that way.

class OffloadBlockDict(TypedDict):
    ledger_id: Optional[int]
    first_entry_id: int
    last_entry_id: Optional[int]
    part_id: int
    offset: int
    length: int

class OffloadNameDict(TypedDict):
    uuid: str
    ledger_id: Optional[int]
    role: str  # "data" or "index"

def read_offload_object(data: Any, *, index: Optional[Any] = None, ledger_id: Optional[int] = None) -> pa.Table:
    """Every entry of a whole data object (columns ledger_id, entry_id, data, error); with the
    index, entries it promises but the data lacks are reported. An unreadable index is reported
    in one error row and the headers are read alone."""

def read_offload_blocks(
    data: Any,
    base_offset: int,
    *,
    index: Optional[Any] = None,
    ledger_id: Optional[int] = None,
    ranges: Optional[Sequence[tuple[int, int, int]]] = None,
) -> pa.Table:
    """Whole blocks starting at ``base_offset`` of the data object; ``ranges`` =
    ``(ledger_id, first_entry_id, last_entry_id)`` to keep and check. Raises OffloadFormatError
    for an unreadable index."""

def parse_offload_index(index: Any, *, ledger_id: Optional[int] = None) -> dict[str, Any]:
    """An index object's header fields and, per ledger, its metadata and blocks."""

def offload_blocks(index: Any, *, ledger_id: Optional[int] = None) -> list[OffloadBlockDict]:
    """Every block of an index, in data-object order."""

def parse_offload_name(name: str) -> Optional[OffloadNameDict]:
    """Parses ``<uuid>-ledger-<id>[-index]`` or ``<uuid>[-index]``; None for other names."""

def write_offload_ledger(
    entries: Any,
    data_path: str,
    index_path: str,
    *,
    ledger_id: Optional[int],
    block_size: int,
    ctime: int,
    managed_ledger_name: str,
    ensemble: Optional[Sequence[str]] = None,
    write_quorum: Optional[int] = None,
    ack_quorum: Optional[int] = None,
) -> list[OffloadBlockDict]:
    """Writes a ledger-based data object and its v1 index (local paths)."""

def write_offload_streaming(
    entries: Any,
    data_path: str,
    index_path: str,
    *,
    block_size: int,
    timestamp: int,
    ledger_id: Optional[int] = None,
) -> list[OffloadBlockDict]:
    """Writes a streaming (PIP-76) data object and its v2 index (local paths)."""
