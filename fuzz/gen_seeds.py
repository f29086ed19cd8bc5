"""Writes the fuzz seed corpus into fuzz/seeds/ (deterministic, small).

    . .venv/bin/activate && python fuzz/gen_seeds.py

seeds/decode_entry/*: valid entries from ``pulsar_entries.encode_entry``
(every codec, single and batch, checksum on/off, broker prefix, keys,
properties, null values), and KoP Kafka entries (every Kafka codec).
seeds/decompress/*: ``[codec byte][u32 BE uncompressed size][compressed payload]``,
the layout of the ``decompress`` target, taken from the same entries.
seeds/offload/*: ``[u32 BE index length][index object][data object]``, offload objects written by
``pulsar_entries.offload`` (ledger-based v1 and streaming v2, several block sizes).
"""

import pathlib
import random
import shutil

import pulsar_entries

CODECS = ["none", "lz4", "zlib", "zstd", "snappy"]
CODEC_BYTE = {c: i for i, c in enumerate(CODECS)}  # Codec::ALL order in the core crate

root = pathlib.Path(__file__).resolve().parent / "seeds"
entry_dir, dec_dir = root / "decode_entry", root / "decompress"
for d in (entry_dir, dec_dir):
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)

rng = random.Random(20240601)


def text(n):
    return ('{"id":%d,"v":"%s"}' % (rng.randrange(10**6), "ab" * (n // 2))).encode()[:n]


def write(dir_, name, data):
    (dir_ / name).write_bytes(data)


for codec in CODECS:
    # A single message with a key, properties and event time.
    single = pulsar_entries.encode_entry(
        [{"value": text(300), "key": "k1", "properties": {"a": "1"}, "event_time": 1_700_000_000_000}],
        compression=codec,
        publish_time=1_700_000_000_001,
        sequence_id=7,
    )
    write(entry_dir, f"{codec}-single", single)
    # A batch of 4 with a null value, a binary key, an ordering key; broker prefix.
    batch = pulsar_entries.encode_entry(
        [
            {"value": text(120), "key": "k", "properties": {"p": "q", "r": "s"}},
            {"value": None},
            {"value": text(80), "key": b"\x00\xff", "ordering_key": b"ok", "sequence_id": 99},
            {"value": b""},
        ],
        compression=codec,
        publish_time=1_700_000_000_002,
        broker_timestamp=1_700_000_000_003,
        broker_index=41,
        properties={"entry.format": "x"},
    )
    write(entry_dir, f"{codec}-batch4-bem", batch)
    # A larger batch, no checksum.
    big = pulsar_entries.encode_entry(
        [{"value": text(rng.randrange(20, 200))} for _ in range(20)],
        compression=codec,
        publish_time=1_700_000_000_004,
        checksum=False,
    )
    write(entry_dir, f"{codec}-batch20-nocrc", big)
    if codec != "none":
        for name, entry in (("single", single), ("batch4", batch)):
            p = pulsar_entries.parse_entry(entry)
            size = p["metadata"]["uncompressed_size"]
            write(dec_dir, f"{codec}-{name}", bytes([CODEC_BYTE[codec]]) + size.to_bytes(4, "big") + p["payload"])

# A batch of one (batch framing with a single record) and an empty-value single.
write(entry_dir, "none-batch1", pulsar_entries.encode_entry([{"value": b"x"}], batch=True))
write(entry_dir, "none-null-value", pulsar_entries.encode_entry([{"value": None}]))
write(dec_dir, "none-raw", bytes([0]) + (5).to_bytes(4, "big") + b"hello")


# Shapes encode_entry does not write: extra MessageMetadata fields appended to a
# checksum-less entry (protobuf accepts fields in any order).
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, value):
    return varint(num << 3 | 2) + varint(len(value)) + value


def with_extra_fields(entry, extra, payload=None):
    md_size = int.from_bytes(entry[:4], "big")
    md, rest = entry[4 : 4 + md_size], entry[4 + md_size :]
    md += extra
    return len(md).to_bytes(4, "big") + md + (rest if payload is None else payload)


plain = pulsar_entries.encode_entry([{"value": b"marker-body"}], checksum=False)
write(entry_dir, "marker", with_extra_fields(plain, field_varint(20, 21)))  # marker_type 21
write(
    entry_dir,
    "encrypted",
    with_extra_fields(plain, field_bytes(13, field_bytes(1, b"key") + field_bytes(2, b"\x01\x02")) + field_bytes(14, b"RSA")),
)
write(
    entry_dir,
    "chunk",
    with_extra_fields(
        plain, field_bytes(26, b"uuid-1") + field_varint(27, 2) + field_varint(28, 22) + field_varint(29, 0)
    ),
)
# PIP-429 compacted batch: 3 messages declared, indexes 0 and 2 retained.
three = pulsar_entries.encode_entry([{"value": b"a"}, {"value": b"b"}, {"value": b"c"}], checksum=False)
write(entry_dir, "compacted", with_extra_fields(three, field_varint(31, 0) + field_varint(31, 2)))
# Regression (fuzz/README.md, finding 1): a batch declaring num_messages_in_batch = 0.
write(entry_dir, "regress-empty-batch", bytes.fromhex("000000090a0170100018015800"))

# KoP `entry.format=kafka` entries (the built-in Kafka processor), every Kafka codec,
# two batches in one entry, broker-stamped.
from pulsar_entries import kafka  # noqa: E402

for codec in kafka.CODECS:
    records = [{"key": b"k%d" % i, "value": text(40), "headers": [("h", b"\xff\x00")], "timestamp": 1_700_000_000_000 + i}
               for i in range(3)]
    batches = [kafka.record_batch(records, compression=codec, base_timestamp=1_700_000_000_000),
               kafka.record_batch(records[:1], compression=codec, base_timestamp=1_700_000_000_000)]
    kop = kafka.kop_entry(batches, publish_time=1_700_000_000_000)
    stamped = pulsar_entries.stamp(pulsar_entries.entries_table([kop]), timestamps=1_700_000_000_001)
    write(entry_dir, f"kop-{codec}", stamped["data"][0].as_py())
write(entry_dir, "kop-control", kafka.kop_entry([kafka.control_batch(True, producer_id=7, timestamp=1)], publish_time=1))

files = list(root.rglob("*"))
total = sum(f.stat().st_size for f in files if f.is_file())
print(f"{sum(f.is_file() for f in files)} seed files, {total} bytes")


# Offload objects: a few ledgers of entries taken from above, small blocks so there are several.
import tempfile  # noqa: E402

from pulsar_entries import offload  # noqa: E402

off_dir = root / "offload"
shutil.rmtree(off_dir, ignore_errors=True)
off_dir.mkdir(parents=True)
seed_entries = [p.read_bytes() for p in sorted(entry_dir.iterdir())]
for version, block in [(1, 600), (1, 4096), (2, 300)]:
    ids = range(len(seed_entries))
    table = pulsar_entries.entries_table(seed_entries, ledger_id=[3 + i % 2 if version == 2 else 3 for i in ids])
    if version == 2:
        table = table.set_column(1, "entry_id", __import__("pyarrow").array([i // 2 for i in ids], "int64"))
    size = max(block, max(map(len, seed_entries)) + 140) if version == 1 else block
    with tempfile.TemporaryDirectory() as d:
        o = offload.write_offloaded_ledger(table, d, index_version=version, block_size=size, ctime=1)
        index = pathlib.Path(o.index_path).read_bytes()
        data = pathlib.Path(o.data_path).read_bytes()
    write(off_dir, f"v{version}-{block}", len(index).to_bytes(4, "big") + index + data)
