"""``pulsar-entries demo``'s real-Pulsar step, in a subprocess: a Pulsar 4.2.4 standalone from the
jars Maven resolves into the per-user cache, a topic written by pulsar-client (AVRO schema, keys,
properties), read back with ``spark.read.format("pulsar")`` and reconciled. Needs Java, Maven and
pulsar-client: without them the test fails (the demo would print its skip line)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

CLI = [sys.executable, "-m", "pulsar_entries"]
pytestmark = [pytest.mark.real_pulsar, pytest.mark.slow]


@pytest.mark.spark
def test_demo_writes_a_real_topic_and_reads_it_back(tmp_path: Path) -> None:
    assert shutil.which("java") and shutil.which("mvn"), "the real-Pulsar demo step needs java and mvn on PATH"
    out = tmp_path / "demo"
    run = subprocess.run(
        [*CLI, "--quiet", "--master", "local[1]", "demo", "--dir", str(out), "--entries", "100"],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = run.stdout
    step = text.split("== real Pulsar")[1]
    assert step.startswith(": a topic written through a 4.2.4 standalone, read from its storage"), step[:300]
    assert "wrote 3,000 messages to persistent://public/default/demo-orders with pulsar-client 3.13.0" in step
    assert 'read live with spark.read.format("pulsar") (adminUrl, typed=auto)' in step
    assert "reconciled: 3,000 messages written = 3,000 rows read" in step
    # Then a few seconds of streaming from the same standalone while 300 more messages are written.
    streamed = r'streamed with spark.readStream.format\("pulsar"\) for [\d.]+s \((\d+) micro-batches of at most 20 entries\): 3,300 rows = every message once'
    found = re.search(streamed, step)
    assert found and int(found.group(1)) > 1, step[-1500:]
    # Then the topic exported to a Delta table and read back with SQL.
    assert re.search(
        r"exported to the Delta table \S+demo-orders-delta in [\d.]+s \(\d+ commits?, exactly once", step
    ), step[-1500:]
    assert "3,300 rows = every message once" in step.split("exported to the Delta table")[1]
    from deltalake import DeltaTable

    exported = DeltaTable(str(out / "demo-orders-delta")).to_pyarrow_table(columns=["order_id", "customer"])
    assert sorted(exported["order_id"].to_pylist()) == list(range(100_000, 103_300))
    # The report gained the real topic's charts: its publish rate and its 40 keys (the 20 with most shown).
    assert "== report: charts of the real Pulsar topic added to" in text
    report = (out / "report.html").read_text()
    assert 'id="chart-real-rate"' in report and "Real Pulsar topic: publish rate (3,000 rows)" in report
    assert "Real Pulsar topic: messages per key (the 20 with most of 40)" in report
    pid = int(re.search(r"standalone stopped \(pid (\d+)\)", step).group(1))  # type: ignore[union-attr]
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()

    # The typed rows, as the demo wrote them: the producer's values, keys and properties, in order.
    rows = pq.read_table(out / "real-pulsar-topic.parquet")
    rows = rows.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")])
    assert rows.num_rows == 3000
    assert rows["error"].null_count == 3000
    got = rows.to_pylist()
    assert [r["order_id"] for r in got] == list(range(100_000, 103_000))
    assert len({r["ledger_id"] for r in got}) > 1
    for i in (0, 1, 1234, 2999):
        r = got[i]
        assert r["key"] == r["customer"] == f"customer-{i * 7 % 40:02d}"
        assert r["items"] == 1 + i % 9 and r["express"] == (i % 5 == 0)
        assert r["amount"] == round(5 + (i * 37 % 10_000) / 100, 2)
        props = r["properties"]
        props = dict(props) if not isinstance(props, dict) else props
        assert props == {"region": ("eu-west", "us-east", "ap-south")[i % 3], "seq": str(i)}


def test_standalone_command_serves_on_loopback_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    assert shutil.which("java") and shutil.which("mvn"), "pulsar-entries standalone needs java and mvn on PATH"
    proc = subprocess.Popen(
        [*CLI, "standalone", "--dir", str(tmp_path / "sa")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C stops it"):
                break
        text = "".join(lines)
        assert "Ctrl-C stops it" in text, text
        admin = re.search(r"^admin URL +(http://127\.0\.0\.1:\d+)$", text, re.M)
        service = re.search(r"^service URL +(pulsar://127\.0\.0\.1:\d+)$", text, re.M)
        jvm = re.search(r"standalone up in [\d.]+s \(pid (\d+)\)", text)
        assert admin and service and jvm, text
        with urllib.request.urlopen(f"{admin.group(1)}/admin/v2/brokers/health", timeout=30) as resp:
            assert resp.read().strip() == b"ok"
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, rest
    assert f"standalone stopped (pid {jvm.group(1)})" in rest
    pid = int(jvm.group(1))
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert (tmp_path / "sa" / "data" / "metadata").is_dir()
