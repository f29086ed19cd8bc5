"""``EntryContext``: what a user payload processor learns about its entry (PIP-96's
``MessagePayloadContext``), with helpers that produce message dicts.

``decode`` builds one per entry it hands to a Python processor, with the entry's ids,
broker-entry metadata and raw MessageMetadata; the metadata is parsed (by the core) on
first use only.
"""

from __future__ import annotations

from typing import Any

from . import _native
from ._dicts import DecodedMessageDict


class EntryContext:
    """What a user payload processor learns about its entry (PIP-96's context)."""

    __slots__ = ("_ids", "_metadata", "_parsed")

    def __init__(
        self,
        ledger_id: int,
        entry_id: int,
        partition: int,
        broker_timestamp: int | None,
        broker_index: int | None,
        base_offset: int | None,
        metadata: bytes,
    ) -> None:
        self._ids = (ledger_id, entry_id, partition, broker_timestamp, broker_index, base_offset)
        self._metadata = metadata
        self._parsed: dict[str, Any] | None = None

    @property
    def ledger_id(self) -> int:
        return self._ids[0]

    @property
    def entry_id(self) -> int:
        return self._ids[1]

    @property
    def partition(self) -> int:
        return self._ids[2]

    @property
    def broker_timestamp(self) -> int | None:
        return self._ids[3]

    @property
    def broker_index(self) -> int | None:
        return self._ids[4]

    @property
    def base_offset(self) -> int | None:
        """``broker_index - (num_messages - 1)``: the offset of the entry's first message."""
        return self._ids[5]

    def _md(self) -> dict[str, Any]:
        """The parsed metadata, kept for the next question."""
        if self._parsed is None:
            self._parsed = _native.parse_metadata(self._metadata)
        return self._parsed

    @property
    def metadata(self) -> dict[str, Any]:
        """MessageMetadata, present fields only (as ``parse_entry``)."""
        return _native.parse_metadata(self._metadata)

    @property
    def properties(self) -> dict[str, str]:
        """Entry-level properties."""
        return dict(self._md().get("properties", ()))

    def get_property(self, key: str) -> str | None:
        """One entry property, or None (PIP-96 ``getProperty``)."""
        return next((v for k, v in self._md().get("properties", ()) if k == key), None)

    @property
    def is_batch(self) -> bool:
        """Whether ``num_messages_in_batch`` is present (batch framing)."""
        return "num_messages_in_batch" in self._md()

    @property
    def num_messages(self) -> int:
        """``num_messages_in_batch``, else 1."""
        n: int = self._md().get("num_messages_in_batch", 1)
        return n

    @property
    def publish_time(self) -> int:
        t: int = self._md()["publish_time"]
        return t

    @property
    def producer_name(self) -> str:
        name: str = self._md()["producer_name"]
        return name

    def single_message(self, payload: bytes) -> DecodedMessageDict:
        """The payload as one message with the entry's key, properties and times."""
        return _native.single_message(self._metadata, payload)

    def pulsar_messages(self, payload: bytes) -> list[DecodedMessageDict]:
        """Pulsar's own split of a payload (batch records, or one message)."""
        return _native.pulsar_messages(self._metadata, payload)

    def message_at(self, index: int, record: bytes) -> DecodedMessageDict:
        """A message from ``[u32 size][SingleMessageMetadata][value]`` bytes."""
        return _native.message_at(self._metadata, index, record)

    def __repr__(self) -> str:
        return f"EntryContext(ledger_id={self.ledger_id}, entry_id={self.entry_id}, partition={self.partition})"
