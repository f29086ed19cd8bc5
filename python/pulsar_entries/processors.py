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

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from . import _native
from ._context import EntryContext
from ._dicts import DecodedMessageDict, MessageDict, OutputMessageDict


class BuiltinProcessor:
    """A built-in processor (run in Rust): ``KAFKA`` or ``PULSAR``. Picklable, so it can travel
    to Spark executors."""

    __slots__ = ("_entry_property", "_name")
    _name: str
    _entry_property: tuple[str, str | None] | None

    def __init__(self, name: str) -> None:
        # The core knows the built-ins: an unknown name raises OptionsError.
        object.__setattr__(self, "_entry_property", _native.builtin_processor(name))
        object.__setattr__(self, "_name", name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BuiltinProcessor is immutable")

    @property
    def name(self) -> str:
        return self._name

    @property
    def entry_property(self) -> tuple[str, str | None] | None:
        """The entry property the processor selects on (None: every entry)."""
        return self._entry_property

    def __eq__(self, other: object) -> bool:
        return self._name == other._name if isinstance(other, BuiltinProcessor) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"BuiltinProcessor({json.dumps(self._name, ensure_ascii=False)})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (BuiltinProcessor, (self._name,))


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


def native_processors(processors: Any) -> list[Any] | None:
    """``decode(processors=...)`` as the native decoder takes it: a built-in's name, or a Python
    processor's ``(name, entry_property, processor)``; a TypeError for anything else. Each
    processor's ``entry_property`` is read here, once, so choosing one never needs the GIL."""
    if processors is None:
        return None
    if isinstance(processors, (str, bytes)) or not isinstance(processors, Sequence):
        raise TypeError(f"processors must be a list of processors, not {type(processors).__name__}")
    out: list[Any] = []
    for i, p in enumerate(processors):
        if isinstance(p, BuiltinProcessor):
            out.append(p.name)
        elif isinstance(p, str):
            out.append(p)
        elif callable(getattr(p, "process", None)):
            name = getattr(p, "name", None)
            if name is None:
                name = type(p).__name__
            elif not isinstance(name, str):
                raise TypeError(f"processors[{i}].name must be a str")
            prop = getattr(p, "entry_property", None)
            pair = isinstance(prop, tuple) and len(prop) == 2
            if prop is not None and not (
                pair and isinstance(prop[0], str) and (prop[1] is None or isinstance(prop[1], str))
            ):
                raise TypeError(
                    f"processor {json.dumps(name, ensure_ascii=False)}: entry_property must be None or "
                    "a (key, value) pair of str (value may be None)"
                )
            out.append((name, prop, p))
        else:
            raise TypeError(
                f"processors[{i}] must be a built-in processor (KAFKA, PULSAR, or its name) or an object "
                "with a process(payload, context) method"
            )
    return out


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
