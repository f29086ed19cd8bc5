"""Reading a stopped Apache Pulsar 4.2.4 standalone from its files: the RocksDB metadata store for
the layout, the bookie's entry logs for the entries. What ``decode`` + ``reassemble_chunks`` make of
them equals what Java Readers received while it ran; a damaged copy becomes an error row that names
the file and offset.

The standalone's bookie runs BookKeeper's default ``SortedLedgerStorage`` (the broker.conf it loads
names no storage class); ``stopped_db`` runs Pulsar's production choice, ``DbLedgerStorage``, with
its RocksDB ``locations`` index, once with the default entry logger and once with the direct-I/O one
(``dbStorage_directIOEntryLogger``).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster
from pulsar_entries._standalone import Standalone

from .conftest import NS, RealPulsar, build_classpath, start_real_pulsar
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
    # The journal still holds a valid copy: the entry is read from it.
    from_journal = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    assert from_journal.equals(good)
    # Damage the journal's copy too: no valid copy is left.
    journals = [(j, j.read_bytes().find(payload)) for j in sorted(copy.rglob("current/*.txn"))]
    journals = [(j, at) for j, at in journals if at >= 0]
    assert len(journals) == 1, journals
    journal, at = journals[0]
    raw = bytearray(journal.read_bytes())
    raw[at + len(payload) - 1] ^= 0xFF
    journal.write_bytes(bytes(raw))
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


def test_the_journal_alone_gives_every_entry(stopped: RealPulsar, tmp_path: Path) -> None:
    """The entry logs emptied (as if never flushed): every entry comes from the journal (``*.txn``)."""
    copy = tmp_path / "bookie"
    shutil.copytree(stopped.standalone.bookkeeper_dir, copy)
    logs = sorted(copy.rglob("current/*.log"))
    assert logs and sorted(copy.rglob("current/*.txn"))
    for log in logs:
        log.write_bytes(b"")
    good = pe.read_topic(NS + "java-mixed", **urls(stopped))
    got = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    assert got.equals(good)
    assert pc.sum(pc.is_valid(got["error"])).as_py() == 0


def test_in_flight_compaction_files_are_left_out(stopped: RealPulsar, tmp_path: Path) -> None:
    """``*.log.compacting`` and ``<new>.log.<old>.compacted`` are transactional compaction's
    temporary files; the source log still exists while they do, so they are never read."""
    copy = tmp_path / "bookie"
    shutil.copytree(stopped.standalone.bookkeeper_dir, copy)
    current = next(copy.rglob("current"))
    garbage = b"BKLO" + bytes(1020) + (1_000_000).to_bytes(4, "big") + b"damaged"
    (current / "7.log.compacting").write_bytes(garbage)
    (current / "7.log.0.compacted").write_bytes(garbage)
    good = pe.read_topic(NS + "java-mixed", **urls(stopped))
    got = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    assert got.equals(good)
    # The same bytes as an entry log are read, and reported.
    (current / "7.log").write_bytes(garbage)
    got = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    errors = got.filter(pc.is_valid(got["error"]))["error"].to_pylist()
    assert len(errors) == 1 and "7.log: record at offset 1024 claims 1000000 bytes" in errors[0], errors


DB_STORAGE = {
    "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
    "dbStorage_writeCacheMaxSizeMb": 32,
    "dbStorage_readAheadCacheMaxSizeMb": 32,
}
# The direct-I/O logger's buffers keep their defaults (an eighth of the direct memory each): with
# smaller read buffers per thread than per reader it reports ENTRYLOGGER_MISCONFIGURED and reads fail.
DIRECT_IO = {"dbStorage_directIOEntryLogger": "true"}


@pytest.fixture(scope="module", params=["default-log", "direct-io-log"])
def stopped_db(request: pytest.FixtureRequest, real_pulsar_workdir: Path) -> Iterator[RealPulsar]:
    """A standalone on DbLedgerStorage that wrote the Java corpus, then stopped."""
    name = f"stopped-db-{request.param}"
    config = {**DB_STORAGE, **(DIRECT_IO if request.param == "direct-io-log" else {})}
    rp = start_real_pulsar(name, "rocksdb", real_pulsar_workdir / name, python_clients=False, config=config)
    rp.standalone.stop()
    rp.moto.stop()
    yield rp


def _layout_ledgers(rp: RealPulsar, topic: str) -> list[_cluster.Ledger]:
    store = _cluster.open_store(f"rocksdb:{rp.standalone.metadata_dir}")
    try:
        layout = _cluster.resolve_topic(NS + topic, store)
    finally:
        store.close()
    return [led for p in layout.partitions for led in [*p.ledgers, p.compacted] if led is not None]


def test_db_storage_files_equal_java_reader_through_the_index(stopped_db: RealPulsar) -> None:
    current = stopped_db.standalone.bookkeeper_dir / "current"
    assert (current / "locations").is_dir() and (current / "ledgers").is_dir()
    logs = sorted(p for p in current.glob("*.log") if p.stat().st_size > 0)
    direct = [
        p.read_bytes()[1024:1036] == (3068).to_bytes(4, "big") + (-1).to_bytes(8, "big", signed=True) for p in logs
    ]
    # The direct-I/O logger's 4 KiB header leaves a dummy record at 1024 for old scanners.
    is_direct = stopped_db.standalone.broker_config().get("dbStorage_directIOEntryLogger") == "true"
    assert direct and all(d == is_direct for d in direct), direct
    for topic in TOPICS:
        ledgers = _layout_ledgers(stopped_db, topic)
        files = _cluster.BookieFiles([str(stopped_db.standalone.bookkeeper_dir)], ledgers)
        assert files.indexed and files.errors.num_rows == 0, files.errors.to_pylist()
        assert files.scanned == [], "a cleanly stopped bookie's index holds every entry of its closed ledgers"
        entries = pe.read_topic(NS + topic, **urls(stopped_db))
        stats = stopped_db.truth[topic]["internal_stats"]
        expected = [(led["ledgerId"], e) for led in stats["ledgers"] for e in range(led["entries"])]
        assert list(zip(entries["ledger_id"].to_pylist(), entries["entry_id"].to_pylist())) == expected
        assert_same_messages(stopped_db.truth[topic]["messages"], delivered(entries))


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: its size and modification time (ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_reading_leaves_the_metadata_store_and_the_bookie_files_untouched(stopped_db: RealPulsar) -> None:
    # Opening a RocksDB database, even read only, writes into its directory (rocksdict's
    # config file, RocksDB's info LOG); the reader opens a snapshot instead.
    metadata, bookie = Path(stopped_db.standalone.metadata_dir), Path(stopped_db.standalone.bookkeeper_dir)
    before = (_tree(metadata), _tree(bookie))
    entries = pe.read_topic(NS + "java-mixed", **urls(stopped_db))
    assert entries.num_rows > 0 and entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    assert (_tree(metadata), _tree(bookie)) == before
    assert not [p for p in (*metadata.rglob("*"), *bookie.rglob("*")) if p.name == "rocksdict-config.json"]


def test_index_and_scan_give_the_same_entries(stopped_db: RealPulsar) -> None:
    ledgers = [led for t in TOPICS for led in _layout_ledgers(stopped_db, t)]
    dirs = [str(stopped_db.standalone.bookkeeper_dir)]
    t = time.perf_counter()
    indexed = _cluster.BookieFiles(dirs, ledgers)
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    scanned = _cluster.BookieFiles(dirs, ledgers, use_index=False)
    t_scan = time.perf_counter() - t
    print(
        f"{stopped_db.standalone.bookkeeper_dir}: {indexed._entries.num_rows} entries, index {t_index:.3f} s, scan {t_scan:.3f} s"
    )
    assert indexed.indexed and not scanned.indexed
    assert sorted(scanned.scanned) == sorted({led.ledger_id for led in ledgers if led.metadata is not None})
    assert indexed._entries.num_rows > 100
    assert indexed._entries.equals(scanned._entries)
    assert indexed.errors.num_rows == scanned.errors.num_rows == 0


def test_an_index_pointing_elsewhere_is_an_error_row_and_the_scan_finds_the_entry(
    stopped_db: RealPulsar, tmp_path: Path
) -> None:
    from rocksdict import Options, Rdict

    copy = tmp_path / "bookie"
    shutil.copytree(stopped_db.standalone.bookkeeper_dir, copy)
    ledgers = _layout_ledgers(stopped_db, "java-mixed")
    good = _cluster.BookieFiles([str(stopped_db.standalone.bookkeeper_dir)], ledgers)
    victim, other = good._entries.to_pylist()[3:5]
    key = victim["ledger_id"].to_bytes(8, "big") + victim["entry_id"].to_bytes(8, "big")
    db = Rdict(str(copy / "current" / "locations"), options=Options(raw_mode=True))
    try:
        raw = db.get(other["ledger_id"].to_bytes(8, "big") + other["entry_id"].to_bytes(8, "big"))
        assert raw is not None
        location = int.from_bytes(bytes(raw), "big")
        db[key] = location.to_bytes(8, "big")
    finally:
        db.close()
    got = _cluster.BookieFiles([str(copy)], ledgers)
    assert got._entries.equals(good._entries), "no entry is lost: the scan finds the one the index misplaced"
    assert got.scanned == [victim["ledger_id"]]
    errors = got.errors["error"].to_pylist()
    log, offset = f"{location >> 32:x}.log", location & 0xFFFFFFFF
    assert len(errors) == 1 and f"{log} offset {offset}" in errors[0], errors
    assert f"ledger {victim['ledger_id']} entry {victim['entry_id']}" in errors[0], errors
    # read_topic keeps the disagreement as an error row and every entry.
    rows = pe.read_topic(
        NS + "java-mixed", metadata_url=f"rocksdb:{stopped_db.standalone.metadata_dir}", bookie_dirs=[str(copy)]
    )
    assert rows.filter(pc.is_valid(rows["error"]))["error"].to_pylist() == errors
    assert rows.filter(pc.is_null(rows["error"])).equals(pe.read_topic(NS + "java-mixed", **urls(stopped_db)))


def test_a_bookie_killed_hard_is_read_from_its_journal(real_pulsar_workdir: Path) -> None:
    """SIGKILL right after producing, on DbLedgerStorage with a flush interval of an hour: the
    entries are in the journal and the write cache, not in the entry logs or the index."""
    import pulsar

    lib, _, _ = build_classpath()
    sa = Standalone(lib, real_pulsar_workdir / "killed", config={**DB_STORAGE, "flushInterval": 3_600_000})
    sa.start()
    try:
        client = pulsar.Client(sa.service_url, operation_timeout_seconds=60)
        try:
            producer = client.create_producer(NS + "killed", batching_enabled=False)
            sent = [f"message {i}".encode() for i in range(25)]
            for value in sent:
                producer.send(value)
        finally:
            client.close()
        assert sa.proc is not None
        os.kill(sa.proc.pid, signal.SIGKILL)
        sa.proc.wait(timeout=30)
    finally:
        sa.stop()
    dirs = [str(sa.bookkeeper_dir)]
    url = f"rocksdb:{sa.metadata_dir}"
    store = _cluster.open_store(url)
    try:
        layout = _cluster.resolve_topic(NS + "killed", store)
    finally:
        store.close()
    ledgers = [led for p in layout.partitions for led in p.ledgers]
    assert len(ledgers) == 3, "10 entries per ledger: two closed ledgers and the open one"
    without = _cluster.BookieFiles(dirs, ledgers, journal=False)
    with_journal = _cluster.BookieFiles(dirs, ledgers)
    assert with_journal.journaled == [led.ledger_id for led in ledgers]
    valid = [pc.sum(pc.is_valid(f._entries["data"])).as_py() for f in (without, with_journal)]
    assert valid[0] < valid[1] and valid[1] >= 24, valid
    got = pe.read_topic(NS + "killed", metadata_url=url, bookie_dirs=dirs)
    assert pc.sum(pc.is_valid(got["error"])).as_py() == 0, got.filter(pc.is_valid(got["error"])).to_pylist()
    values = pe.decode(got.drop_columns(["error"]))["value"].to_pylist()
    # The open ledger ends at the last-add-confirmed its copies carry: its last entry (confirmed by
    # no later entry) may be left out, as a reader of the live ledger would leave it.
    assert values in (sent, sent[:-1]), values
