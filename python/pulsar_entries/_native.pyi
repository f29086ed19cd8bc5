"""Type stubs for the Rust extension module.

One job, so one file: it declares every name `pulsar_entries._native` exports, checked against the
built module by stubtest (scripts/lint); splitting it would only scatter that one declaration.
"""

import datetime
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypedDict, final

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]  # pyarrow ships no stubs

# The TypedDicts are runtime classes of pulsar_entries._dicts (importable by processor authors).
from ._dicts import DecodedMessageDict as DecodedMessageDict
from ._dicts import KafkaRecordDict as KafkaRecordDict
from ._dicts import MessageDict as MessageDict
from ._dicts import OutputMessageDict as OutputMessageDict

Millis: TypeAlias = int | datetime.datetime

__all__ = [
    "DEFAULT_MANAGED_LEDGER",
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "DEFAULT_OFFLOAD_BLOCK_SIZE",
    "DEFAULT_STREAMING_BLOCK_SIZE",
    "BookieClientOptions",
    "BookieReader",
    "CompactionOptions",
    "Compactor",
    "CryptoKeys",
    "DataError",
    "DecodeOptions",
    "EntryFormatError",
    "InputSchemaError",
    "LayoutRecord",
    "LedgerRecord",
    "NativeStrategy",
    "OffloadFormatError",
    "OffloadOptions",
    "OptionsError",
    "OrderError",
    "PartitionReassembler",
    "PartitionRecord",
    "PulsarEntriesError",
    "ReassemblyOptions",
    "StorageError",
    "StrategicFolder",
    "StrategicPartitionPass",
    "SurvivorFolder",
    "__version__",
    "aborted_transactions",
    "builtin_processor",
    "compacted_last_position",
    "compaction_candidates",
    "decode",
    "deserialize_message_id",
    "encode_chunked",
    "encode_entry",
    "encode_kafka_batch",
    "encode_kafka_control_batch",
    "encode_kop_entry",
    "entry_metadata",
    "find_by_publish_time",
    "find_position_by_offset",
    "find_position_by_time",
    "finish_leftovers",
    "from_ledger_records",
    "keyed_messages",
    "last_batch_indexes",
    "ledger_metadata",
    "ledger_node_from_text",
    "max_entry_position",
    "message_at",
    "offload_blocks",
    "parse_entry",
    "parse_metadata",
    "parse_offload_index",
    "parse_offload_name",
    "partition_name",
    "pulsar_messages",
    "read_bookie_dirs",
    "read_offload_blocks",
    "read_offload_object",
    "reassemble_chunks",
    "reassemble_partition",
    "rebuild_entries",
    "resolve_ledgers",
    "resolve_topic",
    "schema_entry",
    "schema_locations",
    "serialize_message_id",
    "set_broker_entry_metadata",
    "single_message",
    "stamp",
    "strategic_rebuild",
    "strip_rocksdb_header",
    "to_ledger_records",
    "topic_last_position",
    "topic_paths",
    "typed_decode",
    "with_message_ids",
    "write_offload_ledger",
    "write_offload_streaming",
]
__version__: str
DEFAULT_MAX_UNCOMPRESSED_SIZE: int
#: BookieClientOptions' defaults (a request's timeout, connecting, requests in flight, the largest frame).
#: OffloadOptions' defaults: a ledger-based object's largest block (64 MiB), a streaming object's
#: smallest (5 MiB), the managed ledger a v1 index names ("public/default/persistent/pulsar-entries").
DEFAULT_OFFLOAD_BLOCK_SIZE: int
DEFAULT_STREAMING_BLOCK_SIZE: int
DEFAULT_MANAGED_LEDGER: str

# Every function raises from this hierarchy (a Python type mismatch on an
# argument stays TypeError; a Python callback's exception propagates as is).

class PulsarEntriesError(Exception):
    """Any error pulsar-entries raises."""

class InputSchemaError(PulsarEntriesError, ValueError):
    """The input table lacks a column, or a column or argument has the wrong shape."""

class OptionsError(PulsarEntriesError, ValueError):
    """An option's value is out of range or contradicts another option."""

class OrderError(PulsarEntriesError, ValueError):
    """Input rows are not in the order the operation needs."""

class DataError(PulsarEntriesError, ValueError):
    """Stored bytes are malformed: framing, checksum, protobuf, codec, batch."""

class EntryFormatError(DataError):
    """An entry's bytes are not a valid Pulsar stored entry."""

class OffloadFormatError(DataError):
    """An offload object's bytes are not a valid Pulsar tiered-storage object."""

class StorageError(PulsarEntriesError, OSError):
    """Reading or writing storage failed: a file, an object, a connection."""

#: A processor as ``pulsar_entries.processors.native_processors`` passes it: a built-in's name,
#: or a Python processor's ``(name, entry_property, processor)``.
ProcessorSpec: TypeAlias = str | tuple[str, tuple[str, str | None] | None, Any]

def builtin_processor(name: str) -> tuple[str, str | None] | None:
    """The entry property the built-in processor ``name`` selects on (None: every entry);
    OptionsError for an unknown name."""

# ---------------------------------------------------------------- options
# Each class holds one options group of the core; building one checks it (an OptionsError names the
# option). A keyword left ``None`` takes the core's default, which the docstring states (checked
# against the core by scripts/option_defaults.py); where ``None`` is itself a value, the keyword's
# default is the core's. They compare by value and pickle (Spark ships them to executors).

@final
class DecodeOptions:
    """What ``decode`` is asked to do.

    - ``verify_checksum`` (default True): an entry whose CRC32C does not match is an error row;
    - ``keep_markers`` (default False): keep transaction and replication markers as rows;
    - ``max_uncompressed_size`` (default 268435456): the largest decompressed payload (at most 2**30);
    - ``utf8_errors`` (default 'replace'): a text field that is not UTF-8 is replaced (U+FFFD), or
      ``"error"``: the entry is one error row naming the field;
    - ``max_output_bytes`` (default None): the decompressed bytes one call may produce (None: no budget).
    """

    def __new__(
        cls,
        *,
        verify_checksum: bool | None = None,
        keep_markers: bool | None = None,
        max_uncompressed_size: int | None = None,
        utf8_errors: str | None = None,
        max_output_bytes: int | None = None,
    ) -> DecodeOptions: ...
    @property
    def verify_checksum(self) -> bool: ...
    @property
    def keep_markers(self) -> bool: ...
    @property
    def max_uncompressed_size(self) -> int: ...
    @property
    def utf8_errors(self) -> str: ...
    @property
    def max_output_bytes(self) -> int | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...

@final
class ReassemblyOptions:
    """The limits of chunk reassembly.

    - ``max_pending`` (default 100): chunked messages pending at once; past it the oldest is
      ``evicted`` (None: unlimited);
    - ``expire_after_ms`` (default 60000): stream time after which a pending message is
      ``expired`` (None: never);
    - ``max_message_size`` (default 268435456): the largest message (at most 2**30).
    """

    def __new__(
        cls,
        *,
        max_pending: int | None = ...,
        expire_after_ms: int | None = ...,
        max_message_size: int | None = None,
    ) -> ReassemblyOptions: ...
    @property
    def max_pending(self) -> int | None: ...
    @property
    def expire_after_ms(self) -> int | None: ...
    @property
    def max_message_size(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...

@final
class CompactionOptions:
    """How a topic is compacted.

    - ``order`` (default 'publish'): each key keeps its last published value, or ``"event_time"``
      its newest event time (PIP-352);
    - ``retain_null_key`` (default False): keep messages without a key;
    - ``verify_checksum`` (default True): an entry whose CRC32C does not match is kept whole, unread;
    - ``max_uncompressed_size`` (default 268435456): the largest decompressed payload.
    """

    def __new__(
        cls,
        *,
        order: str | None = None,
        retain_null_key: bool | None = None,
        verify_checksum: bool | None = None,
        max_uncompressed_size: int | None = None,
    ) -> CompactionOptions: ...
    @property
    def order(self) -> str: ...
    @property
    def retain_null_key(self) -> bool: ...
    @property
    def verify_checksum(self) -> bool: ...
    @property
    def max_uncompressed_size(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...

def decode(
    entries: Any,
    *,
    processors: Sequence[ProcessorSpec] | None = None,
    options: DecodeOptions | None = None,
    columns: Sequence[str] | None = None,
    crypto_keys: CryptoKeys | None = None,
) -> pa.Table:
    """``pulsar_entries.decode`` with its options as one object and the processors checked (an empty
    list is an OptionsError)."""

@final
class CryptoKeys:
    """The private keys end-to-end encrypted messages are decrypted with, by key name (``"*"``: any
    name), each PEM bytes: RSA (PKCS#1, PKCS#8) or EC (SEC1, PKCS#8; P-256, P-384, P-521, secp256k1). A
    key that is not a private key is an OptionsError naming it, never showing it. The repr shows the
    names only."""

    def __new__(cls, keys: Mapping[str, bytes | bytearray | memoryview]) -> CryptoKeys: ...
    @property
    def names(self) -> list[str]: ...

def stamp(
    entries: Any,
    *,
    start_index: int = ...,
    timestamps: int | Sequence[int] | None = None,
    index: bool = True,
    timestamp: bool = True,
) -> pa.Table:
    """``pulsar_entries.stamp`` with the times in milliseconds (none: the clock)."""

def find_position_by_time(entries: Any, time: int) -> tuple[int, int, int, int | None, int]:
    """``pulsar_entries.find_position_by_time``: a ``Position``'s fields."""

def find_position_by_offset(entries: Any, offset: int) -> tuple[int, int, int, int | None, int]:
    """``pulsar_entries.find_position_by_offset``: a ``Position``'s fields."""

def encode_kafka_batch(
    records: Sequence[KafkaRecordDict],
    *,
    base_offset: int | None = None,
    compression: str | None = None,
    base_timestamp: Millis | None = None,
    log_append_time: bool | None = None,
    transactional: bool | None = None,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    base_sequence: int | None = None,
    partition_leader_epoch: int | None = None,
) -> bytes: ...
def encode_kafka_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int | None = None,
    coordinator_epoch: int = 0,
) -> bytes: ...
def encode_kop_entry(batches: Sequence[bytes], *, publish_time: int | None = None) -> bytes: ...
def parse_metadata(metadata: bytes) -> dict[str, Any]:
    """MessageMetadata bytes as a dict of their present fields (``EntryContext.metadata``)."""

def single_message(metadata: bytes, payload: bytes) -> DecodedMessageDict:
    """``EntryContext.single_message``: the payload as one message."""

def pulsar_messages(metadata: bytes, payload: bytes) -> list[DecodedMessageDict]:
    """``EntryContext.pulsar_messages``: Pulsar's own split of a payload."""

def message_at(metadata: bytes, index: int, record: bytes) -> DecodedMessageDict:
    """``EntryContext.message_at``: a message from one batch record's bytes."""

def parse_entry(data: bytes) -> dict[str, Any]:
    """All metadata of one entry: ``broker_entry_metadata``, ``checksum``,
    ``metadata`` (present fields only), ``payload`` and sizes.

    Raises EntryFormatError on bad input.
    """

def encode_entry(
    messages: Sequence[MessageDict],
    *,
    batch: bool | None = None,
    compression: str | None = None,
    producer_name: str | None = None,
    sequence_id: int | None = None,
    publish_time: int | None = None,
    broker_timestamp: int | None = None,
    broker_index: int | None = None,
    checksum: bool | None = None,
    properties: Mapping[str, str] | None = None,
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

def encode_chunked(
    message: MessageDict,
    *,
    chunk_size: int,
    compression: str | None = None,
    producer_name: str | None = None,
    sequence_id: int | None = None,
    publish_time: int | None = None,
    broker_timestamp: int | None = None,
    broker_index: int | None = None,
    checksum: bool | None = None,
    properties: Mapping[str, str] | None = None,
) -> list[bytes]:
    """Encodes one message as the chunk entries Pulsar's Java producer stores
    with chunking enabled.

    The whole payload is compressed once and the compressed bytes are cut
    into ``chunk_size``-byte chunks; each chunk is its own entry with the full
    metadata plus ``uuid`` ("<producer_name>-<sequence_id>"),
    ``num_chunks_from_msg``, ``total_chunk_msg_size`` (compressed length) and
    ``chunk_id``. A payload that fits one chunk gives one ordinary entry. With
    ``broker_index``, chunk ``k`` gets index ``broker_index + k``.
    """

def set_broker_entry_metadata(
    entry: bytes,
    *,
    broker_timestamp: int | None = None,
    broker_index: int | None = None,
) -> bytes:
    """Adds or replaces the entry's ``0e 02`` broker-entry-metadata prefix, as
    the broker's interceptors write it; the checksummed part is unchanged.
    Raises EntryFormatError when an existing prefix is malformed."""

def reassemble_chunks(
    messages: Any,
    *,
    options: ReassemblyOptions | None = None,
) -> pa.Table:
    """Rebuilds chunked messages from decoded rows (the output of ``decode``,
    in topic order).

    Non-chunk rows pass through unchanged. Each chunked message becomes one
    row with the metadata of its first chunk, the position of its last chunk
    (``ledger_id``, ``entry_id``), ``first_chunk_ledger_id`` /
    ``first_chunk_entry_id``, ``status`` and the chunks it holds
    (``chunk_ledger_ids``, ``chunk_entry_ids``). ``status`` is ``complete``,
    ``incomplete``, ``expired``, ``evicted`` or ``duplicate`` (one row per
    ignored duplicate chunk); it is null on non-chunk rows. Every row that is
    not a usable message carries an ``error``.
    """

def reassemble_partition(
    messages: Any,
    *,
    seeds: Mapping[int, int] | None = None,
    options: ReassemblyOptions | None = None,
) -> tuple[pa.Table, pa.Table]:
    """The partition pass of a distributed reassembly: ``(done, leftovers)``.
    See ``pulsar_entries.chunks``."""

@final
class PartitionReassembler:
    """The partition pass, streaming: feed a partition's decoded batches in
    topic order; memory is the pending messages' chunks, not the partition."""

    def __new__(
        cls,
        schema: pa.Schema,
        *,
        seeds: Mapping[int, int] | None = None,
        options: ReassemblyOptions | None = None,
    ) -> PartitionReassembler: ...
    def push(self, batch: Any) -> tuple[pa.Table, pa.Table]:
        """``(done, leftovers)`` decided while reading ``batch``."""
    def finish(self) -> tuple[pa.Table, pa.Table]:
        """``(done, leftovers)`` at the end of the partition."""

def finish_leftovers(
    leftovers: Any,
    *,
    final_watermarks: Mapping[int, int] | None = None,
    options: ReassemblyOptions | None = None,
) -> pa.Table:
    """Decides the messages handed on by ``reassemble_partition``. See
    ``pulsar_entries.chunks``."""

def with_message_ids(table: Any) -> pa.Table:
    """The table with ``message_id`` (Java's serialized bytes) and
    ``message_id_str`` (Java's text form) appended. Rows that are not messages
    (non-complete chunk outcomes) get nulls."""

def serialize_message_id(parts: tuple[int, int, int, int, int | None, tuple[int, int, int] | None]) -> bytes:
    """Java's ``MessageId.toByteArray()`` of ``(ledger_id, entry_id, partition, batch_index,
    batch_size, first chunk's (ledger_id, entry_id, partition) or None)``."""

def deserialize_message_id(data: bytes) -> tuple[int, int, int, int, int | None, tuple[int, int, int] | None]:
    """The parts of Java's ``MessageId.fromByteArray()`` (a batch index wins over the first chunk).
    Raises EntryFormatError on bad bytes."""

# ---------------------------------------------------------------- compaction

@final
class Compactor:
    """Two-pass compactor: ``observe`` every batch of entries in topic order,
    then ``write`` the same batches in the same order."""

    def __new__(
        cls,
        *,
        strategy: Any = None,
        options: CompactionOptions | None = None,
        aborted_transactions: list[tuple[int, int]] | None = None,
    ) -> Compactor: ...
    def observe(self, entries: Any) -> None:
        """Phase one over entries (a table, record batch or Arrow stream)."""
    def write(self, entries: Any) -> pa.Table:
        """Phase two: the compacted entries ``(ledger_id, entry_id[, partition], data, error)``."""
    def stats(self) -> dict[str, int]:
        """Counts so far: entries and messages read and written, markers,
        tombstones, dropped key-less messages, unreadable entries, keys (plain
        compaction) or accepted/rejected/merged updates (strategic)."""

@final
class NativeStrategy:
    """A built-in compaction strategy implemented in Rust: ``kind`` is ``"latest_wins"``,
    ``"first_wins"`` or ``"versioned_state"`` (the other arguments are its). Not picklable:
    ``pulsar_entries.strategies`` pickles its arguments and rebuilds it."""

    def __new__(
        cls,
        kind: str,
        transitions: Mapping[str, Sequence[str]] | None = None,
        initial_state: str = "Init",
        allow_version_gaps: bool = True,
        first_version: int | None = None,
    ) -> NativeStrategy: ...
    def should_keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        """The strategy's decision on raw values (``None`` is a tombstone)."""

@final
class SurvivorFolder:
    """Folds candidate rows sorted by ``(partition, key, ledger_id, entry_id,
    batch_index)`` into survivor rows ``(partition, ledger_id, entry_id,
    batch_index)``, one key at a time; rows with a null key pass through."""

    def __new__(cls, *, order: str | None = None) -> SurvivorFolder: ...
    def push(self, candidates: Any) -> pa.Table:
        """Survivors of the keys completed by these rows (the last key stays open)."""
    def finish(self) -> pa.Table:
        """Survivors of the last key."""

@final
class StrategicPartitionPass:
    """Strategic compaction, phase one over one Spark partition's entries in
    topic order (each partition a contiguous range of its topic partitions).

    Rows ``kind, partition, key, uuid, ledger_id, entry_id, batch_index,
    value, chunks, note``: ``kind`` 2 is a complete keyed message (``value``
    null for a tombstone; ``chunks`` packs a chunked message's chunk positions
    as big-endian int64 pairs), 3 a plan for an entry (a slot to keep, or the
    whole entry with ``note``), 1 a chunk the partition cannot finish (its
    entry bytes in ``value``), 0 a restart marker (a message's first chunk 0
    in the partition)."""

    def __new__(
        cls,
        *,
        options: CompactionOptions | None = None,
        aborted_transactions: list[tuple[int, int]] | None = None,
    ) -> StrategicPartitionPass:
        """Raises ``ValueError`` for ``order="event_time"``, as the in-process strategic compactor.
        Messages of ``aborted_transactions`` (``(most, least)`` bits) are skipped."""
    def push(self, entries: Any) -> pa.Table:
        """Rows for these entries (the next ones of the partition, in topic order)."""
    def finish(self) -> pa.Table:
        """The chunks of messages still assembling at the partition's end."""

@final
class StrategicFolder:
    """Folds the partition pass's rows, shuffled by ``(partition, key)`` and
    sorted by ``(partition, key, ledger_id, entry_id, batch_index, kind)``,
    with ``strategy`` (what :func:`pulsar_entries.strategies.native_strategy`
    returns), one key at a time: leftover chunks are assembled, every complete
    message folded as in-process, and each key's survivors given as plan rows
    (``value`` a merged value or null). Plan rows pass through."""

    def __new__(
        cls,
        strategy: Any,
        *,
        options: CompactionOptions | None = None,
    ) -> StrategicFolder: ...
    def push(self, rows: Any) -> pa.Table:
        """Plans of the keys completed by these rows (the last key stays open).
        A strategy's exception is raised as is."""
    def finish(self) -> pa.Table:
        """Plans of the last key."""

def strategic_rebuild(entries: Any, *, options: CompactionOptions | None = None) -> pa.Table:
    """Strategic phase two: entries ``(ledger_id, entry_id, partition, data)``
    with ``note`` (keep the entry whole, with this error text) and ``slots``
    (a list of ``(batch_index, value)`` structs, ``value`` a merged value or
    null) → compacted entries ``(ledger_id, entry_id, partition, data, error)``."""

def compaction_candidates(
    entries: Any,
    *,
    options: CompactionOptions | None = None,
    reduce_for_publish_order: bool = False,
    aborted_transactions: list[tuple[int, int]] | None = None,
) -> pa.Table:
    """Phase-one candidate rows: ``partition, key, ledger_id, entry_id,
    batch_index, tombstone, event_time, batched, uuid, chunk_id, num_chunks,
    error``. A null ``key`` marks a survivor by itself (a retained key-less
    message, or an unreadable entry kept whole, with ``error``). With
    ``reduce_for_publish_order``, each key keeps only its last non-chunk
    candidate of the batch (and its chunks): exact for publishing order only.
    Messages of ``aborted_transactions`` (``(most, least)`` bits) give none."""

def rebuild_entries(entries: Any, *, options: CompactionOptions | None = None) -> pa.Table:
    """Phase two for entries with a ``retained`` list column of batch indexes
    (−1 for a non-batched entry): the compacted entries."""

def to_ledger_records(entries: Any) -> pa.Table:
    """``(ledger_id, entry_id, record)``: each entry as ``[u32][MessageIdData][u32][entry]``."""

def aborted_transactions(entries: Any) -> list[tuple[int, int]]:
    """The transactions aborted by ``TXN_ABORT`` markers among the entries, as ``(most, least)`` bits."""

def from_ledger_records(records: Any) -> pa.Table:
    """``(ledger_id, entry_id, partition, data, error)`` from a ``record`` column."""

def compacted_last_position(
    entries: Any, *, max_uncompressed_size: int | None = None
) -> tuple[int, int, int, int, str] | None:
    """``(ledger_id, entry_id, batch_index, publish_time, source)`` of the last
    message of compacted entries (PIP-429 rules), or None without entries."""

def last_batch_indexes(data: Any, *, max_uncompressed_size: int | None = None) -> pa.Table:
    """Per entry of a binary array: ``last_batch_index`` (int32, −1 when not
    batched), ``source`` and ``error`` by PIP-429's rules; a null index with an
    ``error`` when it cannot be found."""

def topic_last_position(entries: Any) -> tuple[int, int, int, int] | None:
    """The managed-ledger answer for the topic's last dispatchable entry, or None."""

def max_entry_position(entries: Any) -> tuple[int, int] | None:
    """The greatest ``(ledger_id, entry_id)`` among entries, or None."""

def find_by_publish_time(entries: Any, publish_time: int) -> tuple[int, int] | None:
    """Binary search (table order) for the first entry with ``publish_time`` ≥ the given one."""

def keyed_messages(entries: Any, *, options: CompactionOptions | None = None) -> pa.Table:
    """Keyed messages with values in topic order, chunked messages reassembled:
    ``partition, ledger_id, entry_id, batch_index, key, value, publish_time,
    event_time, error``."""

# ----------------------------------------------------------------- tiered-storage offload objects
# Object bytes are passed as a one-element binary/large_binary Arrow array (zero-copy from a
# pyarrow Buffer); pulsar_entries.offload wraps bytes-like objects that way.

class OffloadBlockDict(TypedDict):
    ledger_id: int | None
    first_entry_id: int
    last_entry_id: int | None
    part_id: int
    offset: int
    length: int

class OffloadNameDict(TypedDict):
    uuid: str
    ledger_id: int | None
    role: str  # "data" or "index"

def read_offload_object(data: Any, *, index: Any | None = None, ledger_id: int | None = None) -> pa.Table:
    """Every entry of a whole data object (columns ledger_id, entry_id, data, error); with the
    index, entries it promises but the data lacks are reported. An unreadable index is reported
    in one error row and the headers are read alone."""

def read_offload_blocks(
    data: Any,
    base_offset: int,
    *,
    index: Any | None = None,
    ledger_id: int | None = None,
    ranges: Sequence[tuple[int, int, int]] | None = None,
) -> pa.Table:
    """Whole blocks starting at ``base_offset`` of the data object; ``ranges`` =
    ``(ledger_id, first_entry_id, last_entry_id)`` to keep and check. Raises OffloadFormatError
    for an unreadable index."""

class _OffloadIndexLedgerDict(TypedDict):
    ledger_id: int | None
    last_entry_id: int | None
    length: int | None
    #: ``kind`` "bookkeeper" (a v1 index's ledger metadata: quorum_size, ensemble_size,
    #: ack_quorum_size, length, last_entry_id, state, digest_type, ctime, password, ctoken,
    #: ensembles, custom_metadata) or "ledger_info" (a v2 index's: ledger_id, entries, size,
    #: timestamp, offload_context).
    metadata: dict[str, Any]
    blocks: list[OffloadBlockDict]

class _OffloadIndexDict(TypedDict):
    version: int
    index_block_length: int
    data_object_length: int
    data_header_length: int
    ledgers: list[_OffloadIndexLedgerDict]

def parse_offload_index(index: Any, *, ledger_id: int | None = None) -> _OffloadIndexDict:
    """An index object's header fields and, per ledger, its metadata and blocks."""

def offload_blocks(index: Any, *, ledger_id: int | None = None) -> list[OffloadBlockDict]:
    """Every block of an index, in data-object order."""

def parse_offload_name(name: str) -> OffloadNameDict | None:
    """Parses ``<uuid>-ledger-<id>[-index]`` or ``<uuid>[-index]``; None for other names."""

@final
class OffloadOptions:
    """How entries are written as offload objects; building one checks it (an OptionsError).

    - ``block_size`` (default None): the block size; None picks 64 MiB (``DEFAULT_BLOCK_SIZE``) for a
      ledger-based object, whose largest block it is, and 5 MiB (``DEFAULT_STREAMING_BLOCK_SIZE``) for
      a streaming object, whose smallest block it is; at most 2**31 - 1;
    - ``managed_ledger_name`` (default 'public/default/persistent/pulsar-entries'): the managed
      ledger a v1 index's ledger metadata names;
    - ``ensemble`` (default None): the bookie ids of the ledger's ensemble (None: two made-up bookies);
    - ``write_quorum`` (default None): None is 2, or the ensemble's size up to 2;
    - ``ack_quorum`` (default None): None is 2, or the ensemble's size up to 2.

    ``None`` (each keyword's default) means the core's default."""

    def __new__(
        cls,
        *,
        block_size: int | None = None,
        managed_ledger_name: str | None = None,
        ensemble: Sequence[str] | None = None,
        write_quorum: int | None = None,
        ack_quorum: int | None = None,
    ) -> OffloadOptions: ...
    @property
    def block_size(self) -> int | None: ...
    @property
    def managed_ledger_name(self) -> str: ...
    @property
    def ensemble(self) -> list[str] | None: ...
    @property
    def write_quorum(self) -> int | None: ...
    @property
    def ack_quorum(self) -> int | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...

def write_offload_ledger(
    entries: Any,
    data_path: str,
    index_path: str,
    *,
    ledger_id: int | None,
    ctime: int,
    options: OffloadOptions | None = None,
) -> list[OffloadBlockDict]:
    """Writes a ledger-based data object and its v1 index (local paths)."""

def write_offload_streaming(
    entries: Any,
    data_path: str,
    index_path: str,
    *,
    timestamp: int,
    ledger_id: int | None = None,
    options: OffloadOptions | None = None,
) -> list[OffloadBlockDict]:
    """Writes a streaming (PIP-76) data object and its v2 index (local paths)."""

# ----------------------------------------------------------------- a live cluster (metadata store, bookies)

class _TopicPathsDict(TypedDict):
    topic: str
    base: str
    partition: int | None
    managed_ledger: str
    compaction_cursor: str
    partitioned_metadata: str
    schema: str

class _LedgerInfoDict(TypedDict):
    ledger_id: int
    state: str  # "OPEN", "IN_RECOVERY" or "CLOSED"
    last_entry_id: int
    length: int
    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    digest_type: str
    ensembles: list[tuple[int, list[str]]]
    custom_metadata: dict[str, bytes]

class _OffloadStateDict(TypedDict):
    uid_msb: int
    uid_lsb: int
    bookkeeper_deleted: bool
    driver: str
    driver_properties: dict[str, str]

@final
class LedgerRecord:
    """One ledger of a topic's layout (:class:`pulsar_entries._cluster.layout.Ledger`'s fields)."""

    @property
    def ledger_id(self) -> int: ...
    @property
    def entries(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def metadata(self) -> bytes | None:
        """The ledger node's bytes (``None`` when the BookKeeper copy is gone)."""
    @property
    def info(self) -> _LedgerInfoDict | None:
        """The parsed node, password left out (``None`` with ``metadata``)."""
    @property
    def offload(self) -> _OffloadStateDict | None:
        """Offload state from the managed-ledger info, ``None`` if not offloaded."""

@final
class PartitionRecord:
    """One managed ledger of a topic's layout: a non-partitioned topic (``partition`` -1), or one partition."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def ledgers(self) -> list[LedgerRecord]: ...
    @property
    def compacted(self) -> LedgerRecord | None:
        """The compacted ledger of the ``__compaction`` cursor, if the topic was compacted."""
    @property
    def horizon(self) -> tuple[int, int] | None:
        """The compaction horizon: the last entry compaction read."""

@final
class LayoutRecord:
    """A topic's storage layout, as :func:`resolve_topic` resolves it."""

    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> list[PartitionRecord]: ...
    @property
    def bookies(self) -> dict[str, str]:
        """Bookie id -> ``host:port``, for every bookie the ledgers name."""

def resolve_topic(topic: str, store: Any, *, partitions: Sequence[int] | None = None) -> LayoutRecord:
    """A topic's layout, walked from ``store`` (any object with ``get(path) -> bytes | None`` and
    ``children(path) -> list[str]``) in one call: partitions (``partitions`` only, when given),
    ledgers with their nodes and offload state, the compacted ledger and horizon (from the
    ``__compaction`` cursor's ledger when a bookie serves its last entry, else from the cursor
    node), and bookie addresses. An exception the store raises propagates as it is; an unknown
    topic is a LookupError."""

def resolve_ledgers(ledger_ids: Sequence[int], store: Any) -> tuple[list[LedgerRecord], dict[str, str]]:
    """Ledgers by id with their nodes from ``store``, and their bookies' addresses."""

def topic_paths(topic: str) -> _TopicPathsDict:
    """The metadata-store paths of a topic name."""

def partition_name(topic: str, index: int) -> str:
    """The topic name of partition ``index`` of ``topic``."""

def strip_rocksdb_header(value: bytes) -> bytes:
    """A RocksDB metadata-store value without its ``MetaValue`` header."""

def ledger_metadata(ledger_id: int, node: bytes) -> _LedgerInfoDict:
    """A BookKeeper ledger's metadata node as a dict. The password is left out."""

def ledger_node_from_text(ledger_id: int, text: str, password: bytes = ...) -> bytes:
    """The ledger node (format v3) equivalent to BookKeeper's text form of a
    ledger's metadata (the admin REST API's ``internal-stats?metadata=true``),
    ``password`` standing in for the one the text omits."""

def read_bookie_dirs(
    dirs: Sequence[tuple[str, Sequence[str], Sequence[tuple[int, int, int]] | None]],
    ledgers: Sequence[tuple[int, bytes]],
    journals: Sequence[str] = ...,
) -> tuple[pa.RecordBatch, list[int], list[int]]:
    """Ledgers read from a bookie's directories (offline). ``dirs`` holds
    ``(directory, entry-log paths, locations-index rows or None)`` per ledger
    directory, each index row ``(ledger_id, entry_id, location)``;
    ``journals`` the ``*.txn`` paths. Returns the rows (error rows first,
    ledger id -1, each naming a file and offset), the ledgers scanned for in
    the entry logs, and the ledgers read from the journals."""

@final
class BookieClientOptions:
    """How a :class:`BookieReader` talks to bookies; building one checks it (an OptionsError).

    - ``timeout_ms`` (default 30000): the time one request may wait for its response (the
      deadline is re-armed on every socket read against what is left of it);
    - ``connect_timeout_ms`` (default 5000): the time to connect to one bookie;
    - ``pipeline_depth`` (default 64): requests in flight on one connection;
    - ``max_frame_bytes`` (default 5308416): the largest response frame accepted, checked
      before allocating (a bookie's own ``nettyMaxFrameSizeBytes`` is 5 MiB; at least 64);
    - ``tls_trust_certs_file`` (default None): a PEM CA bundle; given, every connection asks
      for TLS (START_TLS, then a handshake) and checks the bookie's certificate against it;
    - ``tls_certificate_file`` (default None): a PEM client certificate, for bookies that
      require client authentication;
    - ``tls_key_file`` (default None): its unencrypted PEM key;
    - ``tls_hostname_verification`` (default False): also check the bookie's host name against
      its certificate (BookKeeper's client does not by default).

    The files are read when the options are built. ``None`` (each keyword's default) means
    the core's default."""

    def __new__(
        cls,
        *,
        timeout_ms: int | None = None,
        connect_timeout_ms: int | None = None,
        pipeline_depth: int | None = None,
        max_frame_bytes: int | None = None,
        tls_trust_certs_file: str | os.PathLike[str] | None = None,
        tls_certificate_file: str | os.PathLike[str] | None = None,
        tls_key_file: str | os.PathLike[str] | None = None,
        tls_hostname_verification: bool = False,
    ) -> BookieClientOptions: ...
    @property
    def timeout_ms(self) -> int: ...
    @property
    def connect_timeout_ms(self) -> int: ...
    @property
    def pipeline_depth(self) -> int: ...
    @property
    def max_frame_bytes(self) -> int: ...
    @property
    def tls_trust_certs_file(self) -> str | None: ...
    @property
    def tls_certificate_file(self) -> str | None: ...
    @property
    def tls_key_file(self) -> str | None: ...
    @property
    def tls_hostname_verification(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...

@final
class BookieReader:
    """A read-only BookKeeper client (``bookies`` maps a bookie id to its address)."""

    def __new__(
        cls, bookies: Mapping[str, str] | None = None, *, options: BookieClientOptions | None = None
    ) -> BookieReader: ...
    def set_deadline(self, seconds: float | None) -> None:
        """A deadline ``seconds`` from now for every later call (``None``: none): no
        request waits past it, and entries not read by then are error rows saying so."""
    def last_readable(self, ledger_id: int, metadata: bytes) -> int:
        """The readable bound of a ledger: its last entry if CLOSED, its last-add-confirmed if OPEN."""
    def bounded_last(self, ledger_id: int, metadata: bytes, entries: int | None = None) -> tuple[int, str | None]:
        """The last entry to read, bounded by evidence: a CLOSED ledger's last entry, no further
        than the managed ledger's count of its entries (``entries``, when known); an OPEN
        ledger's last-add-confirmed. The text, when not None, says how the two disagreed."""
    def read_ledger(self, ledger_id: int, metadata: bytes, first: int = 0, last: int | None = None) -> pa.RecordBatch:
        """Entries ``first..=last`` of a ledger as ``ledger_id, entry_id, data, error``; after 64
        entries in a row that no bookie holds, one row stands for the rest of the range."""
    def read_window(
        self, ledger_id: int, metadata: bytes, first: int, last: int, max_bytes: int
    ) -> tuple[pa.RecordBatch, int | None]:
        """One window of entries ``first..=last`` (at most 4,096 entries, and no more once
        ``max_bytes`` of entries arrived) and the entry to go on from (``None``: done)."""

# ---- the typed decode (pulsar_entries.schemas)

def typed_decode(
    messages: Any,
    versions: Sequence[tuple[int, str, bytes, Mapping[str, str]]],
    *,
    value_column: bool = True,
    by_version: bool = True,
) -> pa.Table:
    """Decoded messages with the topic's schema as typed columns. ``versions``
    are ``(version, type name, definition bytes, properties)``; the highest is
    the reader schema; ``by_version=False`` reads every message with it."""

def schema_locations(node: bytes) -> list[tuple[int, int, int]]:
    """``(version, ledger_id, entry_id)`` of each version a ``/schemas/...``
    node (a ``SchemaLocator``) lists."""

class _SchemaEntryDict(TypedDict):
    version: int
    deleted: bool
    timestamp: int
    schema_id: str
    type: str
    schema: bytes
    properties: dict[str, str]

def schema_entry(version: int, data: bytes) -> _SchemaEntryDict:
    """A schema-ledger entry (a ``SchemaEntry``): ``version, type, schema,
    properties, deleted, timestamp, schema_id``."""
