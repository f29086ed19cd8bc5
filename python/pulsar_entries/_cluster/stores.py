"""The metadata stores a topic's layout is read from (ZooKeeper, a stopped
standalone's RocksDB), read only.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
from typing import Any, Protocol

import pulsar_entries._native as _native

from .._install import install_hint
from .._redact import redact, redact_uri
from ..auth import ZooKeeperAccess


def check_timeout(name: str, value: Any) -> float:
    """``value`` as a positive, finite number of seconds; else a one-line ValueError naming ``name``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{name}: expected a positive number of seconds, got {str(value)[:60]!r}")
    return seconds


class MetadataStore(Protocol):
    """The read side of a Pulsar metadata store."""

    def get(self, path: str) -> bytes | None:
        """The node's data, or ``None`` when the node does not exist."""

    def children(self, path: str) -> list[str]:
        """The names of the node's children (empty when it does not exist)."""

    def close(self) -> None:
        """Releases the connection."""


def _quiet_logger() -> logging.Logger:
    """kazoo's own logger: it logs every failed connection attempt on the root
    logger's handlers, before the one-line error says the same. Given a logger of
    its own that records nothing, the user sees only the error."""
    log = logging.getLogger("pulsar_entries.kazoo")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.CRITICAL + 1)
    return log


class ZooKeeperStore:
    """A ZooKeeper metadata store, read through kazoo. Only reads are issued;
    connecting is bounded by ``timeout``, and kazoo logs nothing (see :func:`_quiet_logger`)."""

    def __init__(self, hosts: str, *, timeout: float = 10.0, access: ZooKeeperAccess | None = None) -> None:
        try:
            from kazoo.client import KazooClient
            from kazoo.handlers.threading import KazooTimeoutError
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(f"reading a ZooKeeper store needs kazoo: {install_hint('cluster')}") from e
        self._zk = KazooClient(
            hosts=hosts,
            timeout=timeout,
            read_only=True,
            connection_retry={"max_tries": 1},
            logger=_quiet_logger(),
            **(access.kazoo_args() if access is not None else {}),
        )
        secrets = access.secrets() if access is not None else []
        try:
            self._zk.start(timeout=timeout)
        except KazooTimeoutError:
            self._zk.close()
            hint = "" if access is not None and access.tls else _tls_hint(hosts)
            raise OSError(f"metadata store zk:{hosts}: no ZooKeeper answered within {timeout:g} s{hint}") from None
        except Exception as e:  # an authentication or TLS failure, in kazoo's words
            self._zk.close()
            raise OSError(f"metadata store zk:{hosts}: {redact(str(e) or type(e).__name__, *secrets)}") from None

    def get(self, path: str) -> bytes | None:
        from kazoo.exceptions import NoAuthError, NoNodeError

        try:
            data, _ = self._zk.get(path)
        except NoNodeError:
            return None
        except NoAuthError:
            raise PermissionError(f"ZooKeeper node {path}: not readable without credentials its ACL accepts") from None
        return bytes(data or b"")

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoAuthError, NoNodeError

        try:
            return sorted(self._zk.get_children(path))
        except NoNodeError:
            return []
        except NoAuthError:
            raise PermissionError(f"ZooKeeper node {path}: not readable without credentials its ACL accepts") from None

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()


class ReadOnlyRocksDB:
    """A RocksDB directory opened read only without writing a byte into it.

    Opening a database, even read only, writes into its directory: rocksdict
    stores a ``rocksdict-config.json`` there and RocksDB starts a new info
    ``LOG``. A metadata store or a bookie's ``locations`` index is evidence
    that must stay as it was, so the database is opened from a snapshot in a
    temporary directory: its files hard-linked (copied across filesystems),
    except ``LOCK`` and the info logs, which RocksDB would write to. SST files
    are never modified in place, so a link is a faithful read-only view; the
    snapshot is removed on :meth:`close`."""

    def __init__(self, path: str) -> None:
        from rocksdict import AccessType, Options, Rdict

        self._snapshot = tempfile.mkdtemp(prefix="pulsar-entries-rocksdb-")
        try:
            for name in os.listdir(path):
                source = os.path.join(path, name)
                if name == "LOCK" or name.startswith("LOG") or not os.path.isfile(source):
                    continue
                target = os.path.join(self._snapshot, name)
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copy2(source, target)
            self.db: Any = Rdict(self._snapshot, options=Options(raw_mode=True), access_type=AccessType.read_only())
        except BaseException:
            shutil.rmtree(self._snapshot, ignore_errors=True)
            raise

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            shutil.rmtree(self._snapshot, ignore_errors=True)


class RocksDBStore:
    """The RocksDB metadata store of a stopped standalone (``data/metadata``),
    opened read only. Values carry a ``MetaValue`` header, stripped here."""

    def __init__(self, path: str) -> None:
        try:
            import rocksdict  # noqa: F401
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(f"reading a RocksDB store needs rocksdict: {install_hint('cluster')}") from e
        if not os.path.isdir(path):
            raise FileNotFoundError(f"metadata store rocksdb:{path}: no such directory")
        try:
            self._store = ReadOnlyRocksDB(path)
            self._db = self._store.db
        except Exception as e:
            raise OSError(f"metadata store rocksdb:{path}: cannot open it read only: {e}") from e

    def get(self, path: str) -> bytes | None:
        value = self._db.get(path.encode())
        if value is None:
            return None
        return bytes(_native.strip_rocksdb_header(bytes(value)))

    def children(self, path: str) -> list[str]:
        # Children are the keys between `path/` and `path0` ('0' follows '/'), one level down.
        prefix = path.rstrip("/") + "/"
        out = set()
        it = self._db.iter()
        it.seek(prefix.encode())
        while it.valid():
            key = bytes(it.key()).decode("utf-8", "replace")
            if not key.startswith(prefix):
                break
            out.add(key[len(prefix) :].split("/", 1)[0])
            it.next()
        return sorted(out)

    def close(self) -> None:
        self._store.close()


def _tls_hint(hosts: str) -> str:
    """A hint when the first host accepts connections yet gave no plaintext ZooKeeper answer (a
    TLS-only port does that); nothing when it refuses them (ZooKeeper is down)."""
    import socket

    first = hosts.split("/", 1)[0].split(",", 1)[0]
    host, _, port = first.rpartition(":")
    try:
        with socket.create_connection((host or first, int(port or 2181)), timeout=0.5):
            pass
    except (OSError, ValueError):
        return ""
    return (
        "; the port accepts connections, so it may take TLS only: give its CA (ZooKeeperAccess ca_file, --zk-ca-file)"
    )


def open_store(url: str, *, timeout: float = 10.0, access: ZooKeeperAccess | None = None) -> MetadataStore:
    """Opens a metadata store from its address (``zk:...`` or ``rocksdb:...``); ``access``: TLS and
    authentication to ZooKeeper."""
    timeout = check_timeout("timeout", timeout)
    if not isinstance(url, str) or not url:
        raise ValueError("metadata_url must be a non-empty string such as 'zk:127.0.0.1:2181' or 'rocksdb:/path'")
    if url.startswith("zk:"):
        hosts = url[3:].removeprefix("//")
        if not hosts or hosts.startswith("/"):
            raise ValueError(f"metadata_url {redact_uri(url)!r}: expected zk:host:port[,host:port][/chroot]")
        return ZooKeeperStore(hosts, timeout=timeout, access=access)
    if url.startswith("rocksdb:"):
        path = url[len("rocksdb:") :].removeprefix("//")
        return RocksDBStore(path)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ValueError(
        f"metadata_url {redact_uri(url)!r}: unsupported store {scheme!r}; use zk:host:port[/chroot] or rocksdb:/path"
    )
