"""Tiered-storage offload objects: the Python API, and interop with Apache Pulsar's offloader.

The interop half drives `tests/interop/java` (`run.sh offload-write` / `offload-read`):
Pulsar's own `BlobStoreManagedLedgerOffloader` writes ledger objects from an in-memory ledger,
Pulsar's index/header parsers and read handles read ours. Java 17+ and Maven are required; their
absence or a harness failure FAILS these tests, never skips them.
"""

from __future__ import annotations

import json
import os
import pickle
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_entries as pe
from pulsar_entries import _native, offload
from pulsar_entries._sample import generate_topic

from support.java_harness import run_harness

U1 = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
U2 = "9b2d6f1e-0c4a-4e7b-8f00-aabbccddeeff"
CTIME = 1_700_000_000_000
ML_NAME = "public/default/persistent/offload-interop"  # the harness's managed ledger


def table(entries, ledger_id=1, first=0):
    return pe.entries_table(entries, ledger_id=ledger_id, entry_ids=range(first, first + len(entries)))


def rand_entries(rng: random.Random, n: int, max_size: int) -> list[bytes]:
    return [rng.randbytes(rng.randrange(0, max_size + 1)) for _ in range(n)]


def clean(t: pa.Table) -> list[dict]:
    assert t.column_names == ["ledger_id", "entry_id", "data", "error"]
    errors = [e for e in t["error"].to_pylist() if e is not None]
    assert not errors, errors
    return t.select(["ledger_id", "entry_id", "data"]).to_pylist()


def errors(t: pa.Table) -> list[str]:
    return [e for e in t["error"].to_pylist() if e is not None]


# ------------------------------------------------------------------------------ API round trips


def test_sample_topic_round_trips_through_offload_objects(tmp_path):
    topic = generate_topic(400, entries_per_ledger=150, seed=3)
    objects = offload.write_offloaded_ledgers(topic.entries, tmp_path, block_size=64 * 1024, ctime=CTIME)
    assert [o.ledger_id for o in objects] == [1000, 1001, 1002]
    assert offload.discover(tmp_path) == objects
    read = pa.concat_tables(offload.read_offloaded_ledger(o.data_path) for o in objects)
    assert clean(read) == topic.entries.to_pylist()
    # The read output feeds decode unchanged and decodes exactly like the original entries.
    assert pe.decode(read.drop_columns(["error"])).equals(pe.decode(topic.entries))
    blocks = offload.list_blocks(objects[0].index_path)
    assert len(blocks) > 3 and blocks[0].offset == 0
    assert sum(b.length for b in blocks) == os.path.getsize(objects[0].data_path)


def test_streaming_object_with_several_ledgers(tmp_path):
    rng = random.Random(5)
    parts = [table(rand_entries(rng, 30, 700), ledger_id=l, first=f) for l, f in [(9, 0), (4, 17), (30, 2)]]
    entries = pa.concat_tables(parts)
    obj = offload.write_offloaded_ledger(entries, tmp_path, uuid=U2, index_version=2, block_size=3000, ctime=CTIME)
    assert (Path(obj.data_path).name, Path(obj.index_path).name) == (U2, f"{U2}-index")
    assert obj.ledger_id is None
    assert offload.discover(tmp_path) == [obj]
    want = sorted(entries.to_pylist(), key=lambda r: (r["ledger_id"], r["entry_id"]))
    assert clean(offload.read_offloaded_ledger(obj.data_path)) == want
    assert clean(offload.read_offloaded_ledger(obj.data_path, ledger_id=4)) == [r for r in want if r["ledger_id"] == 4]
    index = offload.read_offload_index(obj.index_path)
    assert index["version"] == 2
    by_id = {l["ledger_id"]: l for l in index["ledgers"]}
    assert by_id[4]["last_entry_id"] == 46 and by_id[4]["metadata"]["kind"] == "ledger_info"
    assert by_id[30]["metadata"]["entries"] == 32 and by_id[30]["metadata"]["timestamp"] == CTIME


def test_block_splits_read_from_byte_ranges(tmp_path):
    rng = random.Random(7)
    entries = rand_entries(rng, 200, 2000)
    obj = offload.write_offloaded_ledger(table(entries, ledger_id=77), tmp_path, uuid=U1, block_size=10_000)
    blocks = offload.list_blocks(obj.index_path)
    splits = offload.split_blocks(blocks, target_bytes=35_000)
    assert 1 < len(splits) < len(blocks)
    raw = Path(obj.data_path).read_bytes()
    parts = []
    for split in splits:
        start, end = split[0].offset, split[-1].offset + split[-1].length
        assert end - start <= 35_000
        parts.append(offload.read_blocks(memoryview(raw)[start:end], split))
    assert clean(pa.concat_tables(parts)) == clean(offload.read_offloaded_ledger(obj.data_path))
    # A range read fetches only the blocks it needs and returns exactly the range.
    got = offload.read_offloaded_ledger(obj.data_path, first_entry=50, last_entry=60)
    assert [r["entry_id"] for r in clean(got)] == list(range(50, 61))
    assert [r["data"] for r in clean(got)] == entries[50:61]
    # Through a non-local pyarrow filesystem (SubTreeFileSystem: opened, never memory-mapped).
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    name = Path(obj.data_path).name
    assert clean(offload.read_offloaded_ledger(name, filesystem=fs, first_entry=199)) == [
        {"ledger_id": 77, "entry_id": 199, "data": entries[199]}
    ]
    assert offload.discover("", filesystem=fs) == [offload.OffloadedObject(name, f"{name}-index", 77, U1)]
    assert clean(offload.read_offloaded_ledger(f"file://{obj.data_path}")) == clean(
        offload.read_offloaded_ledger(obj.data_path)
    )


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=40),
    extra=st.integers(0, 5000),
    version=st.sampled_from([1, 2]),
)
def test_round_trip_property(tmp_path_factory, sizes, extra, version):
    rng = random.Random(sum(sizes) + extra)
    entries = [rng.randbytes(n) for n in sizes]
    d = tmp_path_factory.mktemp("rt")
    block = max(sizes) + 140 + extra if version == 1 else extra
    obj = offload.write_offloaded_ledger(table(entries, ledger_id=3), d, index_version=version, block_size=block)
    got = clean(offload.read_offloaded_ledger(obj.data_path))
    assert got == table(entries, ledger_id=3).to_pylist()


# ------------------------------------------------------------------------------ bad input


def test_damage_becomes_error_rows_and_nothing_is_lost(tmp_path):
    entries = [bytes([i]) * 100 for i in range(40)]
    obj = offload.write_offloaded_ledger(table(entries, ledger_id=5), tmp_path, uuid=U1, block_size=700)
    blocks = offload.list_blocks(obj.index_path)
    raw = bytearray(Path(obj.data_path).read_bytes())
    # 1. Second block's header magic destroyed: its entries are reported missing, the rest read.
    raw[blocks[1].offset] ^= 0xFF
    Path(obj.data_path).write_bytes(raw)
    t = offload.read_offloaded_ledger(obj.data_path)
    errs = errors(t)
    assert errs[0].startswith(f"bad block header magic at data-object offset {blocks[1].offset}")
    b = blocks[1]
    assert errs[-1].startswith(
        f"entries {b.first_entry_id}..={b.last_entry_id} ({b.last_entry_id - b.first_entry_id + 1} entries) "
        "of ledger 5 are missing"
    )
    ok = [r for r in t.to_pylist() if r["error"] is None]
    assert len(ok) == 40 - (b.last_entry_id - b.first_entry_id + 1)
    assert all(r["data"] == entries[r["entry_id"]] for r in ok)
    # 2. Truncated at a block boundary: the index knows what is gone.
    Path(obj.data_path).write_bytes(bytes(raw[: blocks[-1].offset]))
    last = blocks[-1]
    assert errors(offload.read_offloaded_ledger(obj.data_path))[-1].startswith(f"entries {last.first_entry_id}..=39 ")
    # 3. Broken index: one error row says so, the headers are read alone.
    Path(obj.data_path).write_bytes(bytes(raw))
    Path(obj.index_path).write_bytes(b"\x00" * 10)
    t = offload.read_offloaded_ledger(obj.data_path)
    assert errors(t)[0].startswith("index object unreadable (bad index magic at index-object offset 0")
    with pytest.raises(pe.OffloadFormatError, match="bad index magic"):
        offload.list_blocks(obj.index_path)
    # 4. No index at all: read from the headers.
    os.remove(obj.index_path)
    assert offload.discover(tmp_path) == [offload.OffloadedObject(obj.data_path, None, 5, U1)]
    assert len([r for r in offload.read_offloaded_ledger(obj.data_path).to_pylist() if r["error"] is None]) == len(ok)


def test_garbage_never_raises(tmp_path):
    rng = random.Random(11)
    for n in (0, 3, 50, 128, 1000):
        data = rng.randbytes(n)
        t = pe.offload.read_blocks(data, [offload.OffloadBlock(1, 0, 9, 1, 0, n)])
        assert t.num_rows >= 1 or n == 0
        assert errors(t) or n == 0
        assert all(r["data"] is None for r in t.to_pylist())


def test_writer_rejects_what_pulsar_could_not_offload(tmp_path):
    with pytest.raises(ValueError, match=r"entry 1 of ledger 1 \(5000 bytes\) does not fit in a 1000-byte block"):
        offload.write_offloaded_ledger(table([b"a", b"x" * 5000]), tmp_path, block_size=1000)
    with pytest.raises(ValueError, match="contiguous, found 3 after 1"):
        offload.write_offloaded_ledger(pe.entries_table([b"a", b"b", b"c"], entry_ids=[0, 1, 3]), tmp_path)
    with pytest.raises(ValueError, match="starts at entry 0"):
        offload.write_offloaded_ledger(table([b"a"], first=4), tmp_path)
    with pytest.raises(ValueError, match="use write_offloaded_ledgers"):
        offload.write_offloaded_ledger(pe.entries_table([b"a", b"b"], ledger_id=[1, 2], entry_ids=[0, 0]), tmp_path)
    with pytest.raises(ValueError, match="is not a UUID"):
        offload.write_offloaded_ledger(table([b"a"]), tmp_path, uuid="nope")


def test_discover_pairs_names_and_ignores_the_rest(tmp_path):
    a = offload.write_offloaded_ledger(table([b"x"], ledger_id=12), tmp_path, uuid=U1)
    b = offload.write_offloaded_ledger(table([b"y"], ledger_id=3), tmp_path, uuid=U2)
    (tmp_path / "entries.parquet").write_bytes(b"")
    (tmp_path / f"{U2}-ledger-99-index").write_bytes(b"")  # an index without its data object
    assert offload.discover(tmp_path) == [b, a]
    assert offload.discover(a.index_path) == [a]
    # A URI in, URIs out: the paths work without passing a filesystem.
    uris = offload.discover(f"file://{tmp_path}")
    assert uris == [o._replace(data_path=f"file://{o.data_path}", index_path=f"file://{o.index_path}") for o in [b, a]]
    assert clean(offload.read_offloaded_ledger(uris[1].data_path)) == [{"ledger_id": 12, "entry_id": 0, "data": b"x"}]
    with pytest.raises(ValueError, match="not named like an offload object"):
        offload.discover(tmp_path / "entries.parquet")


# ------------------------------------------------------------------------------ interop with Pulsar


def harness(command: str, requests: list[dict]) -> list[dict]:
    """`run.sh offload-write|offload-read` over a batch of requests (one JVM start)."""
    out = run_harness(command, json.dumps(requests))
    assert len(out) == len(requests)
    return out


LEDGER_CASES = [
    # (name, entries, max block size)
    ("one-block", lambda rng: rand_entries(rng, 6, 1000), 64 * 1024 * 1024),
    ("many-blocks", lambda rng: rand_entries(rng, 300, 1500), 9000),
    ("empty-entries", lambda rng: [b""] * 50, 400),
    ("exact-fit", lambda rng: [rng.randbytes(100) for _ in range(30)], 128 + 4 * 112),
    ("sample-topic", lambda rng: generate_topic(120, seed=1).entries["data"].to_pylist(), 60_000),
]
#: Entry 2 is larger than a 1000-byte block.
OVERSIZED = [b"a" * 100, b"b" * 100, b"c" * 3000, b"d" * 10]


def streaming_ledgers() -> dict[int, tuple[int, list[bytes]]]:
    """ledger id -> (first entry id, entries); ids chosen so Java's HashMap reorders them."""
    rng = random.Random(3)
    return {20: (0, rand_entries(rng, 40, 900)), 3: (5, rand_entries(rng, 25, 900)), 7: (0, [b"z"])}


@pytest.fixture(scope="module")
def pulsar_written(tmp_path_factory):
    """Objects written by Pulsar's code, all in one harness run: ledger objects by
    BlobStoreManagedLedgerOffloader.offload (the last one with an oversized entry), then one
    streaming object from BufferedOffloadStream and the V2 index builder."""
    rng = random.Random(2024)
    cases = [(name, make(rng), block) for name, make, block in LEDGER_CASES] + [("oversized", OVERSIZED, 1000)]
    requests = [
        {
            "out_dir": str(tmp_path_factory.mktemp(f"java-{name}")),
            "uuid": U1,
            "variant": "ledger",
            "max_block_size": block,
            "ctime": CTIME,
            "ledgers": [{"ledger_id": 100 + i, "entries": [e.hex() for e in entries]}],
        }
        for i, (name, entries, block) in enumerate(cases)
    ]
    requests.append(
        {
            "out_dir": str(tmp_path_factory.mktemp("java-streaming")),
            "uuid": U2,
            "variant": "streaming",
            "min_block_size": 4000,
            "ctime": CTIME,
            "ledgers": [
                {"ledger_id": l, "first_entry_id": f, "entries": [x.hex() for x in e]}
                for l, (f, e) in sorted(streaming_ledgers().items())
            ],
        }
    )
    out = harness("offload-write", requests)
    return {
        "ledger": list(zip(cases[:-1], out[: len(cases) - 1])),
        "oversized": out[len(cases) - 1],
        "streaming": out[-1],
    }


@pytest.mark.interop
def test_objects_written_by_pulsar_read_identically(pulsar_written, tmp_path):
    for i, ((name, entries, block), out) in enumerate(pulsar_written["ledger"]):
        ledger = 100 + i
        assert Path(out["data"]).name == f"{U1}-ledger-{ledger}"
        assert Path(out["index"]).name == f"{U1}-ledger-{ledger}-index"
        assert out["data_user_metadata"]["role"] == "data"
        assert out["index_user_metadata"]["s3managedledgeroffloaderformatversion"] == "1"
        got = offload.read_offloaded_ledger(out["data"])
        assert clean(got) == table(entries, ledger_id=ledger).to_pylist(), name
        index = offload.read_offload_index(out["index"])
        md = index["ledgers"][0]["metadata"]
        assert (index["version"], index["data_header_length"]) == (1, 128)
        assert index["data_object_length"] == os.path.getsize(out["data"])
        assert (md["last_entry_id"], md["length"], md["state"], md["digest_type"]) == (
            len(entries) - 1,
            sum(map(len, entries)),
            "CLOSED",
            "CRC32C",
        )
        assert md["custom_metadata"]["pulsar/managed-ledger"] == ML_NAME.encode()
        # Our writer, given the same entries, metadata and block size, writes the same bytes.
        ours = offload.write_offloaded_ledger(
            table(entries, ledger_id=ledger),
            tmp_path / name,
            uuid=U1,
            block_size=block,
            ctime=CTIME,
            managed_ledger_name=ML_NAME,
        )
        assert Path(ours.data_path).read_bytes() == Path(out["data"]).read_bytes(), name
        assert Path(ours.index_path).read_bytes() == Path(out["index"]).read_bytes(), name


@pytest.mark.interop
def test_pulsars_oversized_entry_loss_is_reported(pulsar_written):
    """Pulsar's offloader, meeting an entry larger than a block, writes an empty block, stops,
    and completes the offload: the object lacks the rest of the ledger. We report the gap."""
    out = pulsar_written["oversized"]
    rows = offload.read_offloaded_ledger(out["data"]).to_pylist()
    ledger = 100 + len(LEDGER_CASES)
    assert [r["data"] for r in rows[:2]] == OVERSIZED[:2]
    assert rows[2]["entry_id"] == 2 and rows[2]["data"] is None
    assert rows[2]["error"].startswith(f"entries 2..=3 (2 entries) of ledger {ledger} are missing from the data object")
    assert len(rows) == 3
    index = offload.read_offload_index(out["index"])
    blocks = index["ledgers"][0]["blocks"]
    # The empty block is indexed but not counted in the data object length.
    assert [b["first_entry_id"] for b in blocks] == [0, 2]
    assert index["data_object_length"] == blocks[1]["offset"] < os.path.getsize(out["data"])


@pytest.mark.interop
def test_streaming_objects_written_by_pulsar_match_ours(pulsar_written, tmp_path):
    ledgers = streaming_ledgers()
    entries = pa.concat_tables(table(e, ledger_id=l, first=f) for l, (f, e) in ledgers.items())
    ours = offload.write_offloaded_ledger(entries, tmp_path, uuid=U2, index_version=2, block_size=4000, ctime=CTIME)
    written = pulsar_written["streaming"]
    # Same bytes: blocks from Pulsar's BufferedOffloadStream, index from its V2 builder (whose
    # ledgers follow a Java HashMap's order: 3, 20, 7).
    assert Path(written["data"]).read_bytes() == Path(ours.data_path).read_bytes()
    assert Path(written["index"]).read_bytes() == Path(ours.index_path).read_bytes()
    assert [l["ledger_id"] for l in offload.read_offload_index(written["index"])["ledgers"]] == [3, 20, 7]
    want = sorted(entries.to_pylist(), key=lambda r: (r["ledger_id"], r["entry_id"]))
    assert clean(offload.read_offloaded_ledger(written["data"])) == want


@pytest.fixture(scope="module")
def pulsar_read(tmp_path_factory):
    """Objects we write, read back by Pulsar's index/header parsers and read handles in one
    harness run: every ledger case, a range read, and a streaming object."""
    rng = random.Random(99)
    root = tmp_path_factory.mktemp("ours")
    cases = []
    for i, (name, make, block) in enumerate(LEDGER_CASES):
        entries = make(rng)
        obj = offload.write_offloaded_ledger(
            table(entries, ledger_id=200 + i), root / name, uuid=U2, block_size=block, ctime=CTIME
        )
        cases.append((entries, obj))
    ledgers = streaming_ledgers()
    streaming = offload.write_offloaded_ledger(
        pa.concat_tables(table(e, ledger_id=l, first=f) for l, (f, e) in ledgers.items()),
        root / "streaming",
        uuid=U1,
        index_version=2,
        block_size=4000,
    )
    many_entries, many = cases[1]
    requests = [
        {"data": o.data_path, "index": o.index_path, "variant": "ledger", "ledger_ids": [o.ledger_id]} for _, o in cases
    ]
    requests.append(
        {
            "data": many.data_path,
            "index": many.index_path,
            "variant": "ledger",
            "ledger_ids": [many.ledger_id],
            "first_entry_id": 137,
            "last_entry_id": 250,
        }
    )
    requests.append(
        {
            "data": streaming.data_path,
            "index": streaming.index_path,
            "variant": "streaming",
            "ledger_ids": sorted(ledgers),
            "start_entry_ids": {str(l): f for l, (f, _) in ledgers.items()},
        }
    )
    results = harness("offload-read", requests)
    return {
        "ledger": list(zip(cases, results[: len(cases)])),
        "range": (many_entries[137:251], many.ledger_id, results[len(cases)]),
        "streaming": (ledgers, results[-1]),
    }


@pytest.mark.interop
def test_objects_we_write_parse_in_pulsar(pulsar_read):
    for (entries, obj), res in pulsar_read["ledger"]:
        ours = offload.read_offload_index(obj.index_path)
        java = res["index"]
        assert java["version"] == 1
        assert java["data_object_length"] == ours["data_object_length"] == os.path.getsize(obj.data_path)
        assert java["data_header_length"] == 128
        assert java["ledger_metadata"]["last_entry_id"] == len(entries) - 1
        assert java["ledger_metadata"]["length"] == sum(map(len, entries))
        assert java["ledger_metadata"]["closed"] is True
        assert java["ledger_metadata"]["digest_type"] == "CRC32C"
        assert java["ledger_metadata"]["ensembles"] == {"0": ["bookie-1:3181", "bookie-2:3181"]}
        ours_blocks = offload.list_blocks(obj.index_path)
        assert [(b["first_entry_id"], b["part_id"], b["offset"], b["data_offset"]) for b in java["blocks"]] == [
            (b.first_entry_id, b.part_id, b.offset, b.offset + 128) for b in ours_blocks
        ]
        assert [(h["offset"], h["block_length"], h["first_entry_id"], h["header_length"]) for h in res["headers"]] == [
            (b.offset, b.length, b.first_entry_id, 128) for b in ours_blocks
        ]
        java_entries = res["entries"][str(obj.ledger_id)]
        assert java_entries["last_add_confirmed"] == len(entries) - 1
        assert [bytes.fromhex(h) for h in java_entries["entries"]] == entries
    want, ledger, res = pulsar_read["range"]
    assert [bytes.fromhex(h) for h in res["entries"][str(ledger)]["entries"]] == want


@pytest.mark.interop
def test_streaming_objects_we_write_parse_in_pulsar(pulsar_read):
    ledgers, res = pulsar_read["streaming"]
    assert res["index"]["version"] == 2
    for l, (f, e) in ledgers.items():
        got = res["entries"][str(l)]
        assert got["last_add_confirmed"] == f + len(e) - 1
        assert [bytes.fromhex(h) for h in got["entries"]] == e
    assert all(h["header_length"] == 128 for h in res["headers"])
    assert {h["ledger_id"] for h in res["headers"]} == set(ledgers)
    assert len(res["headers"]) == len(res["index"]["blocks"]) > 3


def test_offload_options_are_checked_when_built_and_pickle() -> None:
    o = _native.OffloadOptions()
    assert (o.block_size, o.managed_ledger_name, o.ensemble) == (None, offload.DEFAULT_MANAGED_LEDGER, None)
    assert (offload.DEFAULT_BLOCK_SIZE, offload.DEFAULT_STREAMING_BLOCK_SIZE) == (64 << 20, 5 << 20)
    shipped = _native.OffloadOptions(block_size=1 << 20, ensemble=["b:1"], write_quorum=1)
    assert pickle.loads(pickle.dumps(shipped)) == shipped != o
    assert repr(shipped).startswith("OffloadOptions(block_size=1048576, managed_ledger_name='public/default/")
    for bad, message in (
        ({"block_size": 1 << 31}, "exceeds"),
        ({"ensemble": []}, "at least one bookie"),
        ({"ack_quorum": 0}, "must be positive"),
    ):
        with pytest.raises(pe.OptionsError, match=message):
            _native.OffloadOptions(**bad)
