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

# ---------------------------------------------------------------- compaction

class Compactor:
    """Two-pass compactor: ``observe`` every batch of entries in topic order,
    then ``write`` the same batches in the same order."""

    def __init__(
        self,
        *,
        order: str = "publish",
        retain_null_key: bool = False,
        strategy: Any = None,
        verify_checksum: bool = True,
        max_uncompressed_size: int = ...,
    ) -> None: ...
    def observe(self, entries: Any) -> None:
        """Phase one over entries (a table, record batch or Arrow stream)."""
    def write(self, entries: Any) -> pa.Table:
        """Phase two: the compacted entries ``(ledger_id, entry_id[, partition], data, error)``."""
    def stats(self) -> dict[str, int]:
        """Counts so far: entries and messages read and written, markers,
        tombstones, dropped key-less messages, unreadable entries, keys (plain
        compaction) or accepted/rejected/merged updates (strategic)."""

class NativeStrategy:
    """A built-in compaction strategy implemented in Rust."""

    @staticmethod
    def latest_wins() -> NativeStrategy: ...
    @staticmethod
    def first_wins() -> NativeStrategy: ...
    @staticmethod
    def versioned_state(
        transitions: Optional[Mapping[str, Sequence[str]]] = None,
        initial_state: str = "Init",
        allow_version_gaps: bool = True,
        first_version: Optional[int] = None,
    ) -> NativeStrategy: ...
    def should_keep_left(self, prev: Optional[bytes], cur: Optional[bytes]) -> bool: ...

class SurvivorFolder:
    """Folds candidate rows sorted by ``(partition, key, ledger_id, entry_id,
    batch_index)`` into survivor rows ``(partition, ledger_id, entry_id,
    batch_index)``, one key at a time; rows with a null key pass through."""

    def __init__(self, *, order: str = "publish") -> None: ...
    def push(self, candidates: Any) -> pa.Table:
        """Survivors of the keys completed by these rows (the last key stays open)."""
    def finish(self) -> pa.Table:
        """Survivors of the last key."""

def compaction_candidates(
    entries: Any,
    *,
    retain_null_key: bool = False,
    reduce_for_publish_order: bool = False,
    verify_checksum: bool = True,
    max_uncompressed_size: int = ...,
) -> pa.Table:
    """Phase-one candidate rows: ``partition, key, ledger_id, entry_id,
    batch_index, tombstone, event_time, batched, uuid, chunk_id, num_chunks,
    error``. A null ``key`` marks a survivor by itself (a retained key-less
    message, or an unreadable entry kept whole, with ``error``). With
    ``reduce_for_publish_order``, each key keeps only its last non-chunk
    candidate of the batch (and its chunks): exact for publishing order only."""

def rebuild_entries(
    entries: Any,
    *,
    retain_null_key: bool = False,
    verify_checksum: bool = True,
    max_uncompressed_size: int = ...,
) -> pa.Table:
    """Phase two for entries with a ``retained`` list column of batch indexes
    (−1 for a non-batched entry): the compacted entries."""

def to_ledger_records(entries: Any) -> pa.Table:
    """``(ledger_id, entry_id, record)``: each entry as ``[u32][MessageIdData][u32][entry]``."""

def from_ledger_records(records: Any) -> pa.Table:
    """``(ledger_id, entry_id, partition, data, error)`` from a ``record`` column."""

def compacted_last_position(
    entries: Any, *, max_uncompressed_size: int = ...
) -> Optional[tuple[int, int, int, int, str]]:
    """``(ledger_id, entry_id, batch_index, publish_time, source)`` of the last
    message of compacted entries (PIP-429 rules), or None without entries."""

def topic_last_position(entries: Any) -> Optional[tuple[int, int, int, int]]:
    """The managed-ledger answer for the topic's last dispatchable entry, or None."""

def max_entry_position(entries: Any) -> Optional[tuple[int, int]]:
    """The greatest ``(ledger_id, entry_id)`` among entries, or None."""

def find_by_publish_time(entries: Any, publish_time: int) -> Optional[tuple[int, int]]:
    """Binary search (table order) for the first entry with ``publish_time`` ≥ the given one."""

def keyed_messages(entries: Any, *, verify_checksum: bool = True, max_uncompressed_size: int = ...) -> pa.Table:
    """Keyed messages with values in topic order, chunked messages reassembled:
    ``partition, ledger_id, entry_id, batch_index, key, value, publish_time,
    event_time, error``."""
