"""The dict shapes of the API, as runtime ``TypedDict`` classes: a processor
author (or any caller) can import them, not only a type checker.

``pulsar_entries._native``'s stub re-exports these; the public homes are
:mod:`pulsar_entries.processors` (the message dicts) and
:mod:`pulsar_entries.kafka` (``KafkaRecordDict``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from ._times import Millis


class MessageDict(TypedDict, total=False):
    """A message to encode (``encode_entry``); every key is optional."""

    value: bytes | None
    key: str | bytes | None
    properties: Mapping[str, str] | None
    event_time: int | None
    sequence_id: int | None
    ordering_key: bytes | None


class DecodedMessageDict(TypedDict):
    """A message as the ``EntryContext`` helpers return it."""

    batch_index: int | None
    value: bytes | None
    key: str | None
    key_b64_encoded: bool
    ordering_key: bytes | None
    properties: dict[str, str | None]
    event_time: int | None
    sequence_id: int | None
    compacted_out: bool


class OutputMessageDict(TypedDict, total=False):
    """A message a user processor returns; every key is optional."""

    value: bytes | str | None
    key: str | bytes | None
    key_b64_encoded: bool
    ordering_key: bytes | None
    properties: Mapping[str, str | None] | None
    headers: Sequence[tuple[str, bytes | None]] | None
    event_time: Millis | None
    timestamp_type: str | None
    sequence_id: int | None
    batch_index: int | None
    offset: int | None
    compacted_out: bool


class KafkaRecordDict(TypedDict, total=False):
    """A Kafka record to encode (:func:`pulsar_entries.kafka.record_batch`); every key is optional."""

    key: bytes | str | None
    value: bytes | str | None
    headers: Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None
    timestamp: Millis | None
    offset_delta: int | None
