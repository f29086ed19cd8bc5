"""The dict shapes of the API, as runtime ``TypedDict`` classes: a processor
author (or any caller) can import them, not only a type checker.

``pulsar_entries._native``'s stub re-exports these; the public homes are
:mod:`pulsar_entries.processors` (the message dicts) and
:mod:`pulsar_entries.kafka` (``KafkaRecordDict``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, Union

from ._times import Millis


class MessageDict(TypedDict, total=False):
    """A message to encode (``encode_entry``); every key is optional."""

    value: Union[bytes, None]
    key: Union[str, bytes, None]
    properties: Union[Mapping[str, str], None]
    event_time: Union[int, None]
    sequence_id: Union[int, None]
    ordering_key: Union[bytes, None]


class DecodedMessageDict(TypedDict):
    """A message as the ``EntryContext`` helpers return it."""

    batch_index: Union[int, None]
    value: Union[bytes, None]
    key: Union[str, None]
    key_b64_encoded: bool
    ordering_key: Union[bytes, None]
    properties: dict[str, Union[str, None]]
    event_time: Union[int, None]
    sequence_id: Union[int, None]
    compacted_out: bool


class OutputMessageDict(TypedDict, total=False):
    """A message a user processor returns; every key is optional."""

    value: Union[bytes, str, None]
    key: Union[str, bytes, None]
    key_b64_encoded: bool
    ordering_key: Union[bytes, None]
    properties: Union[Mapping[str, Union[str, None]], None]
    headers: Union[Sequence[tuple[str, Union[bytes, None]]], None]
    event_time: Union[Millis, None]
    timestamp_type: Union[str, None]
    sequence_id: Union[int, None]
    batch_index: Union[int, None]
    offset: Union[int, None]
    compacted_out: bool


class KafkaRecordDict(TypedDict, total=False):
    """A Kafka record to encode (:func:`pulsar_entries.kafka.record_batch`); every key is optional."""

    key: Union[bytes, str, None]
    value: Union[bytes, str, None]
    headers: Union[Sequence[tuple[str, Union[bytes, None]]], Mapping[str, Union[bytes, None]], None]
    timestamp: Union[Millis, None]
    offset_delta: Union[int, None]
