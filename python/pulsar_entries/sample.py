"""A realistic, deterministic sample topic, for the demo, tests and benchmarks.

Several producers publish batched and single messages with every codec; a
few large messages are chunked (PIP-107), their chunks interleaved with other
producers' entries, one chunk stored twice as a resend would; a broker with
both entry-metadata interceptors stamps each entry with its timestamp and
running message index (a chunk entry counts as one message there); transaction
markers sit in the stream; and a few entries are corrupt, as on real disks.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pyarrow as pa

from . import _native

CODECS = ("none", "lz4", "zlib", "zstd", "snappy")
MARKER_COMMIT = bytes.fromhex(
    "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
)


@dataclass(frozen=True)
class SampleTopic:
    """Entries plus what went into them, so callers can check a decode."""

    entries: pa.Table
    messages: int
    corrupt_entries: int
    #: messages inside the corrupt entries, which decode reports as error rows
    corrupt_messages: int
    marker_entries: int
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
    rows = []
    while sum(len(r) for r in rows) < size:
        rows.append(_value(rng, producer, seq).decode())
    return ('{"producer":%d,"seq":%d,"rows":[%s]}' % (producer, seq, ",".join(rows))).encode()


def generate_topic(
    entries: int = 1000,
    *,
    seed: int = 7,
    producers: int = 4,
    entries_per_ledger: int = 400,
    start_ms: int = 1_700_000_000_000,
    corrupt: int = 3,
    markers: int = 2,
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
    is_chunk: list[bool] = []
    messages = 0
    index = -1  # AppendIndexMetadataInterceptor starts its counter at -1
    clock = start_ms
    marker_at = set(rng.sample(range(entries), min(markers, entries)))
    n_chunked = entries // 150 if chunked is None else chunked
    chunked_at = set(chunk_rng.sample(range(entries // 2), min(n_chunked, entries // 2)))
    pending: list[list[bytes]] = []  # chunk entries not yet written, per message
    chunked_messages = chunk_entries = duplicates = 0
    for i in range(entries):
        clock += rng.randrange(1, 40)
        broker_ts = clock + rng.randrange(0, 5)  # the broker stamps a little later
        if i in marker_at:
            data.append(MARKER_COMMIT)  # markers carry no messages and get no index
            counts.append(0)
            is_chunk.append(False)
            continue
        # Slots left for new entries once pending chunks and markers are written.
        left = entries - i - sum(len(q) for q in pending) - sum(1 for m in marker_at if m > i)
        if i in chunked_at and left > 40:
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
                messages += 1
        if pending and (chunk_rng.random() < 0.6 or left <= 0):
            q = pending[chunk_rng.randrange(len(pending))]
            index += 1  # one message per chunk entry, as the broker counts
            entry = _native.set_broker_entry_metadata(q.pop(0), broker_timestamp=broker_ts, broker_index=index)
            if not q:
                pending.remove(q)
            data.append(entry)
            counts.append(0)
            is_chunk.append(True)
            chunk_entries += 1
            continue
        p = rng.randrange(producers)
        n = rng.choice([1, 1, 2, 5, 10, 50, 100, 200])
        batch = n > 1 or rng.random() < 0.7
        msgs = []
        for _ in range(n):
            key = f"user-{rng.randrange(200)}" if rng.random() < 0.9 else None
            value = None if key is not None and rng.random() < 0.03 else _value(rng, p, sequences[p])
            msgs.append(
                {
                    "value": value,
                    "key": key,
                    "properties": {"source": f"svc-{p}", "attempt": str(rng.randrange(3))},
                    "event_time": clock - rng.randrange(0, 2000),
                }
            )
        index += n
        data.append(
            _native.encode_entry(
                msgs,
                batch=batch,
                compression=rng.choice(CODECS),
                producer_name=f"producer-{p}",
                sequence_id=sequences[p],
                publish_time=clock,
                broker_timestamp=broker_ts,
                broker_index=index,
            )
        )
        sequences[p] += n
        messages += n
        counts.append(n)
        is_chunk.append(False)
    assert not pending, "every chunked message is written whole"
    # Corrupt only ordinary entries: chunked messages stay whole in the sample.
    candidates = [i for i in range(entries) if i not in marker_at and not is_chunk[i]]
    bad = rng.sample(candidates, min(corrupt, len(candidates)))
    for i in bad:
        damaged = bytearray(data[i])
        damaged[len(damaged) // 2] ^= 0x5A  # a flipped byte, caught by the CRC32C
        data[i] = bytes(damaged)
    ledgers = [1000 + i // entries_per_ledger for i in range(entries)]
    entry_ids = [i % entries_per_ledger for i in range(entries)]
    table = pa.table(
        {
            "ledger_id": pa.array(ledgers, pa.int64()),
            "entry_id": pa.array(entry_ids, pa.int64()),
            "data": pa.array(data, pa.binary()),
        }
    )
    return SampleTopic(
        entries=table,
        messages=messages,
        corrupt_entries=len(bad),
        corrupt_messages=sum(counts[i] for i in bad),
        marker_entries=len(marker_at),
        chunked_messages=chunked_messages,
        chunk_entries=chunk_entries,
        duplicate_chunks=duplicates,
    )

