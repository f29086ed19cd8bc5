"""Listing a bookie's directories for an offline read (``_cluster.BookieFiles``), without a cluster:
entry logs written here in BookKeeper's format (DUMMY digests, so no checksum code is needed), a
ledger node from BookKeeper's text form."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from pulsar_entries import _cluster, _native
from pulsar_entries._cluster.layout import Ledger

LEDGER = 5
TEXT = (
    "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, "
    "length=10, lastEntryId=1, digestType=DUMMY, password=OMITTED, ensembles={0=[bk0:3181]}, customMetadata={}}"
)


def entry_log(payloads: list[bytes]) -> bytes:
    """A default entry log, not rotated: the ``BKLO`` header, then ``[i32 size][entry]`` records of
    ledger ``LEDGER`` (ledger, entry, LAC, cumulative length, no digest, payload)."""
    log = bytearray(b"BKLO" + bytes(1020))
    total = 0
    for e, p in enumerate(payloads):
        total += len(p)
        body = struct.pack(">qqqq", LEDGER, e, e - 1, total) + p
        log += struct.pack(">i", len(body)) + body
    return bytes(log)


def ledger() -> Ledger:
    node = _native.ledger_node_from_text(LEDGER, TEXT)
    return Ledger(ledger_id=LEDGER, entries=2, size=10, metadata=node)


def bookie(tmp_path: Path) -> Path:
    current = tmp_path / "bookie" / "ledgers" / "current"
    current.mkdir(parents=True)
    (current / "0.log").write_bytes(entry_log([b"first", b"second"]))
    (tmp_path / "bookie" / "journal" / "current").mkdir(parents=True)
    return tmp_path / "bookie"


def payloads(reader: _cluster.BookieFiles) -> list[bytes]:
    led = ledger()
    assert led.metadata is not None
    return reader.read_ledger(LEDGER, led.metadata)["data"].to_pylist()


def test_a_file_whose_name_is_not_utf8_is_an_error_row_and_the_rest_is_read(tmp_path: Path) -> None:
    root = bookie(tmp_path)
    current = os.fsencode(root / "ledgers" / "current")
    # 0-byte files, as a preallocated next log would be, under names that are not UTF-8.
    for name in (b"\xff\xfe.log", b"caf\xe9.txn", b"\xff-not-a-log"):
        with open(os.path.join(current, name), "wb"):
            pass
    reader = _cluster.BookieFiles([str(root)], [ledger()])
    assert payloads(reader) == [b"first", b"second"]
    errors = reader.errors["error"].to_pylist()
    assert len(errors) == 2, errors
    assert any(e.endswith("current/\\xff\\xfe.log: the file name is not UTF-8; the file is not read") for e in errors)
    assert any("current/caf\\xe9.txn: the file name is not UTF-8" in e for e in errors), errors
    assert reader.errors["ledger_id"].to_pylist() == [-1, -1]


def test_a_directory_whose_path_is_not_utf8_is_an_error_row(tmp_path: Path) -> None:
    root = bookie(tmp_path)
    other = os.path.join(os.fsencode(root), b"disk\xff", b"current")
    os.makedirs(other)
    with open(os.path.join(other, b"0.log"), "wb") as f:
        f.write(entry_log([b"elsewhere"]))
    reader = _cluster.BookieFiles([str(root)], [ledger()])
    assert payloads(reader) == [b"first", b"second"]
    (error,) = reader.errors["error"].to_pylist()
    assert error.endswith("disk\\xff/current: the directory's path is not UTF-8; its files are not read"), error


def deny(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    """Makes ``victim`` unlistable as a ``chmod 000`` directory is for a user other than root.
    The tests run as root, whom mode 000 does not stop, so ``os.scandir`` (what ``os.walk``
    lists with) and ``os.listdir`` raise the PermissionError the kernel would instead."""
    real_scandir, real_listdir = os.scandir, os.listdir

    def check(path: Any) -> None:
        if os.fsdecode(path) == str(victim):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    def scandir(path: Any = ".") -> Any:
        check(path)
        return real_scandir(path)

    def listdir(path: Any = ".") -> Any:
        check(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)


def test_an_unlistable_current_directory_is_an_error_not_no_entry_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bookie(tmp_path)
    victim = root / "ledgers" / "current"
    deny(monkeypatch, victim)
    # The only directory with entry logs: the read fails, naming it and the permission problem.
    with pytest.raises(PermissionError) as raised:
        _cluster.BookieFiles([str(root / "ledgers")], [ledger()])
    text = str(raised.value)
    assert f"{victim}: the directory cannot be listed (PermissionError: Permission denied)" in text, text
    # Beside a readable journal directory, the read goes on and an error row names it.
    (root / "journal" / "current" / "1.txn").write_bytes(b"BKLG" + struct.pack(">i", 5) + bytes(504))
    reader = _cluster.BookieFiles([str(root)], [ledger()])
    errors = reader.errors["error"].to_pylist()
    assert errors == [
        f"{victim}: the directory cannot be listed (PermissionError: Permission denied); nothing in it is read"
    ]
    # Its entries are then error rows too, not silently absent.
    led = ledger()
    assert led.metadata is not None
    rows = reader.read_ledger(LEDGER, led.metadata)
    assert rows["data"].to_pylist() == [None, None]
    assert all("not in the bookie files" in e for e in rows["error"].to_pylist())
