"""Issue 26: a broken or hostile cluster never crashes the reader or holds it past its timeout.
Fake bookies and a fake admin REST API on 127.0.0.1 (tests/python/support/fake_bookie.py)."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

import pulsar_entries as pe
import pulsar_entries._native as _native
from pulsar_entries import _cluster
from pulsar_entries._cluster.layout import Ledger, Partition, TopicLayout
from pulsar_entries._cluster.scan import MAX_RANGES_PER_LEDGER, plan_ranges

from support.admin_server import FakeAdmin
from support.fake_bookie import FakeBookie, metadata_text, topic_routes

TOPIC = "persistent://public/default/t"


def small(ledger: int, entry: int) -> bytes | None:
    return f"entry-{ledger}-{entry}".encode() if entry < 10 else None


def one_ledger(bookie: str, **meta: object) -> list[dict[str, object]]:
    return [{"ledgerId": 3, "entries": 0, "size": 0, "metadata": metadata_text(bookie, **meta)}]


@pytest.mark.parametrize("claim", [10**12, 2**63 - 1])
def test_a_huge_claimed_lac_reads_what_exists_and_ends_in_one_row(claim: int) -> None:
    # Before: `memory allocation of 8000000000008 bytes failed` (SIGABRT), or a PanicException.
    with (
        FakeBookie(small, lac=claim) as bk,
        FakeAdmin(topic_routes("public/default/t", one_ledger(bk.address, state="OPEN"))) as admin,
    ):
        t = pe.read_topic(TOPIC, admin_url=admin.url, timeout=5)
    good = t.filter(pa.compute.is_null(t["error"]))
    assert good["entry_id"].to_pylist() == list(range(10))
    assert t.num_rows < 10 + 100
    assert "beyond what the bookies hold" in t["error"][-1].as_py()
    assert f"..={claim}" in t["error"][-1].as_py()


def test_a_closed_ledger_claiming_more_than_the_managed_ledger_counts_is_bounded_with_a_row() -> None:
    meta = metadata_text("B", state="CLOSED", last_entry_id=10**12, length=1)
    with FakeBookie(small) as bk:
        ledgers = [{"ledgerId": 3, "entries": 4, "size": 40, "metadata": meta.replace("[B]", f"[{bk.address}]")}]
        with FakeAdmin(topic_routes("public/default/t", ledgers)) as admin:
            t = pe.read_topic(TOPIC, admin_url=admin.url, timeout=5)
    assert t["entry_id"].to_pylist() == [0, 1, 2, 3, 4]
    assert t["error"].to_pylist()[:4] == [None] * 4
    assert "counts 4 entries" in t["error"][4].as_py()


def test_iter_topic_streams_batches_within_the_budget() -> None:
    with (
        FakeBookie(small) as bk,
        FakeAdmin(
            topic_routes("public/default/t", one_ledger(bk.address, state="CLOSED", last_entry_id=9, length=100))
        ) as admin,
    ):
        batches = list(pe.iter_topic(TOPIC, admin_url=admin.url, timeout=5, memory_budget=16 << 20))
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    t = pa.Table.from_batches(batches)
    assert t["entry_id"].to_pylist() == list(range(10))
    # Arguments are checked when iter_topic is called, before any batch is asked for.
    with pytest.raises(ValueError, match="memory_budget"):
        pe.iter_topic(TOPIC, admin_url="http://127.0.0.1:1", memory_budget=1000)
    with pytest.raises(ValueError, match="deadline"):
        pe.iter_topic(TOPIC, admin_url="http://127.0.0.1:1", deadline=float("nan"))


def test_a_trickling_bookie_is_held_to_the_timeout() -> None:
    # Before: a byte every 0.5 s held a read with timeout=2 s for 51 s.
    with (
        FakeBookie(small, mode="trickle", trickle_s=0.5) as bk,
        FakeAdmin(
            topic_routes("public/default/t", one_ledger(bk.address, state="CLOSED", last_entry_id=2, length=30))
        ) as admin,
    ):
        start = time.monotonic()
        t = pe.read_topic(TOPIC, admin_url=admin.url, timeout=2)
        took = time.monotonic() - start
    assert took < 8, took
    errors = t["error"].to_pylist()
    assert all(e is not None for e in errors)
    assert "no answer within 2 s" in errors[0], errors[0]
    assert "os error" not in errors[0]


def test_a_deadline_bounds_the_whole_read() -> None:
    ledgers = [
        {
            "ledgerId": i,
            "entries": 3,
            "size": 30,
            "metadata": metadata_text("B", state="CLOSED", last_entry_id=2, length=30),
        }
        for i in range(1, 6)
    ]
    with FakeBookie(small, mode="silent") as bk:
        for led in ledgers:
            led["metadata"] = str(led["metadata"]).replace("[B]", f"[{bk.address}]")
        with FakeAdmin(topic_routes("public/default/t", ledgers)) as admin:
            start = time.monotonic()
            t = pe.read_topic(TOPIC, admin_url=admin.url, timeout=30, deadline=2)
            took = time.monotonic() - start
    assert took < 8, took
    assert set(t["ledger_id"].to_pylist()) == {1, 2, 3, 4, 5}, "every ledger accounted for"
    assert all(e is not None for e in t["error"].to_pylist())


def test_ctrl_c_stops_a_read_within_a_second(tmp_path: Path) -> None:
    # Before: Ctrl-C waited for the native call to return (31 s with timeout=30).
    with (
        FakeBookie(small, mode="silent") as bk,
        FakeAdmin(
            topic_routes("public/default/t", one_ledger(bk.address, state="CLOSED", last_entry_id=2, length=30))
        ) as admin,
    ):
        script = textwrap.dedent(
            f"""
            import pulsar_entries as pe, sys
            print("reading", flush=True)
            pe.read_topic({TOPIC!r}, admin_url={admin.url!r}, timeout=30)
            print("returned", flush=True)
            """
        )
        p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "reading"
            time.sleep(1.5)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=20)
            took = time.monotonic() - sent
        finally:
            p.kill()
            p.wait()
    assert "KeyboardInterrupt" in err, err
    assert took < 3, took


def test_the_planner_trusts_evidence_not_claims() -> None:
    meta = metadata_text("127.0.0.1:1", state="CLOSED", last_entry_id=3, length=40)
    node = _native.ledger_node_from_text(3, meta, b"")
    info = _native.ledger_metadata(3, node)
    # The REST count claims 10^9 entries; the ledger metadata says 4.
    led = Ledger(3, 10**9, 40, node, info)
    layout = TopicLayout(TOPIC, [Partition(TOPIC, -1, [led])], {})
    ranges = plan_ranges(layout, entries_per_partition=200)
    assert len(ranges) == 1 and ranges[0].entries == 4
    # Both claim 10^12: the plan stays bounded (before: a MemoryError on the driver).
    meta = metadata_text("127.0.0.1:1", state="CLOSED", last_entry_id=10**12 - 1, length=40)
    node = _native.ledger_node_from_text(3, meta, b"")
    led = Ledger(3, 10**12, 40, node, _native.ledger_metadata(3, node))
    start = time.monotonic()
    ranges = plan_ranges(TopicLayout(TOPIC, [Partition(TOPIC, -1, [led])], {}), entries_per_partition=50_000)
    assert len(ranges) <= MAX_RANGES_PER_LEDGER
    assert ranges[-1].segments[-1].last == 10**12 - 1
    assert time.monotonic() - start < 30


def test_one_bad_compacted_record_is_one_error_row() -> None:
    # Before: `Casting field 'ledger_id' with null values to non-nullable` failed the whole read.
    good = pe.to_ledger_records(pa.table({"ledger_id": [5, 5], "entry_id": [0, 1], "data": [b"a", b"b"]}))[
        "record"
    ].to_pylist()
    records = pa.table(
        {
            "ledger_id": pa.array([9, 9, 9], pa.int64()),
            "entry_id": pa.array([0, 1, 2], pa.int64()),
            "data": pa.array([good[0], b"\x00\x00\xff\xffgarbage", good[1]], pa.binary()),
            "error": pa.array([None, None, None], pa.string()),
        }
    )
    part = Partition(TOPIC, 2, [], Ledger(9, 3, 0, None))
    out = pa.concat_tables(list(_cluster.read.compacted_entries(records, part)))
    ok = out.filter(pa.compute.is_null(out["error"]))
    assert sorted(zip(ok["ledger_id"].to_pylist(), ok["entry_id"].to_pylist())) == [(5, 0), (5, 1)]
    bad = out.filter(pa.compute.is_valid(out["error"]))
    assert bad.num_rows == 1
    assert (bad["ledger_id"][0].as_py(), bad["entry_id"][0].as_py()) == (9, 1)
    assert "compacted ledger record 9:1" in bad["error"][0].as_py()
    assert out["partition"].to_pylist() == [2, 2, 2]


RSS_SCRIPT = """
import sys, time
import pyarrow as pa
import pyarrow.compute as pc
import pulsar_entries as pe

def hwm():
    # The peak RSS of this address space (ru_maxrss would carry the parent's over a fork).
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))

base = hwm()
rows = size = 0
start = time.monotonic()
for b in pe.iter_topic(sys.argv[1], admin_url=sys.argv[2], timeout=30, memory_budget=int(sys.argv[3])):
    rows += b.num_rows
    size += pc.sum(pc.binary_length(b.column(3))).as_py() or 0
took = time.monotonic() - start
peak = hwm()
print(rows, size, base * 1024, peak * 1024, took)
"""


def iter_topic_rss(total: int, budget: int, entry: int = 64 << 10) -> tuple[int, int, int, int, float]:
    """Reads a fake topic of ``total`` bytes (entries of ``entry`` bytes, ledgers of 1,000 entries)
    with ``iter_topic`` in a fresh interpreter: (rows, bytes, RSS after imports, peak RSS, seconds)."""
    n = total // entry
    blob = bytes(range(256)) * (entry // 256)
    per_ledger = 1000
    with FakeBookie(lambda _l, e: blob if e < per_ledger else None) as bk:
        ledgers = [
            {
                "ledgerId": i + 1,
                "entries": min(per_ledger, n - i * per_ledger),
                "size": entry * min(per_ledger, n - i * per_ledger),
                "metadata": metadata_text(
                    bk.address, state="CLOSED", last_entry_id=min(per_ledger, n - i * per_ledger) - 1, length=1
                ),
            }
            for i in range((n + per_ledger - 1) // per_ledger)
        ]
        with FakeAdmin(topic_routes("public/default/big", ledgers)) as admin:
            out = subprocess.run(
                [sys.executable, "-c", RSS_SCRIPT, "persistent://public/default/big", admin.url, str(budget)],
                capture_output=True,
                text=True,
                timeout=600,
                env=dict(os.environ),
            )
    assert out.returncode == 0, out.stderr
    rows, size, base, peak, took = out.stdout.split()
    return int(rows), int(size), int(base), int(peak), float(took)


@pytest.mark.slow
def test_iter_topic_reads_a_topic_8x_its_budget_in_bounded_memory() -> None:
    budget = 32 << 20
    rows, size, base, peak, _ = iter_topic_rss(8 * budget, budget)
    assert rows == 8 * budget // (64 << 10)
    assert size == 8 * budget
    # The bound: peak RSS within the budget + 150 MiB (the interpreter, pyarrow and the
    # module included).
    assert peak <= budget + (150 << 20), (base >> 20, peak >> 20)


SECRETS = ("TOPSECRETTOKEN", "PWSECRET", "S3CR3TKEY", "AKIAKEY")


@pytest.mark.spark
def test_secrets_stay_out_of_spark_plans(spark, capsys) -> None:
    from pulsar_entries.spark import register

    register(spark)
    with FakeBookie(small) as bk:
        ledgers = one_ledger(bk.address, state="CLOSED", last_entry_id=2, length=30)
        with FakeAdmin(topic_routes("public/default/t", ledgers)) as admin:
            df = (
                spark.read.format("pulsar")
                .option("adminUrl", admin.url)
                .option("adminToken", "TOPSECRETTOKEN")
                .option("ledgerPassword", "PWSECRET")
                .option("offloadPath", "s3://AKIAKEY:S3CR3TKEY@bucket/x?endpoint_override=127.0.0.1:1")
                .option("topic", TOPIC)
                .load()
            )
            for mode in ("extended", "formatted", "cost"):
                df.explain(mode)
            plans = capsys.readouterr().out + df._jdf.queryExecution().toString()
            assert "BatchScan pulsar" in plans
            assert df.count() == 3
    for secret in SECRETS:
        assert secret not in plans


def test_bookie_client_options_are_checked_when_built_and_pickle() -> None:
    o = _native.BookieClientOptions()
    assert (o.timeout_ms, o.connect_timeout_ms, o.pipeline_depth, o.max_frame_bytes) == (30_000, 5_000, 64, 5_308_416)
    assert o == _native.BookieClientOptions(timeout_ms=None) != _native.BookieClientOptions(timeout_ms=1)
    assert repr(_native.BookieClientOptions(pipeline_depth=8)) == (
        "BookieClientOptions(timeout_ms=30000, connect_timeout_ms=5000, pipeline_depth=8, max_frame_bytes=5308416, "
        "tls_trust_certs_file=None, tls_certificate_file=None, tls_key_file=None, tls_hostname_verification=False)"
    )
    shipped = _native.BookieClientOptions(timeout_ms=1500)
    assert pickle.loads(pickle.dumps(shipped)) == shipped
    with pytest.raises(pe.OptionsError, match="must be positive, max_frame_bytes at least 64"):
        _native.BookieClientOptions(max_frame_bytes=63)
    with pytest.raises(pe.OptionsError, match="argument 'timeout_ms' must be a non-negative int, not -1"):
        _native.BookieClientOptions(timeout_ms=-1)
    _native.BookieReader({}, options=shipped)
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout_ms'"):
        _native.BookieReader({}, timeout_ms=1)  # type: ignore[call-arg]
