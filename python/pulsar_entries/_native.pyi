"""Type stubs for the Rust extension module."""

from typing import Any, Mapping, Optional, Sequence, TypedDict, Union

import pyarrow as pa

__version__: str
DEFAULT_MAX_UNCOMPRESSED_SIZE: int

class EntryFormatError(ValueError):
    """An entry's bytes are not a valid Pulsar stored entry."""

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
