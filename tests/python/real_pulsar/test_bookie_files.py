"""Reading a stopped Apache Pulsar 4.2.4 standalone from its files: the RocksDB metadata store for
the layout, the bookie's entry logs for the entries. What ``decode`` + ``reassemble_chunks`` make of
them equals what Java Readers received while it ran; a damaged copy becomes an error row that names
the file and offset.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe

from .conftest import NS, RealPulsar, start_real_pulsar
from .real_pulsar_compare import assert_same_messages, delivered

pytestmark = pytest.mark.real_pulsar

TOPICS = ("java-mixed", "java-chunked", "java-txn", "java-partitioned-partition-2")


@pytest.fixture(scope="module")
def stopped(real_pulsar_workdir: Path) -> Iterator[RealPulsar]:
    """A standalone that wrote the Java corpus, then stopped (cleanly: its bookie flushed)."""
    rp = start_real_pulsar("stopped", "rocksdb", real_pulsar_workdir / "stopped", python_clients=False)
    rp.standalone.stop()
    rp.moto.stop()
    yield rp


def urls(rp: RealPulsar) -> dict[str, Any]:
    return {"metadata_url": f"rocksdb:{rp.standalone.metadata_dir}", "bookie_dirs": [str(rp.standalone.bookkeeper_dir)]}


@pytest.mark.parametrize("topic", TOPICS)
def test_files_of_a_stopped_cluster_equal_java_reader(stopped: RealPulsar, topic: str) -> None:
    entries = pe.read_topic(NS + topic, **urls(stopped))
    stats = stopped.truth[topic]["internal_stats"]
    expected = [(led["ledgerId"], e) for led in stats["ledgers"] for e in range(led["entries"])]
    assert list(zip(entries["ledger_id"].to_pylist(), entries["entry_id"].to_pylist())) == expected
    assert_same_messages(stopped.truth[topic]["messages"], delivered(entries))


def test_compacted_view_from_files(stopped: RealPulsar) -> None:
    entries = pe.read_topic(NS + "java-mixed", read_compacted=True, **urls(stopped))
    assert_same_messages(stopped.truth["java-mixed"]["compacted_messages"], delivered(entries))


def test_a_damaged_copy_is_an_error_row_naming_file_and_offset(stopped: RealPulsar, tmp_path: Path) -> None:
    copy = tmp_path / "bookie"
    shutil.copytree(stopped.standalone.bookkeeper_dir, copy)
    good = pe.read_topic(NS + "java-mixed", **urls(stopped))
    victim = good.to_pylist()[5]
    # Flip the last payload byte of that entry in the copied entry log.
    logs = sorted(copy.rglob("current/*.log"))
    payload = victim["data"]
    hits = [(log, log.read_bytes().find(payload)) for log in logs]
    hits = [(log, at) for log, at in hits if at >= 0]
    assert len(hits) == 1, hits
    log, at = hits[0]
    raw = bytearray(log.read_bytes())
    raw[at + len(payload) - 1] ^= 0xFF
    log.write_bytes(bytes(raw))
    got = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    assert got.num_rows == good.num_rows, "counts reconcile: the damaged entry is a row"
    bad = got.filter(pc.is_valid(got["error"])).to_pylist()
    assert [(r["ledger_id"], r["entry_id"]) for r in bad] == [(victim["ledger_id"], victim["entry_id"])]
    assert "digest mismatch" in bad[0]["error"] and log.name in bad[0]["error"] and "offset" in bad[0]["error"], bad
    assert got.filter(pc.is_null(got["error"]))["data"].to_pylist() == [
        r["data"]
        for r in good.to_pylist()
        if (r["ledger_id"], r["entry_id"]) != (victim["ledger_id"], victim["entry_id"])
    ]
