"""The pulsar-entries CLI and the sample topic behind the demo."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.compute  # noqa: F401
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
    assert set(out["compression"].to_pylist()) >= {"none", "lz4", "zlib", "zstd", "snappy", "gzip"}
    good = out.filter(out["error"].is_null())
    assert good["broker_index"].null_count == 0  # every entry was stamped
    # A KoP entry with a flipped byte fails its Kafka batch CRC after its metadata
    # was read, so its error row keeps the entry columns; a Pulsar one fails first.
    kinds = sorted("kafka batch crc" if "crc32c mismatch" in e and e.startswith("Kafka") else e.split(":")[0]
                   for e in errors["error"].to_pylist())
    assert kinds == ["checksum mismatch", "checksum mismatch", "kafka batch crc"]
    kafka_rows = good.filter(pa.compute.equal(good["processor"], "kafka"))
    kafka_errors = [r["num_messages"] for r in errors.to_pylist() if r["error"].startswith("Kafka")]
    assert kafka_rows.num_rows + sum(kafka_errors) == topic.kafka_messages > 0
    assert {"committed", "aborted"} <= set(good["txn_status"].to_pylist())
    # The continuous index counts every offset: Pulsar messages, Kafka offsets
    # (control records included) and one per marker, as a 4.2.4 broker does.
    assert max(i for i in out["broker_index"].to_pylist() if i is not None) == topic.offsets - 1
    offsets = [o for o in good["offset"].to_pylist()]
    assert len(set(offsets)) == len(offsets)  # no two messages share an offset
    assert max(offsets) < topic.offsets
    assert generate_topic(300, seed=3).entries.equals(topic.entries)  # deterministic


def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path), "--entries", "200"]) == 0
    out = capsys.readouterr().out
    assert "reconciled:" in out and "checksum mismatch" in out and "codecs (entries)" in out
    assert "seek to " in out and "processors (rows)" in out and "kafka" in out
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
