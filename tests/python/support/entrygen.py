"""Hand-built entries the encoder does not produce: encrypted batches, chunks of
chunked messages, compacted batches from older brokers (placeholders without
``compacted_batch_indexes``) and entries with a garbage payload.

A minimal protobuf writer (ascending field numbers, presence-based, unpacked
repeated fields, negative int32 as 10-byte varints) builds the metadata; the
CRC32C is filled in with the value pulsar_entries computes for the entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulsar_entries as pe


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint((number << 3) | wire)


def vint(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def blob(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return tag(number, 2) + varint(len(data)) + data


CODECS = {"none": 0, "lz4": 1, "zlib": 2, "zstd": 3, "snappy": 4}


@dataclass
class Meta:
    """MessageMetadata fields used by the tests, written in field order."""

    producer_name: str = "gen"
    sequence_id: int = 0
    publish_time: int = 1_700_000_000_000
    partition_key: str | None = None
    compression: str | None = None
    uncompressed_size: int | None = None
    num_messages_in_batch: int | None = None
    event_time: int | None = None
    encryption_keys: list[tuple[str, bytes]] = field(default_factory=list)
    encryption_param: bytes | None = None
    marker_type: int | None = None
    txnid_least_bits: int | None = None
    txnid_most_bits: int | None = None
    uuid: str | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None
    chunk_id: int | None = None
    compacted_batch_indexes: list[int] = field(default_factory=list)

    def encode(self) -> bytes:
        out = blob(1, self.producer_name) + vint(2, self.sequence_id) + vint(3, self.publish_time)
        if self.partition_key is not None:
            out += blob(6, self.partition_key)
        if self.compression is not None:
            out += vint(8, CODECS[self.compression])
        if self.uncompressed_size is not None:
            out += vint(9, self.uncompressed_size)
        if self.num_messages_in_batch is not None:
            out += vint(11, self.num_messages_in_batch)
        if self.event_time is not None:
            out += vint(12, self.event_time)
        for name, value in self.encryption_keys:
            out += blob(13, blob(1, name) + blob(2, value))
        if self.encryption_param is not None:
            out += blob(15, self.encryption_param)
        if self.partition_key is not None:
            out += vint(17, 0)
        if self.marker_type is not None:
            out += vint(20, self.marker_type)
        if self.txnid_least_bits is not None:
            out += vint(22, self.txnid_least_bits)
        if self.txnid_most_bits is not None:
            out += vint(23, self.txnid_most_bits)
        if self.uuid is not None:
            out += blob(26, self.uuid)
        if self.num_chunks_from_msg is not None:
            out += vint(27, self.num_chunks_from_msg)
        if self.total_chunk_msg_size is not None:
            out += vint(28, self.total_chunk_msg_size)
        if self.chunk_id is not None:
            out += vint(29, self.chunk_id)
        for i in self.compacted_batch_indexes:
            out += vint(31, i)
        return out


def frame(meta: Meta, payload: bytes) -> bytes:
    """`0e01 crc32c md_size metadata payload` with a correct CRC32C."""
    md = meta.encode()
    body = len(md).to_bytes(4, "big") + md + payload
    draft = b"\x0e\x01" + b"\0\0\0\0" + body
    crc = pe.parse_entry(draft)["checksum"]["computed"]
    return b"\x0e\x01" + crc.to_bytes(4, "big") + body


def record(payload: bytes, *, key: str | None = None, compacted_out: bool = False, event_time=None) -> bytes:
    """One batch record `[u32 size][SingleMessageMetadata][payload]`."""
    smm = b""
    if key is not None:
        smm += blob(2, key)
    smm += vint(3, len(payload))
    if compacted_out:
        smm += vint(4, 1)
    if event_time is not None:
        smm += vint(5, event_time)
    if key is not None:
        smm += vint(6, 0)
    return len(smm).to_bytes(4, "big") + smm + payload


PLACEHOLDER = record(b"", compacted_out=True)


def encrypted_entry(n: int | None, key: str | None, payload: bytes, *, publish_time: int = 1_700_000_000_000) -> bytes:
    """An encrypted entry (a batch of ``n`` when ``n`` is given): the payload is opaque."""
    meta = Meta(
        producer_name="enc",
        publish_time=publish_time,
        partition_key=key,
        num_messages_in_batch=n,
        encryption_keys=[("key-a", b"\x01\x02\x03")],
        encryption_param=b"\x00" * 12,
    )
    if n is None:
        meta.uncompressed_size = len(payload)
    return frame(meta, payload)


def chunk_entries(
    key: str | None,
    value: bytes,
    chunks: int,
    *,
    uuid: str = "gen-1",
    sequence_id: int = 1,
    publish_time: int = 1_700_000_000_000,
    event_time: int | None = None,
) -> list[bytes]:
    """The entries of one chunked message: the payload is split, uncompressed."""
    size = -(-len(value) // chunks)
    parts = [value[i * size : (i + 1) * size] for i in range(chunks)]
    return [
        frame(
            Meta(
                producer_name="chunker",
                sequence_id=sequence_id,
                publish_time=publish_time,
                partition_key=key,
                uncompressed_size=len(value),
                event_time=event_time,
                uuid=uuid,
                num_chunks_from_msg=chunks,
                total_chunk_msg_size=len(value),
                chunk_id=i,
            ),
            part,
        )
        for i, part in enumerate(parts)
    ]


def legacy_compacted_batch(slots: list[tuple[str, bytes] | None], *, codec: str = "none", indexes=False) -> bytes:
    """A compacted batch as pre-PIP-429 brokers wrote it: a placeholder for
    each ``None`` slot, no ``compacted_batch_indexes`` unless ``indexes``."""
    import zlib  # noqa: F401  (codecs other than none go through pulsar_entries)

    buf = b"".join(PLACEHOLDER if s is None else record(s[1], key=s[0]) for s in slots)
    meta = Meta(producer_name="legacy", num_messages_in_batch=len(slots))
    if indexes:
        meta.compacted_batch_indexes = [i for i, s in enumerate(slots) if s is not None]
    if codec == "none":
        meta.uncompressed_size = len(buf)
        return frame(meta, buf)
    compressed = compress(codec, buf)
    meta.compression = codec
    meta.uncompressed_size = len(buf)
    return frame(meta, compressed)


def compress(codec: str, data: bytes) -> bytes:
    """Compresses with pulsar_entries' encoder: the payload of a single message it encodes."""
    entry = pe.encode_entry([{"value": data}], batch=False, compression=codec, publish_time=1)
    return pe.parse_entry(entry)["payload"]
