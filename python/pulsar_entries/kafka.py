"""Kafka RecordBatch v2 and Kafka-on-Pulsar entries.

KoP (``entryFormat=kafka``) stores the Kafka record batches a producer sent in a
Pulsar entry with property ``entry.format=kafka``, no checksum, and
``num_messages_in_batch`` = the offset span of its batches. These writers build such
entries (for tests, sample topics and benchmarks); ``pulsar_entries.decode`` reads
them with the built-in ``KAFKA`` processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from . import _times
from ._dicts import KafkaRecordDict
from ._native import encode_kafka_batch, encode_kafka_control_batch, encode_kop_entry
from ._times import as_utc

#: Kafka codecs a record batch may use.
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def record_batch(
    records: Sequence[KafkaRecordDict],
    *,
    base_offset: int = 0,
    compression: str = "none",
    base_timestamp: int | None = None,
    log_append_time: bool = False,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One Kafka RecordBatch v2 (magic 2), compressed as Kafka frames each codec.
    A record's ``timestamp`` and ``base_timestamp`` are ms since the epoch or a datetime
    (naive: UTC); ``base_timestamp`` defaults to now."""
    return encode_kafka_batch(
        [_utc_timestamp(r) for r in records],
        base_offset=base_offset,
        compression=compression,
        base_timestamp=_ms(base_timestamp),
        log_append_time=log_append_time,
        transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int | None = None,
) -> bytes:
    """An end-transaction marker batch: COMMIT (``commit=True``) or ABORT; ``timestamp``
    (ms or a datetime, naive: UTC) defaults to now."""
    return encode_kafka_control_batch(
        commit,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_offset=base_offset,
        timestamp=_ms(timestamp),
    )


def kop_entry(batches: Sequence[bytes], *, publish_time: int | None = None) -> bytes:
    """A stored entry holding ``batches`` as KoP's ``kafka`` entry format writes it;
    ``publish_time`` (ms or a datetime, naive: UTC) defaults to now."""
    return encode_kop_entry(list(batches), publish_time=_ms(publish_time))


def _ms(t: _times.Millis | None) -> int | None:
    """Milliseconds under the package's one rule for times; ``None`` stays (the writer's now)."""
    return None if t is None else _times.millis(t)


def _utc_timestamp(record: KafkaRecordDict) -> KafkaRecordDict:
    """The record with a naive datetime timestamp read as UTC, the package's one rule."""
    t = record.get("timestamp")
    if t is None or as_utc(t) is t:
        return record
    utc = dict(record)
    utc["timestamp"] = as_utc(t)
    return cast("KafkaRecordDict", utc)


__all__ = ["CODECS", "KafkaRecordDict", "control_batch", "kop_entry", "record_batch"]
