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
    # A row per message, with a chunked message's chunk entries as rows of their own.
    rows = topic.messages - topic.chunked_messages + topic.chunk_entries
    assert out["error"].null_count == rows - topic.corrupt_messages
    assert set(out["compression"].to_pylist()) >= {"none", "lz4", "zlib", "zstd", "snappy"}
    assert out["broker_index"].null_count == errors.num_rows
    # The continuous index counts every message, a chunked one once per chunk entry.
    indexed = topic.messages - topic.chunked_messages + topic.chunk_entries
    assert max(i for i in out["broker_index"].to_pylist() if i is not None) == indexed - 1
    # Chunked messages (one chunk stored twice) reassemble whole.
    assert topic.chunked_messages >= 2 and topic.duplicate_chunks == 1
    whole = pe.reassemble_chunks(out)
    statuses = whole["status"].drop_null().to_pylist()
    assert sorted(set(statuses)) == ["complete", "duplicate"]
    assert statuses.count("complete") == topic.chunked_messages
    assert whole["error"].null_count == topic.messages - topic.corrupt_messages
    assert generate_topic(300, seed=3).entries.equals(topic.entries)  # deterministic


def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path), "--entries", "200"]) == 0
    out = capsys.readouterr().out
    assert "reconciled:" in out and "checksum mismatch" in out and "codecs (entries)" in out
    assert "chunked messages: " in out and " reassembled from " in out and "complete " in out
    messages = pq.read_table(tmp_path / "messages.parquet")
    assert messages.num_rows > 200


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
    for command in ("generate", "decode", "inspect", "demo"):
        assert command in run.stdout
