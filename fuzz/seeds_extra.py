"""Seeds for the kafka_batch, message_id and chunks targets, derived from
seeds/decode_entry, and for typed_protobuf, written by hand in the protobuf
wire format (standard library only; run from fuzz/)."""

import pathlib
import struct

SEEDS = pathlib.Path(__file__).parent / "seeds"


def payload(entry: bytes) -> bytes:
    """The payload of a stored entry (broker prefix and checksum skipped)."""
    pos = 0
    if entry[:2] == b"\x0e\x02":
        pos = 6 + struct.unpack(">I", entry[2:6])[0]
    if entry[pos : pos + 2] == b"\x0e\x01":
        pos += 6
    md_size = struct.unpack(">I", entry[pos : pos + 4])[0]
    return entry[pos + 4 + md_size :]


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def id_data(ledger: int, entry: int, partition: int = -1, batch_index: int | None = None,
            batch_size: int | None = None, first_chunk: bytes | None = None) -> bytes:
    out = b"\x08" + varint(ledger) + b"\x10" + varint(entry) + b"\x18" + varint(partition)
    if batch_index is not None:
        out += b"\x20" + varint(batch_index)
    if batch_size is not None:
        out += b"\x30" + varint(batch_size)
    if first_chunk is not None:
        out += b"\x3a" + varint(len(first_chunk)) + first_chunk
    return out


def main() -> None:
    entries = {p.name: p.read_bytes() for p in sorted((SEEDS / "decode_entry").iterdir())}
    kafka = SEEDS / "kafka_batch"
    kafka.mkdir(exist_ok=True)
    for name, data in entries.items():
        if name.startswith("kop-"):
            (kafka / name).write_bytes(payload(data))
    ids = SEEDS / "message_id"
    ids.mkdir(exist_ok=True)
    (ids / "plain").write_bytes(id_data(3, 5))
    (ids / "partitioned").write_bytes(id_data(3, 5, 2))
    (ids / "batch").write_bytes(id_data(3, 5, 0, batch_index=1, batch_size=4))
    (ids / "negative").write_bytes(id_data(-1, -1, -1))
    (ids / "chunk").write_bytes(id_data(3, 9, 1, first_chunk=id_data(3, 5, 1)))
    chunks = SEEDS / "chunks"
    chunks.mkdir(exist_ok=True)

    def framed(*datas: bytes) -> bytes:
        return b"".join(struct.pack(">H", len(d)) + d for d in datas)

    for name, data in entries.items():
        (chunks / name).write_bytes(framed(data))
    (chunks / "chunk-twice").write_bytes(framed(entries["chunk"], entries["chunk"]))
    (chunks / "mixed").write_bytes(framed(entries["none-single"], entries["chunk"], entries["zstd-single"]))
    protobuf_seeds()


def pb_varint(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def pb_bytes(num: int, value: bytes) -> bytes:
    return varint(num << 3 | 2) + varint(len(value)) + value


def protobuf_seeds() -> None:
    """``[selector][fz.Root]`` for the typed_protobuf target (the selector names the version)."""
    out = SEEDS / "typed_protobuf"
    out.mkdir(exist_ok=True)
    item = pb_bytes(1, b"sku-1") + pb_varint(2, 3)
    node = pb_varint(1, 1) + pb_bytes(2, pb_varint(1, 2) + pb_bytes(2, pb_varint(1, 3)))
    full = b"".join(
        [
            pb_varint(1, (1 << 64) - 42),  # id = -42
            pb_bytes(2, b"fig"),
            varint(3 << 3 | 5) + struct.pack("<f", 2.5),  # ratio, a float in version 0
            pb_varint(4, 1),
            pb_bytes(5, b"\x00\x01\xff"),
            pb_varint(6, 2),
            pb_bytes(7, item),
            pb_bytes(8, item) + pb_bytes(8, pb_bytes(1, b"b")),
            pb_bytes(9, varint(1) + varint(0) + varint(14)),  # packed sint32 -1, 0, 7
            pb_bytes(10, pb_bytes(1, b"z") + pb_varint(2, 26)),
            pb_varint(11, 0),
            pb_varint(12, (1 << 64) - 1),
            varint(13 << 3 | 5) + struct.pack("<I", 4_000_000_000),
            varint(14 << 3 | 1) + struct.pack("<q", -7),
            pb_bytes(15, node),
            pb_bytes(16, pb_varint(1, 9) + pb_bytes(2, item)),
            pb_bytes(17, b"\x01\x00\x01"),
        ]
    )
    v1 = full.replace(varint(3 << 3 | 5) + struct.pack("<f", 2.5), varint(3 << 3 | 1) + struct.pack("<d", 2.5))
    (out / "v0-full").write_bytes(b"\x00" + full)
    (out / "v1-full").write_bytes(b"\x01" + v1 + pb_bytes(18, b"a note"))
    (out / "v0-empty").write_bytes(b"\x00")
    (out / "v1-unknown-field").write_bytes(b"\x01" + pb_varint(99, 5) + pb_bytes(2, b"x"))
    (out / "v0-truncated").write_bytes(b"\x00" + full[: len(full) // 2])
    (out / "v2-unknown-version").write_bytes(b"\x02" + pb_bytes(2, b"x"))


if __name__ == "__main__":
    main()
