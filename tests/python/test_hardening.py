"""Issue 16, Rust-side items through the package: invalid UTF-8 (item 5),
allocation bounded by evidence under RLIMIT_AS (items 6, 7), and compaction
counting Kafka-on-Pulsar entries apart from unreadable ones (item 12)."""

import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries import kafka

BAD = b"\x80\xc3\xff"
REPLACED = "p\ufffd\ufffd\ufffdq"


def corrupt(entry: bytes) -> bytes:
    assert b"@#@" in entry
    return entry.replace(b"@#@", BAD)


def bad_batch() -> bytes:
    """Three keyed messages; the producer name and message 1's key hold invalid UTF-8."""
    messages = [{"key": k, "value": k.encode()} for k in ("k0", "p@#@q", "k2")]
    entry = pe.encode_entry(messages, producer_name="p@#@q", checksum=False, publish_time=1)
    return corrupt(entry)


def entries(*data: bytes) -> pa.Table:
    return pa.table(
        {
            "ledger_id": pa.array([1] * len(data), pa.int64()),
            "entry_id": pa.array(range(len(data)), pa.int64()),
            "data": pa.array(data, pa.binary()),
        }
    )


def test_invalid_utf8_is_replaced_by_default_keeping_every_message_of_the_batch():
    out = pe.decode(entries(bad_batch()))
    assert out.num_rows == 3
    assert out["error"].to_pylist() == [None] * 3
    assert out["producer_name"].to_pylist() == [REPLACED] * 3
    assert out["key"].to_pylist() == ["k0", REPLACED, "k2"]
    # The raw bytes stay reachable: the value is untouched, and parse_entry
    # (strict) names the field and offset.
    assert out["value"].to_pylist()[1] == b"p" + BAD + b"q"


def test_utf8_errors_error_gives_one_error_row_naming_the_field():
    out = pe.decode(entries(bad_batch()), utf8_errors="error")
    assert out.num_rows == 1
    assert "`producer_name` is not UTF-8" in out["error"][0].as_py()
    with pytest.raises(ValueError, match="utf8_errors"):
        pe.decode(entries(bad_batch()), utf8_errors="ignore")


def test_cli_decode_utf8_errors_option(tmp_path):
    src = tmp_path / "entries.parquet"
    pq.write_table(entries(bad_batch()), src)
    for mode, rows in [("replace", 3), ("error", 1)]:
        out = tmp_path / f"out-{mode}.parquet"
        utf8 = ["--utf8-errors", mode]
        run = subprocess.run(
            [sys.executable, "-m", "pulsar_entries", "--engine", "local", "decode", str(src), str(out), *utf8],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        table = pq.read_table(out)
        assert table.num_rows == rows, mode
        errors = table["error"].null_count
        assert errors == (3 if mode == "replace" else 0), mode


CHILD = """
import resource, sys, time
import pyarrow as pa
import pulsar_entries as pe
pa.table({{"x": pa.array([b"warm-up"], pa.binary())}}).to_pylist()
# The address space the interpreter and pyarrow hold already, plus the headroom.
size = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) << 10
limit = size + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
{body}
"""


def run_capped(body: str, headroom: int) -> subprocess.CompletedProcess:
    """Runs ``body`` in a child whose RLIMIT_AS is its own address space after
    importing pyarrow (~2.4 GiB, mostly allocator reservations) plus ``headroom``."""
    code = CHILD.format(body=textwrap.dedent(body))
    return subprocess.run([sys.executable, "-c", code, str(headroom)], capture_output=True, text=True, timeout=120)


def test_zstd_and_zlib_claims_give_error_rows_without_allocating_them():
    # A 40-odd-byte entry claiming ZSTD / ZLIB with uncompressed_size = 256 MiB,
    # 64 times per call, with 200 MiB of address space to spare: before the fix
    # each claim cost a 256 MiB allocation (and memset).
    body = """
    zstd = bytes.fromhex("28b52ffd640000000010") + b"\\x01" * 14
    zlib = bytes.fromhex("789c6300") + b"\\x00" * 20
    for codec, payload in [(3, zstd), (2, zlib)]:
        md = bytes([0x0a, 1, 0x70, 0x10, 0, 0x18, 1, 0x40, codec, 0x48, 0x80, 0x80, 0x80, 0x80, 0x01])
        entry = len(md).to_bytes(4, "big") + md + payload
        assert len(entry) <= 48, len(entry)
        t = pa.table({"ledger_id": pa.array([1] * 64, pa.int64()), "entry_id": pa.array(range(64), pa.int64()),
                      "data": pa.array([entry] * 64, pa.binary())})
        started = time.perf_counter()
        out = pe.decode(t)
        took = time.perf_counter() - started
        errors = out["error"].to_pylist()
        assert all(errors), errors[:2]
        assert "can hold" in errors[0], errors[0]
        assert took < 5, took
    print("ok")
    """
    run = run_capped(body, 200 << 20)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-2000:]


def test_chunk_zero_claims_do_not_reserve_their_total_under_rlimit_as():
    # 100 chunk-0 entries of ~50 bytes each claiming a 256 MiB message: 25 GiB
    # of reservations before the fix (the process aborted with no error row);
    # 1 GiB of address space to spare.
    body = """
    from pulsar_entries import reassemble_chunks
    entries = []
    for i in range(100):
        uuid = f"u-{i}".encode()
        md = (bytes([0x0a, 1, 0x70, 0x10, i, 0x18, i + 1]) + bytes([0xd2, 0x01, len(uuid)]) + uuid
              + bytes([0xd8, 0x01, 2, 0xe0, 0x01, 0x80, 0x80, 0x80, 0x80, 0x01, 0xe8, 0x01, 0]))
        entries.append(len(md).to_bytes(4, "big") + md + b"first chunk bytes")
    t = pa.table({"ledger_id": pa.array([1] * 100, pa.int64()), "entry_id": pa.array(range(100), pa.int64()),
                  "data": pa.array(entries, pa.binary())})
    decoded = pe.decode(t)
    assert decoded["error"].null_count == 100, decoded["error"].to_pylist()[:2]
    assert decoded["total_chunk_size"].to_pylist() == [256 << 20] * 100
    out = reassemble_chunks(decoded, max_pending=None, expire_after_ms=None)
    assert out.num_rows == 100 and set(out["status"].to_pylist()) == {"incomplete"}, out["status"].to_pylist()[:3]
    print("ok")
    """
    run = run_capped(body, 1 << 30)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-2000:]


def test_compaction_counts_kop_entries_apart_from_unreadable_ones():
    batch = kafka.record_batch([{"key": b"k", "value": b"v"}])
    kop = kafka.kop_entry([batch], publish_time=1)
    keyed = pe.encode_entry([{"key": "k", "value": b"x"}], publish_time=2)
    corrupt_entry = b"\x00\x00\x00\xc8\x01\x02\x03"
    c = pe.Compactor()
    t = entries(kop, keyed, corrupt_entry)
    c.observe(t)
    out = c.write(t)
    stats = c.stats()
    assert (stats["kafka_entries"], stats["unreadable_entries"]) == (1, 1), stats
    kop_rows = [r for r in out.to_pylist() if r["data"] == kop]
    assert len(kop_rows) == 1
    assert "Kafka-on-Pulsar" in kop_rows[0]["error"] and "payload_size" not in kop_rows[0]["error"]
