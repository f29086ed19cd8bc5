"""The pulsar-entries CLI and the sample topic behind the demo."""

import subprocess
import sys

import pyarrow.parquet as pq

import pulsar_entries as pe
from pulsar_entries.cli import main
from pulsar_entries.sample import generate_topic


def test_sample_topic_reconciles_with_decode():
    topic = generate_topic(300, seed=3)
    out = pe.decode(topic.entries)
    errors = out.filter(out["error"].is_valid())
    assert errors.num_rows == topic.corrupt_entries == 3
    assert out["error"].null_count == topic.messages - topic.corrupt_messages
    assert set(out["compression"].to_pylist()) >= {"none", "lz4", "zlib", "zstd", "snappy"}
    assert out["broker_index"].null_count == errors.num_rows
    # The continuous index counts every message: the last one is messages - 1.
    assert max(i for i in out["broker_index"].to_pylist() if i is not None) == topic.messages - 1
    assert generate_topic(300, seed=3).entries.equals(topic.entries)  # deterministic


def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path), "--entries", "200"]) == 0
    out = capsys.readouterr().out
    assert "reconciled:" in out and "checksum mismatch" in out and "codecs (entries)" in out
    messages = pq.read_table(tmp_path / "messages.parquet")
    assert messages.num_rows > 200
    # The demo also compacts the topic and prints its last-message position.
    assert "== compact" in out and "3 unreadable kept unchanged" in out
    compacted = pq.read_table(tmp_path / "compacted.parquet")
    position = pe.last_message_position(compacted)
    assert f"{position.ledger_id}:{position.entry_id}:{position.batch_index}" in out.split("== last message position")[1]


def test_compact_and_last_id(tmp_path, capsys):
    topic = generate_topic(120, seed=5)
    (tmp_path / "topic").mkdir()
    pq.write_table(topic.entries.slice(0, 60), tmp_path / "topic" / "a.parquet")
    pq.write_table(topic.entries.slice(60), tmp_path / "topic" / "b.parquet")
    out = tmp_path / "compacted.parquet"
    assert main(["compact", str(tmp_path / "topic"), str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("compacted 120 entries") and str(out) in printed
    assert pq.read_table(out).equals(pe.compact(topic.entries))
    assert main(["last-id", str(out)]) == 0
    expected = pe.last_message_position(pe.compact(topic.entries))
    assert capsys.readouterr().out.startswith(f"{expected.ledger_id}:{expected.entry_id}:{expected.batch_index} ")
    assert main(["compact", str(tmp_path / "topic"), str(out), "--order", "event_time", "--retain-null-key"]) == 0
    assert pq.read_table(out).equals(pe.compact(topic.entries, order="event_time", retain_null_key=True))
    capsys.readouterr()
    # Without readCompacted the topic's own tail answers.
    assert main(["last-id", str(out), "--topic", str(tmp_path / "topic" / "b.parquet"), "--no-read-compacted"]) == 0
    assert capsys.readouterr().out.startswith("1000:119:")
    assert main(["last-id", str(out), "--horizon", "oops"]) == 1


def test_generate_decode_inspect(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "topic"), "--entries", "50"]) == 0
    assert main(["decode", str(tmp_path / "topic"), str(tmp_path / "m.parquet")]) == 0
    assert main(["inspect", str(tmp_path / "topic" / "entries.parquet")]) == 0
    out = capsys.readouterr().out
    assert "wrote 50 entries" in out and "decoded 50 entries" in out and "messages decoded" in out
    assert pq.read_table(tmp_path / "m.parquet").num_rows > 50


def test_errors_are_one_line_and_nonzero(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pulsar_entries", "inspect", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [f"pulsar-entries: error: {tmp_path / 'missing'}: no such file or directory"]
    assert "Traceback" not in run.stderr


def test_help_lists_every_command():
    run = subprocess.run([sys.executable, "-m", "pulsar_entries", "--help"], capture_output=True, text=True)
    assert run.returncode == 0
    for command in ("generate", "decode", "inspect", "compact", "last-id", "demo"):
        assert command in run.stdout
