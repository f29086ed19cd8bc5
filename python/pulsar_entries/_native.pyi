"""Type stubs for the Rust extension module."""

import datetime
from collections.abc import Iterable
from typing import Any, Mapping, Optional, Protocol, Sequence, Tuple, TypedDict, Union

import pyarrow as pa

Millis = Union[int, datetime.datetime]

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

class DecodedMessageDict(TypedDict):
    """A message as the ``EntryContext`` helpers return it."""

    batch_index: Optional[int]
    value: Optional[bytes]
    key: Optional[str]
    key_b64_encoded: bool
    ordering_key: Optional[bytes]
    properties: dict[str, Optional[str]]
    event_time: Optional[int]
    sequence_id: Optional[int]
    compacted_out: bool

class OutputMessageDict(TypedDict, total=False):
    """A message a user processor returns; every key is optional."""

    value: Union[bytes, str, None]
    key: Union[str, bytes, None]
    key_b64_encoded: bool
    ordering_key: Optional[bytes]
    properties: Optional[Mapping[str, Optional[str]]]
    headers: Optional[Sequence[Tuple[str, Optional[bytes]]]]
    event_time: Optional[Millis]
    timestamp_type: Optional[str]
    sequence_id: Optional[int]
    batch_index: Optional[int]
    offset: Optional[int]
    compacted_out: bool

class KafkaRecordDict(TypedDict, total=False):
    key: Union[bytes, str, None]
    value: Union[bytes, str, None]
    headers: Union[Sequence[Tuple[str, Optional[bytes]]], Mapping[str, Optional[bytes]], None]
    timestamp: Optional[Millis]
    offset_delta: Optional[int]

class EntryContext:
    """What a user payload processor learns about its entry (PIP-96's context)."""

    @property
    def ledger_id(self) -> int: ...
    @property
    def entry_id(self) -> int: ...
    @property
    def partition(self) -> int: ...
    @property
    def broker_timestamp(self) -> Optional[int]: ...
    @property
    def broker_index(self) -> Optional[int]: ...
    @property
    def base_offset(self) -> Optional[int]:
        """``broker_index - (num_messages - 1)``: the offset of the entry's first message."""
    @property
    def metadata(self) -> dict[str, Any]:
        """MessageMetadata, present fields only (as ``parse_entry``)."""
    @property
    def properties(self) -> dict[str, str]:
        """Entry-level properties."""
    def get_property(self, key: str) -> Optional[str]: ...
    @property
    def is_batch(self) -> bool: ...
    @property
    def num_messages(self) -> int: ...
    @property
    def publish_time(self) -> int: ...
    @property
    def producer_name(self) -> str: ...
    def single_message(self, payload: bytes) -> DecodedMessageDict:
        """The payload as one message with the entry's key, properties and times."""
    def pulsar_messages(self, payload: bytes) -> list[DecodedMessageDict]:
        """Pulsar's own split of a payload (batch records, or one message)."""
    def message_at(self, index: int, record: bytes) -> DecodedMessageDict:
        """A message from ``[u32 size][SingleMessageMetadata][value]`` bytes."""

MessageDict = OutputMessageDict

class PayloadProcessorLike(Protocol):
    def process(self, payload: bytes, context: EntryContext) -> Iterable[OutputMessageDict]: ...

class BuiltinProcessor:
    """A processor implemented in Rust (``KAFKA``, ``PULSAR``). Picklable."""

    def __init__(self, name: str) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def entry_property(self) -> Optional[Tuple[str, Optional[str]]]: ...

ProcessorLike = Union[BuiltinProcessor, str, PayloadProcessorLike]

class Position:
    """Where a seek lands."""

    @property
    def row(self) -> int:
        """Row in the entry table (its length when past the last entry)."""
    @property
    def ledger_id(self) -> int: ...
    @property
    def entry_id(self) -> int:
        """Past the end: the last entry id + 1, as Pulsar's ``Position.getNext()``."""
    @property
    def batch_index(self) -> Optional[int]:
        """Offset seeks: the message's index in the entry holding the offset."""
    @property
    def entries_read(self) -> int:
        """Entries the binary search read."""

def decode(
    entries: Any,
    *,
    verify_checksum: bool = True,
    keep_markers: bool = False,
    max_uncompressed_size: int = ...,
    processors: Optional[Sequence[ProcessorLike]] = None,
) -> pa.Table:
    """Decodes entries into one row per message.

    ``entries`` is a pyarrow Table or RecordBatch, or any object exporting an
    Arrow stream (``__arrow_c_stream__``), with columns ``ledger_id`` (int64),
    ``entry_id`` (int64), ``data`` (binary or large_binary) and optionally
    ``partition`` (int32). An entry that cannot be decoded yields exactly one
    row whose ``error`` says what failed and at which byte offset.

    ``processors`` (default ``[KAFKA, PULSAR]``) are tried in order per entry;
    see ``pulsar_entries.processors``.
    """

def stamp(
    entries: Any,
    *,
    start_index: int = -1,
    timestamps: Union[None, Millis, Sequence[Millis], pa.Array] = None,
    index: bool = True,
    timestamp: bool = True,
) -> pa.Table:
    """Adds or replaces every entry's broker entry metadata (``0e 02`` prefix),
    in table order, as Pulsar's interceptors do. ``index`` is the offset of the
    entry's last message, counting from ``start_index``; ``broker_timestamp``
    comes from ``timestamps`` (one value, or one per entry) or the clock.
    The checksummed part of each entry is kept byte for byte.
    """

def find_position_by_time(entries: Any, time: Millis) -> Position:
    """Pulsar's seek by timestamp: the entry after the newest entry whose
    broker timestamp (else publish time) is before ``time``; the first entry
    when none is. A binary search reading O(log n) entries' metadata."""

def find_position_by_offset(entries: Any, offset: int) -> Position:
    """KoP's seek by continuous offset: a binary search on the broker index."""

def encode_kafka_batch(
    records: Sequence[KafkaRecordDict],
    *,
    base_offset: int = 0,
    compression: str = "none",
    base_timestamp: Optional[Millis] = None,
    log_append_time: bool = False,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
) -> bytes: ...
def encode_kafka_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int = 0,
    base_offset: int = 0,
    timestamp: Optional[Millis] = None,
    coordinator_epoch: int = 0,
) -> bytes: ...
def encode_kop_entry(batches: Sequence[bytes], *, publish_time: Optional[Millis] = None) -> bytes: ...

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
