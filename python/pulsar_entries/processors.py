"""Payload processors (PIP-96): how ``decode`` turns an entry's payload into messages.

``decode(entries, processors=[...])`` tries the processors in order and gives each
entry to the first whose ``entry_property`` matches the entry's MessageMetadata
properties (``None`` matches every entry). The default is ``DEFAULT = [KAFKA, PULSAR]``:
Kafka-on-Pulsar entries (``entry.format=kafka``) and Pulsar batches decode with no
configuration.

A user processor is any object with a ``process(payload, context)`` method that returns
an iterable of message dicts (keys: ``value``, ``key``, ``key_b64_encoded``,
``ordering_key``, ``properties``, ``headers``, ``event_time``, ``timestamp_type``,
``sequence_id``, ``batch_index``, ``offset``, ``compacted_out``; all optional). Optional
attributes: ``name`` (shown in the ``processor`` column) and ``entry_property``, a
``(key, value)`` pair; ``value`` is compared case-insensitively, ``None`` accepts any
value. ``payload`` has been checksum-verified and decompressed with the entry's Pulsar
codec. A processor that raises marks only its entry with an ``error`` row.

Processors are picklable when their class is (built-ins always are), so a Spark
``mapInArrow`` function can carry them to executors and call ``decode`` per batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from ._context import EntryContext
from ._dicts import DecodedMessageDict, MessageDict, OutputMessageDict
from ._native import BuiltinProcessor

#: KoP's Kafka entries (``entry.format=kafka``): every Kafka RecordBatch v2 of the entry.
KAFKA = BuiltinProcessor("kafka")
#: Pulsar's own format: batch records, or the whole payload as one message.
PULSAR = BuiltinProcessor("pulsar")
#: What ``decode`` uses when ``processors`` is not given.
DEFAULT: tuple[BuiltinProcessor, BuiltinProcessor] = (KAFKA, PULSAR)


@runtime_checkable
class PayloadProcessor(Protocol):
    """The protocol a user processor follows."""

    def process(self, payload: bytes, context: EntryContext) -> Iterable[OutputMessageDict]: ...


class Processor:
    """Convenience base class for user processors.

    Subclasses set ``name`` and ``entry_property`` and implement ``process``.
    """

    name: str = ""
    entry_property: tuple[str, str | None] | None = None

    def __init__(self) -> None:
        if not self.name:
            self.name = type(self).__name__

    def process(self, payload: bytes, context: EntryContext) -> Iterable[OutputMessageDict]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, entry_property={self.entry_property!r})"


def _check(processor: Any) -> None:
    """Raises TypeError early for objects ``decode`` would reject."""
    if isinstance(processor, (BuiltinProcessor, str)):
        return
    if not callable(getattr(processor, "process", None)):
        raise TypeError(f"{processor!r} is not a payload processor: it has no process(payload, context) method")


__all__ = [
    "DEFAULT",
    "KAFKA",
    "PULSAR",
    "BuiltinProcessor",
    "DecodedMessageDict",
    "EntryContext",
    "MessageDict",
    "OutputMessageDict",
    "PayloadProcessor",
    "Processor",
]
