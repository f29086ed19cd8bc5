"""``MessageId`` and ``ChunkMessageId``: message positions as Pulsar's Java client compares,
prints and serializes them (``MessageIdImpl``, ``BatchMessageIdImpl``, ``ChunkMessageIdImpl``).

The bytes are the Rust core's (``_native.serialize_message_id`` / ``deserialize_message_id``,
one tuple of parts each way); everything else is here. Both classes are immutable, hashable,
ordered and picklable (Spark ships them to executors); their public home is ``pulsar_entries``.
"""

from __future__ import annotations

import operator
from typing import Any, Final

from . import _native
from ._errors import InputSchemaError

_I64: Final = 1 << 63
_I32: Final = 1 << 31


def _int(value: Any, bound: int) -> int:
    """``value`` as an int in ``[-bound, bound)``: a TypeError or OverflowError otherwise."""
    number = operator.index(value)
    if not -bound <= number < bound:
        raise OverflowError(f"{number} does not fit in a {bound.bit_length()}-bit signed integer")
    return number


class MessageId:
    """A message position as Pulsar's Java client serializes, prints and
    orders it. Equality, ordering and hashing use ``(ledger_id, entry_id,
    partition, batch_index)``; ``batch_size`` is carried for serialization only."""

    __module__ = "pulsar_entries"
    __slots__ = ("_batch_index", "_batch_size", "_entry_id", "_ledger_id", "_partition")
    _ledger_id: int
    _entry_id: int
    _partition: int
    _batch_index: int
    _batch_size: int | None

    def __init__(
        self,
        ledger_id: int,
        entry_id: int,
        *,
        partition: int = -1,
        batch_index: int = -1,
        batch_size: int | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "_ledger_id", _int(ledger_id, _I64))
        set_(self, "_entry_id", _int(entry_id, _I64))
        set_(self, "_partition", _int(partition, _I32))
        set_(self, "_batch_index", _int(batch_index, _I32))
        set_(self, "_batch_size", None if batch_size is None else _int(batch_size, _I32))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def ledger_id(self) -> int:
        return self._ledger_id

    @property
    def entry_id(self) -> int:
        return self._entry_id

    @property
    def partition(self) -> int:
        return self._partition

    @property
    def batch_index(self) -> int:
        return self._batch_index

    @property
    def batch_size(self) -> int | None:
        return self._batch_size

    def _key(self) -> tuple[int, int, int, int]:
        return (self.ledger_id, self.entry_id, self.partition, self.batch_index)

    def _parts(self) -> tuple[int, int, int, int, int | None, tuple[int, int, int] | None]:
        return (*self._key(), self.batch_size, None)

    def serialize(self) -> bytes:
        """Java's ``MessageId.toByteArray()`` (``batch_size`` written, 0 when unknown)."""
        return _native.serialize_message_id(self._parts())

    @staticmethod
    def deserialize(data: bytes) -> MessageId | ChunkMessageId:
        """Java's ``MessageId.fromByteArray()``: a batch index wins over
        ``first_chunk_message_id``, which makes a ``ChunkMessageId``.
        Raises EntryFormatError on bad bytes."""
        ledger_id, entry_id, partition, batch_index, batch_size, first = _native.deserialize_message_id(data)
        if first is None:
            return MessageId(ledger_id, entry_id, partition=partition, batch_index=batch_index, batch_size=batch_size)
        fl, fe, fp = first
        return ChunkMessageId(MessageId(fl, fe, partition=fp), MessageId(ledger_id, entry_id, partition=partition))

    def __str__(self) -> str:
        text = f"{self.ledger_id}:{self.entry_id}:{self.partition}"
        return text if self.batch_index == -1 else f"{text}:{self.batch_index}"

    def __repr__(self) -> str:
        return (
            f"MessageId(ledger_id={self.ledger_id}, entry_id={self.entry_id}, partition={self.partition}, "
            f"batch_index={self.batch_index}, batch_size={self.batch_size})"
        )

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, MessageId) else NotImplemented

    def __lt__(self, other: MessageId) -> bool:
        return self._key() < other._key() if isinstance(other, MessageId) else NotImplemented

    def __le__(self, other: MessageId) -> bool:
        return self._key() <= other._key() if isinstance(other, MessageId) else NotImplemented

    def __gt__(self, other: MessageId) -> bool:
        return self._key() > other._key() if isinstance(other, MessageId) else NotImplemented

    def __ge__(self, other: MessageId) -> bool:
        return self._key() >= other._key() if isinstance(other, MessageId) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_message_id, (self.ledger_id, self.entry_id, self.partition, self.batch_index, self.batch_size))


def _message_id(ledger_id: int, entry_id: int, partition: int, batch_index: int, batch_size: int | None) -> MessageId:
    """A :class:`MessageId` from its fields in order (how one unpickles)."""
    return MessageId(ledger_id, entry_id, partition=partition, batch_index=batch_index, batch_size=batch_size)


class ChunkMessageId(MessageId):
    """A chunked message's id (PIP-107). Its ``ledger_id``, ``entry_id`` and
    ``partition`` are the last chunk's: it equals, orders and hashes as the
    last chunk's position (Java's ``hashCode`` also mixes in the first chunk;
    ours stays consistent with equality). ``str()`` is ``first;last``."""

    __module__ = "pulsar_entries"
    __slots__ = ("_first",)
    _first: tuple[int, int, int]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("ChunkMessageId is final: it cannot be subclassed")

    def __init__(self, first: MessageId, last: MessageId) -> None:
        for half in (first, last):
            if not isinstance(half, MessageId):
                raise TypeError(f"ChunkMessageId expects two MessageIds, got {type(half).__name__}")
        if first.batch_index != -1 or last.batch_index != -1:
            raise InputSchemaError("chunks are never batched: both halves need batch_index -1")
        super().__init__(last.ledger_id, last.entry_id, partition=last.partition)
        object.__setattr__(self, "_first", (first.ledger_id, first.entry_id, first.partition))

    @property
    def first(self) -> MessageId:
        fl, fe, fp = self._first
        return MessageId(fl, fe, partition=fp)

    @property
    def last(self) -> MessageId:
        return MessageId(self.ledger_id, self.entry_id, partition=self.partition)

    def _parts(self) -> tuple[int, int, int, int, int | None, tuple[int, int, int] | None]:
        return (*self._key(), None, self._first)

    def __str__(self) -> str:
        return f"{self.first};{self.last}"

    def __repr__(self) -> str:
        (fl, fe, fp), (ll, le, lp) = self._first, (self.ledger_id, self.entry_id, self.partition)
        return (
            f"ChunkMessageId(first=MessageId({fl}, {fe}, partition={fp}), last=MessageId({ll}, {le}, partition={lp}))"
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (type(self), (self.first, self.last))


def seek_position(message_id: MessageId) -> MessageId:
    """Where a consumer seeks for ``message_id``: the first chunk of a chunked
    message (PIP-107), the id itself otherwise."""
    if isinstance(message_id, ChunkMessageId):
        return message_id.first
    if not isinstance(message_id, MessageId):
        raise TypeError("seek_position expects a MessageId or ChunkMessageId")
    m = message_id
    return MessageId(m.ledger_id, m.entry_id, partition=m.partition, batch_index=m.batch_index, batch_size=m.batch_size)
