"""A realistic, deterministic sample topic, for the demo, tests and benchmarks.

Several Pulsar producers publish batched and single messages with every codec;
Kafka clients publish through Kafka-on-Pulsar (``entry.format=kafka`` entries
holding one or more Kafka record batches, some transactional, with COMMIT and
ABORT markers); a broker with both entry-metadata interceptors stamps each entry
with its timestamp and running message index (``pulsar_entries.stamp``);
a few large messages are chunked (PIP-107), their chunks interleaved with other
entries and one chunk stored twice as a producer resend does (the broker index
counts a chunk entry as one message); Pulsar transaction markers sit in the
stream; and a few entries are corrupt, as on real disks.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from . import _native, kafka

if TYPE_CHECKING:
    from ._native import KafkaRecordDict, MessageDict

CODECS = ("none", "lz4", "zlib", "zstd", "snappy")
MARKER_COMMIT = bytes.fromhex(
    "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
)


@dataclass(frozen=True)
class SampleTopic:
    """Entries plus what went into them, so callers can check a decode."""

    entries: pa.Table
    #: data messages (Pulsar messages and Kafka records), corrupt entries included
    messages: int
    corrupt_entries: int
    #: messages inside the corrupt entries, which decode reports as error rows
    corrupt_messages: int
    #: entries that hold no message: Pulsar markers and Kafka control batches
    marker_entries: int
    #: KoP entries and the Kafka records in them
    kafka_entries: int
    kafka_messages: int
    #: offsets the broker index counted (its last value + 1)
    offsets: int
    #: large messages stored as chunks (each counted once in ``messages``)
    chunked_messages: int = 0
    #: chunk entries, duplicates included: decode gives one row for each
    chunk_entries: int = 0
    #: chunk entries stored twice (reassembly reports each as ``duplicate``)
    duplicate_chunks: int = 0


def _value(rng: random.Random, producer: int, seq: int) -> bytes:
    doc = {
        "producer": producer,
        "seq": seq,
        "user": f"user-{rng.randrange(1000)}",
        "amount": round(rng.uniform(0, 500), 2),
        "tags": rng.sample(["eu", "us", "web", "app", "promo", "retry"], rng.randrange(4)),
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def _document(rng: random.Random, producer: int, seq: int, size: int) -> bytes:
    """A large JSON document (an export, a report): big enough to be chunked."""
    rows: list[str] = []
    while sum(len(r) for r in rows) < size:
        rows.append(_value(rng, producer, seq).decode())
    return ('{"producer":%d,"seq":%d,"rows":[%s]}' % (producer, seq, ",".join(rows))).encode()


def _pulsar_entry(rng: random.Random, p: int, seq: int, clock: int) -> tuple[bytes, int]:
    n = rng.choice([1, 1, 2, 5, 10, 50, 100, 200])
    batch = n > 1 or rng.random() < 0.7
    msgs: list[MessageDict] = []
    for i in range(n):
        key = f"user-{rng.randrange(200)}" if rng.random() < 0.9 else None
        value = None if key is not None and rng.random() < 0.03 else _value(rng, p, seq + i)
        msgs.append(
            {
                "value": value,
                "key": key,
                "properties": {"source": f"svc-{p}", "attempt": str(rng.randrange(3))},
                "event_time": clock - rng.randrange(0, 2000),
            }
        )
    data = _native.encode_entry(
        msgs,
        batch=batch,
        compression=rng.choice(CODECS),
        producer_name=f"producer-{p}",
        sequence_id=seq,
        publish_time=clock,
    )
    return data, n


def _kafka_batch(rng: random.Random, clock: int, *, producer_id: int = -1, epoch: int = -1) -> tuple[bytes, int]:
    n = rng.choice([1, 3, 10, 40])
    records: list[KafkaRecordDict] = []
    for i in range(n):
        key = f"account-{rng.randrange(100)}".encode() if rng.random() < 0.8 else None
        records.append(
            {
                "key": key,
                "value": None if key is not None and rng.random() < 0.03 else _value(rng, 100, i),
                "headers": [("trace-id", rng.randbytes(8)), ("origin", b"kafka-client")][: rng.randrange(3)],
                "timestamp": clock - rng.randrange(0, 1000),
            }
        )
    batch = kafka.record_batch(
        records,
        compression=rng.choice(kafka.CODECS),
        base_timestamp=clock,
        transactional=producer_id >= 0,
        producer_id=producer_id,
        producer_epoch=epoch,
    )
    return batch, n


def generate_topic(
    entries: int = 1000,
    *,
    seed: int = 7,
    producers: int = 4,
    entries_per_ledger: int = 400,
    start_ms: int = 1_700_000_000_000,
    corrupt: int = 3,
    markers: int = 2,
    kafka_share: float = 0.15,
    chunked: int | None = None,
    chunk_size: int = 4 * 1024,
) -> SampleTopic:
    """Generates ``entries`` stored entries of one topic partition, in topic order.

    ``chunked`` large messages (default: one per 150 entries) are split into
    ``chunk_size``-byte chunks by a producer with chunking enabled; chunk
    entries count towards ``entries``.
    """
    rng = random.Random(seed)
    chunk_rng = random.Random(seed + 1)
    sequences = [0] * producers
    data: list[bytes] = []
    counts: list[int] = []
    kind: list[str] = []
    broker_times: list[int] = []
    clock = start_ms
    marker_at = set(rng.sample(range(entries), min(markers, entries)))
    open_txn: dict[int, int] = {}  # Kafka transactional producer id -> entries until it ends
    next_pid = 5000
    n_chunked = entries // 150 if chunked is None else chunked
    chunked_at = set(chunk_rng.sample(range(entries // 2), min(n_chunked, entries // 2)))
    pending: list[list[bytes]] = []  # chunk entries not yet written, per message
    chunked_messages = duplicates = 0
    for i in range(entries):
        clock += rng.randrange(1, 40)
        broker_times.append(clock + rng.randrange(0, 5))  # the broker stamps a little later
        ending = [pid for pid, left in open_txn.items() if left <= 0]
        # Slots left for new entries once pending chunks and later markers are written.
        left = entries - i - sum(len(q) for q in pending) - sum(1 for m in marker_at if m >= i)
        if i in chunked_at and left > 40 and i not in marker_at:
            p = chunk_rng.randrange(producers)
            doc = _document(chunk_rng, p, sequences[p], chunk_rng.randrange(30_000, 150_000))
            chunks = _native.encode_chunked(
                {"value": doc, "key": f"report-{p}", "properties": {"source": f"svc-{p}", "kind": "report"}},
                chunk_size=chunk_size,
                compression=chunk_rng.choice(CODECS),
                producer_name=f"producer-{p}",
                sequence_id=sequences[p],
                publish_time=clock,
            )
            if len(chunks) > 1:
                if not duplicates and len(chunks) > 2:
                    chunks.insert(2, chunks[1])  # chunk 1 stored twice, as a producer resend does
                    duplicates += 1
                pending.append(chunks)
                chunked_messages += 1
                sequences[p] += 1
                left -= len(chunks)
        if i in marker_at:
            data.append(MARKER_COMMIT)
            counts.append(0)
            kind.append("marker")
        elif pending and (left <= 0 or chunk_rng.random() < 0.6):
            q = pending[chunk_rng.randrange(len(pending))]
            data.append(q.pop(0))
            if not q:
                pending.remove(q)
            counts.append(0)
            kind.append("chunk")
        elif ending:
            pid = ending[0]
            del open_txn[pid]
            data.append(
                kafka.kop_entry(
                    [kafka.control_batch(rng.random() < 0.7, producer_id=pid, timestamp=clock)], publish_time=clock
                )
            )
            counts.append(0)
            kind.append("marker")
        elif rng.random() < kafka_share:
            batches, n = [], 0
            pid = -1
            if rng.random() < 0.25:
                if open_txn and rng.random() < 0.5:
                    pid = rng.choice(list(open_txn))
                else:
                    pid, next_pid = next_pid, next_pid + 1
                    open_txn[pid] = rng.randrange(2, 8)
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                b, k = _kafka_batch(rng, clock, producer_id=pid, epoch=0 if pid >= 0 else -1)
                batches.append(b)
                n += k
            data.append(kafka.kop_entry(batches, publish_time=clock))
            counts.append(n)
            kind.append("kafka")
        else:
            p = rng.randrange(producers)
            entry, n = _pulsar_entry(rng, p, sequences[p], clock)
            sequences[p] += n
            data.append(entry)
            counts.append(n)
            kind.append("pulsar")
        for pid in open_txn:
            open_txn[pid] -= 1
    assert not pending, "every chunked message is written whole"
    ledgers = [1000 + i // entries_per_ledger for i in range(entries)]
    entry_ids = [i % entries_per_ledger for i in range(entries)]
    table = pa.table(
        {
            "ledger_id": pa.array(ledgers, pa.int64()),
            "entry_id": pa.array(entry_ids, pa.int64()),
            "data": pa.array(data, pa.binary()),
        }
    )
    table = _native.stamp(table, timestamps=broker_times)
    stamped = table["data"].to_pylist()
    last = _native.parse_entry(stamped[-1])["broker_entry_metadata"]["index"]
    # Corrupt only message entries: markers carry nothing, chunked messages stay whole.
    candidates = [i for i in range(entries) if kind[i] in ("pulsar", "kafka")]
    bad = rng.sample(candidates, min(corrupt, len(candidates)))
    for i in bad:
        damaged = bytearray(stamped[i])
        # A flipped byte: inside the CRC32C-covered part of a Pulsar entry, and in
        # the last Kafka batch's records (covered by its CRC-32C) of a KoP entry.
        at = len(damaged) - 2 if kind[i] == "kafka" else len(damaged) // 2 + 3
        damaged[at] ^= 0x5A
        stamped[i] = bytes(damaged)
    table = table.set_column(2, "data", pa.array(stamped, pa.binary()))
    return SampleTopic(
        entries=table,
        messages=sum(counts) + chunked_messages,
        corrupt_entries=len(bad),
        corrupt_messages=sum(counts[i] for i in bad),
        marker_entries=sum(1 for k in kind if k == "marker"),
        kafka_entries=sum(1 for k in kind if k == "kafka"),
        kafka_messages=sum(c for c, k in zip(counts, kind) if k == "kafka"),
        offsets=last + 1,
        chunked_messages=chunked_messages,
        chunk_entries=sum(1 for k in kind if k == "chunk"),
        duplicate_chunks=duplicates,
    )
