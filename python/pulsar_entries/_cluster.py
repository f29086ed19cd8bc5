"""Reading a topic straight from a cluster's storage: the metadata store for the
layout, the bookies (or tiered storage) for the entries, no broker in the path.

Store addresses follow Pulsar's conventions:

* ``zk:host:2181[,host2:2181][/chroot]`` - ZooKeeper (kazoo, read only);
* ``rocksdb:/path/to/data/metadata`` - the RocksDB store of a *stopped*
  standalone (rocksdict, opened read only);
* ``http://broker:8080`` / ``https://...`` - the broker's admin REST API, for
  the layout only (:class:`AdminRest`): the entries still come from the
  bookies or tiered storage, never through the broker.

Nothing here writes to the store, fences a ledger, or reads past the
last-add-confirmed of an open ledger: the bookie reads are
:class:`pulsar_entries._native.BookieReader`'s, which never send a fencing
flag or a master key.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from . import _native

#: Why a ledger without metadata cannot be read.
NO_METADATA = "no ledger metadata (none in the store, or none from the admin REST API)"

#: The compaction subscription's cursor.
COMPACTION_CURSOR = "__compaction"

ENTRY_SCHEMA = pa.schema(
    [
        pa.field("ledger_id", pa.int64(), nullable=False),
        pa.field("entry_id", pa.int64(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("data", pa.binary()),
        pa.field("error", pa.string()),
    ]
)


class MetadataStore(Protocol):
    """The read side of a Pulsar metadata store."""

    def get(self, path: str) -> bytes | None:
        """The node's data, or ``None`` when the node does not exist."""

    def children(self, path: str) -> list[str]:
        """The names of the node's children (empty when it does not exist)."""

    def close(self) -> None:
        """Releases the connection."""


class ZooKeeperStore:
    """A ZooKeeper metadata store, read through kazoo. Only reads are issued."""

    def __init__(self, hosts: str, *, timeout: float = 10.0) -> None:
        try:
            from kazoo.client import KazooClient
            from kazoo.handlers.threading import KazooTimeoutError
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError("reading a ZooKeeper store needs kazoo: pip install 'pulsar-entries[cluster]'") from e
        self._zk = KazooClient(hosts=hosts, timeout=timeout, read_only=True, connection_retry={"max_tries": 1})
        try:
            self._zk.start(timeout=timeout)
        except KazooTimeoutError:
            self._zk.close()
            raise OSError(f"metadata store zk:{hosts}: no ZooKeeper answered within {timeout:g} s") from None

    def get(self, path: str) -> bytes | None:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._zk.get(path)
        except NoNodeError:
            return None
        return bytes(data or b"")

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self._zk.get_children(path))
        except NoNodeError:
            return []

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()


class RocksDBStore:
    """The RocksDB metadata store of a stopped standalone (``data/metadata``),
    opened read only. Values carry a ``MetaValue`` header, stripped here."""

    def __init__(self, path: str) -> None:
        try:
            from rocksdict import AccessType, Options, Rdict
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError("reading a RocksDB store needs rocksdict: pip install 'pulsar-entries[cluster]'") from e
        if not os.path.isdir(path):
            raise FileNotFoundError(f"metadata store rocksdb:{path}: no such directory")
        try:
            self._db = Rdict(path, options=Options(raw_mode=True), access_type=AccessType.read_only())
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
        self._db.close()


def open_store(url: str, *, timeout: float = 10.0) -> MetadataStore:
    """Opens a metadata store from its address (``zk:...`` or ``rocksdb:...``)."""
    if not isinstance(url, str) or not url:
        raise ValueError("metadata_url must be a non-empty string such as 'zk:127.0.0.1:2181' or 'rocksdb:/path'")
    if url.startswith("zk:"):
        hosts = url[3:].removeprefix("//")
        if not hosts or hosts.startswith("/"):
            raise ValueError(f"metadata_url {url!r}: expected zk:host:port[,host:port][/chroot]")
        return ZooKeeperStore(hosts, timeout=timeout)
    if url.startswith("rocksdb:"):
        path = url[len("rocksdb:") :].removeprefix("//")
        return RocksDBStore(path)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ValueError(f"metadata_url {url!r}: unsupported store {scheme!r}; use zk:host:port[/chroot] or rocksdb:/path")


@dataclass(frozen=True)
class Ledger:
    """One ledger of a topic partition, with what is needed to read it."""

    ledger_id: int
    entries: int
    size: int
    #: The ledger node's bytes (``None`` when the BookKeeper copy is gone).
    metadata: bytes | None
    #: The parsed node, password left out (empty when ``metadata`` is None).
    info: dict[str, Any] = field(default_factory=dict)
    #: Offload state from the managed-ledger info, ``None`` if not offloaded.
    offload: dict[str, Any] | None = None


@dataclass(frozen=True)
class Partition:
    """One managed ledger: a non-partitioned topic, or one partition."""

    topic: str
    #: -1 for a non-partitioned topic.
    partition: int
    ledgers: list[Ledger]
    #: The compacted ledger of the ``__compaction`` cursor, if the topic was compacted.
    compacted: Ledger | None = None
    #: The compaction horizon: the last entry compaction read (the cursor's
    #: mark-delete position). A compacted read continues after it.
    horizon: tuple[int, int] | None = None


@dataclass(frozen=True)
class TopicLayout:
    """A topic's storage layout, as the metadata store describes it."""

    topic: str
    partitions: list[Partition]
    #: Bookie id -> ``host:port``.
    bookies: dict[str, str]


def _ledger(store: MetadataStore, ledger_id: int, entries: int = 0, size: int = 0, offload: Any = None) -> Ledger:
    node = store.get(_native.ledger_path(ledger_id))
    info = {} if node is None else _native.ledger_metadata(ledger_id, node)
    return Ledger(ledger_id, entries, size, node, info, offload)


def _bookie_addresses(store: MetadataStore, ids: set[str]) -> dict[str, str]:
    out = {}
    for bookie in sorted(ids):
        node = store.get(f"/ledgers/available/{bookie}")
        if node is None:
            node = store.get(f"/ledgers/available/readonly/{bookie}")
        # Not registered (down, or never registered): the id itself may be host:port.
        out[bookie] = bookie if node is None else _native.bookie_address(bookie, node)
    return out


def resolve_topic(topic: str, store: MetadataStore, *, partitions: Sequence[int] | None = None) -> TopicLayout:
    """A topic's partitions, ledgers, compacted ledger and bookies, read from the store."""
    paths = _native.topic_paths(topic)
    names: list[tuple[str, int]]
    if paths["partition"] is not None:
        names = [(paths["topic"], paths["partition"])]
    else:
        node = store.get(paths["partitioned_metadata"])
        if node is None:
            names = [(paths["topic"], -1)]
        else:
            n = _native.partition_count(node)
            names = [(_native.partition_name(paths["topic"], i), i) for i in range(n)]
    if partitions is not None:
        wanted = set(partitions)
        unknown = wanted - {p for _, p in names}
        if unknown:
            raise ValueError(f"topic {paths['topic']} has no partition {sorted(unknown)}")
        names = [(n, p) for n, p in names if p in wanted]
    parts = []
    for name, index in names:
        p = _native.topic_paths(name)
        node = store.get(p["managed_ledger"])
        if node is None:
            raise LookupError(f"unknown topic {name}: no managed ledger at {p['managed_ledger']}")
        ml = _native.managed_ledger_info(node)
        ledgers = [_ledger(store, x["ledger_id"], x["entries"], x["size"], x["offload"]) for x in ml["ledgers"]]
        parts.append(Partition(name, index, ledgers, *_compacted(store, p["compaction_cursor"])))
    ids = {
        b
        for part in parts
        for led in [*part.ledgers, part.compacted]
        if led is not None
        for _, ens in led.info.get("ensembles", [])
        for b in ens
    }
    return TopicLayout(paths["topic"], parts, _bookie_addresses(store, ids))


# ------------------------------------------------------------------------------ admin REST


def is_admin_url(url: str) -> bool:
    """Whether ``url`` names a broker's admin REST API (``http://`` or ``https://``)."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


class AdminRest:
    """A broker's admin REST API (``/admin/v2``), read only: GET requests,
    bounded by ``timeout``, with an optional token (``Authorization: Bearer``)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        if not is_admin_url(url):
            raise ValueError(f"admin_url {url!r}: expected http://host:port or https://host:port")
        if urllib.parse.urlsplit(url).hostname is None:
            raise ValueError(f"admin_url {url!r}: no host")
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout

    def get(self, path: str, *, what: str | None = None) -> Any:
        """The JSON answer to ``GET {url}{path}``. A 404 raises :class:`LookupError`
        naming ``what`` (or the path); every failure is one line."""
        url = self.url + path
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self._token:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            reason = _http_reason(e)
            if e.code == 404:
                raise LookupError(f"{what or path}: the broker at {self.url} answered 404 ({reason})") from None
            if e.code in (401, 403):
                raise PermissionError(f"GET {url}: HTTP {e.code} ({reason}); pass an admin token") from None
            raise OSError(f"GET {url}: HTTP {e.code} ({reason})") from None
        except (TimeoutError, socket.timeout):
            raise TimeoutError(f"GET {url}: no answer within {self._timeout:g} s") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                raise TimeoutError(f"GET {url}: no answer within {self._timeout:g} s") from None
            raise OSError(f"admin REST API {self.url} unreachable: {e.reason}") from None
        except OSError as e:
            raise OSError(f"admin REST API {self.url} unreachable: {e}") from None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ValueError(f"GET {url}: malformed JSON ({e}): {raw[:80]!r}") from None


def _http_reason(e: urllib.error.HTTPError) -> str:
    try:
        body = e.read()
        reason = json.loads(body).get("reason")
        if reason:
            return str(reason).splitlines()[0]
    except Exception:
        pass
    return str(e.reason)


def _rest_path(topic: str) -> str:
    """``/admin/v2/persistent/tenant/ns/topic`` for a full topic name."""
    rest = topic.removeprefix("persistent://")
    parts = rest.split("/")
    if len(parts) == 4:  # a v1 name: property/cluster/namespace/topic
        return "/admin/persistent/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)
    tenant, ns, local = rest.split("/", 2)
    return "/admin/v2/persistent/" + "/".join(urllib.parse.quote(p, safe="") for p in (tenant, ns, local))


def _position(text: Any) -> tuple[int, int] | None:
    """A ``"ledger:entry"`` position, or ``None``."""
    if not isinstance(text, str) or ":" not in text:
        return None
    ledger, entry = text.split(":", 1)
    return int(ledger), int(entry)


def _looks_like_address(bookie: str) -> bool:
    host, sep, port = bookie.rpartition(":")
    return bool(sep and host and port.isdigit())


def _admin_ledger(ledger_id: int, entries: int, size: int, text: Any, password: bytes, offload: Any) -> Ledger:
    node = None if not text else _native.ledger_node_from_text(ledger_id, text, password)
    info = {} if node is None else _native.ledger_metadata(ledger_id, node)
    return Ledger(ledger_id, entries, size, node, info, offload)


def resolve_topic_admin(
    topic: str,
    admin: AdminRest,
    *,
    partitions: Sequence[int] | None = None,
    ledger_password: bytes = b"",
    bookie_addresses: Mapping[str, str] | None = None,
) -> TopicLayout:
    """A topic's layout from the broker's admin REST API: partitions
    (``.../partitions``), ledgers with their BookKeeper metadata and the
    compacted ledger (``.../internalStats?metadata=true``), the compaction
    horizon (the ``__compaction`` cursor's mark-delete position) and, for
    offloaded ledgers, the offload ids (``.../internal-info``).

    What the REST API does not give: ledger passwords (the metadata text
    omits them; ``ledger_password`` stands in, Pulsar's default being empty,
    and only HMAC digests use it), the offload driver's name and properties
    (only the offload id), and bookie addresses (only ids): ids that are not
    ``host:port`` need ``bookie_addresses``.
    """
    paths = _native.topic_paths(topic)
    base = paths["topic"]
    names: list[tuple[str, int]]
    if paths["partition"] is not None:
        names = [(base, paths["partition"])]
    else:
        meta = admin.get(_rest_path(base) + "/partitions", what=f"unknown topic {base}")
        n = meta.get("partitions", 0) if isinstance(meta, dict) else 0
        if not isinstance(n, int):
            raise ValueError(f"topic {base}: the broker gave partition metadata {meta!r}")
        names = [(base, -1)] if n == 0 else [(_native.partition_name(base, i), i) for i in range(n)]
    if partitions is not None:
        wanted = set(partitions)
        unknown = wanted - {p for _, p in names}
        if unknown:
            raise ValueError(f"topic {base} has no partition {sorted(unknown)}")
        names = [(n, p) for n, p in names if p in wanted]
    parts = []
    for name, index in names:
        path = _rest_path(name)
        stats = _internal_stats(admin, path, name)
        uuids: dict[int, str] = {}
        if any(led.get("offloaded") for led in stats["ledgers"]):
            info = admin.get(path + "/internal-info", what=f"unknown topic {name}")
            uuids = {
                int(led["ledgerId"]): led["offloadedContextUuid"]
                for led in (info or {}).get("ledgers", [])
                if led.get("isOffloaded") and led.get("offloadedContextUuid")
            }
        ledgers = []
        for led in stats["ledgers"]:
            lid = int(led["ledgerId"])
            offload: dict[str, Any] | None = None
            if led.get("offloaded"):
                if lid not in uuids:
                    raise ValueError(f"topic {name}: ledger {lid} is offloaded but internal-info gives no offload id")
                offload = {"uuid": uuids[lid], "driver": None, "driver_properties": {}, "bookkeeper_deleted": False}
            ledgers.append(
                _admin_ledger(
                    lid,
                    int(led.get("entries", 0)),
                    int(led.get("size", 0)),
                    led.get("metadata"),
                    ledger_password,
                    offload,
                )
            )
        compacted, horizon = None, None
        cursor = (stats.get("cursors") or {}).get(COMPACTION_CURSOR)
        if cursor is not None:
            horizon = _position(cursor.get("markDeletePosition"))
            c = stats.get("compactedLedger") or {}
            cid = int(c.get("ledgerId", -1))
            if cid < 0:
                # The broker has not loaded it: the cursor still names it, without its metadata.
                cid = int((cursor.get("properties") or {}).get("CompactedTopicLedger", -1))
            if cid >= 0:
                compacted = _admin_ledger(
                    cid,
                    int(c.get("entries", 0)),
                    int(c.get("size", 0)),
                    c.get("metadata") if int(c.get("ledgerId", -1)) == cid else None,
                    ledger_password,
                    None,
                )
            else:
                horizon = None
        parts.append(Partition(name, index, ledgers, compacted, horizon))
    ids = {
        b
        for part in parts
        for led in [*part.ledgers, part.compacted]
        if led is not None
        for _, ens in led.info.get("ensembles", [])
        for b in ens
    }
    given = dict(bookie_addresses or {})
    return TopicLayout(base, parts, {b: given.get(b, b) for b in sorted(ids)})


def _internal_stats(admin: AdminRest, path: str, name: str, attempts: int = 3) -> dict[str, Any]:
    """``internalStats?metadata=true``. The broker fills each ledger's
    ``metadata`` from its ledger handle without waiting for handles still
    opening, so a ledger can come without it: ask again (``attempts`` times in
    all, a short pause between) and keep the metadata any answer gave.
    Offloaded ledgers never carry it (Pulsar 4.2.4): they are not waited for."""
    seen: dict[int, str] = {}
    stats: dict[str, Any] = {}
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.3 * attempt)
        stats = admin.get(path + "/internalStats?metadata=true", what=f"unknown topic {name}")
        if not isinstance(stats, dict) or not isinstance(stats.get("ledgers"), list):
            raise ValueError(f"topic {name}: the broker's internal-stats has no ledger list")
        ledgers = [*stats["ledgers"], stats.get("compactedLedger") or {}]
        for led in ledgers:
            if led.get("metadata"):
                seen[int(led["ledgerId"])] = led["metadata"]
        missing = [
            led
            for led in ledgers
            if int(led.get("ledgerId", -1)) >= 0 and not led.get("offloaded") and int(led["ledgerId"]) not in seen
        ]
        if not missing:
            break
    for led in [*stats["ledgers"], stats.get("compactedLedger") or {}]:
        if int(led.get("ledgerId", -1)) in seen:
            led["metadata"] = seen[int(led["ledgerId"])]
    return stats


def _unresolved_bookies(layout: TopicLayout, given: Mapping[str, str] | None) -> list[str]:
    return [b for b, addr in layout.bookies.items() if b not in (given or {}) and not _looks_like_address(addr)]


def _compacted(store: MetadataStore, cursor_path: str) -> tuple[Ledger | None, tuple[int, int] | None]:
    """The compacted ledger and the horizon, from the ``__compaction`` cursor."""
    node = store.get(cursor_path)
    if node is None:
        return None, None
    ledger_id, horizon, cursor_ledger = _native.compacted_ledger(node)
    if cursor_ledger >= 0:
        # The cursor ledger's last entry holds the authoritative position and properties.
        cl = _ledger(store, cursor_ledger)
        if cl.metadata is not None:
            reader = _native.BookieReader(_bookie_addresses(store, {b for _, e in cl.info["ensembles"] for b in e}))
            try:
                last = reader.last_readable(cursor_ledger, cl.metadata)
            except OSError:
                # No bookie answers (a stopped cluster read from its files): the node's
                # own snapshot of the position and properties is what there is.
                last = -1
            if last >= 0:
                rows = reader.read_ledger(cursor_ledger, cl.metadata, last, last)
                data = rows.column("data")[0].as_py()
                if data is not None:
                    ledger_id, horizon, _ = _native.compacted_ledger(node, data)
    if ledger_id is None:
        return None, None
    return _ledger(store, ledger_id), horizon


def _locations_index(current: str, ledger_ids: Sequence[int]) -> tuple[list[tuple[int, int, int]] | None, str | None]:
    """The DbLedgerStorage ``locations`` index rows ``(ledger, entry, location)`` of ``ledger_ids``
    (keys ``ledger || entry``, values ``log id << 32 | offset``, all 8-byte big-endian), read only;
    ``(None, why)`` when the directory has no index or it cannot be read."""
    path = os.path.join(current, "locations")
    if not os.path.isdir(path):
        return None, None
    try:
        from rocksdict import AccessType, Options, Rdict
    except ImportError:  # pragma: no cover - depends on the install
        return None, f"{path}: reading the locations index needs rocksdict (pip install 'pulsar-entries[cluster]')"
    try:
        db = Rdict(path, options=Options(raw_mode=True), access_type=AccessType.read_only())
    except Exception as e:
        return None, f"{path}: the locations index cannot be opened ({e}); its entry logs are scanned instead"
    rows: list[tuple[int, int, int]] = []
    try:
        it = db.iter()
        for ledger_id in sorted(set(ledger_ids)):
            prefix = ledger_id.to_bytes(8, "big", signed=True)
            it.seek(prefix + bytes(8))
            while it.valid():
                key = bytes(it.key())
                if key[:8] != prefix:
                    break
                value = bytes(it.value())
                if len(key) != 16 or len(value) != 8:
                    return None, (
                        f"{path}: a locations-index key {key.hex()} holds {len(value)} bytes, not a location; "
                        "its entry logs are scanned instead"
                    )
                rows.append((ledger_id, int.from_bytes(key[8:], "big", signed=True), int.from_bytes(value, "big")))
                it.next()
        del it
    except Exception as e:
        return None, f"{path}: the locations index cannot be read ({e}); its entry logs are scanned instead"
    finally:
        db.close()
    return rows, None


class BookieFiles:
    """A bookie's files as a ledger source: read once for the given ledgers, then read like
    :class:`pulsar_entries._native.BookieReader`.

    Each ``current/`` directory under ``dirs`` with entry logs (``*.log``; ``*.log.compacting``
    and ``*.compacted`` are in-flight compaction copies and are left out) is a ledger directory.
    Where it has the DbLedgerStorage ``locations`` index (and ``use_index``), entries are read
    where the index puts them, and a ledger is scanned for in the entry logs only when the index
    and the logs disagree about it, when an entry is missing or fails its digest, or when the
    ledger is not closed. ``journal`` also reads the journals (``current/*.txn``) for the ledgers
    still incomplete or not closed: entries a bookie killed hard had not flushed yet."""

    def __init__(
        self, dirs: Sequence[str], ledgers: Sequence[Ledger], *, use_index: bool = True, journal: bool = True
    ) -> None:
        currents = sorted({root for d in dirs for root, _, _ in os.walk(d) if os.path.basename(root) == "current"})
        wanted = [(led.ledger_id, led.metadata) for led in ledgers if led.metadata is not None]
        ids = [led_id for led_id, _ in wanted]
        ledger_dirs: list[tuple[str, list[str], list[tuple[int, int, int]] | None]] = []
        journals: list[str] = []
        notes: list[str] = []
        for current in currents:
            names = sorted(os.listdir(current))
            logs = [os.path.join(current, n) for n in names if n.endswith(".log")]
            journals += [os.path.join(current, n) for n in names if n.endswith(".txn")]
            if not logs and not os.path.isdir(os.path.join(current, "locations")):
                continue
            index, why = _locations_index(current, ids) if use_index else (None, None)
            if why is not None:
                notes.append(why)
            ledger_dirs.append((current, logs, index))
        if not ledger_dirs and not journals:
            raise FileNotFoundError(f"no entry logs (current/*.log) or journals (current/*.txn) under {list(dirs)}")
        batch, scanned, journaled = _native.read_bookie_dirs(ledger_dirs, wanted, journals if journal else [])
        table = pa.table(batch)
        damaged = pc.equal(table["ledger_id"], -1)
        if notes:
            n = len(notes)
            note = pa.table(
                {
                    "ledger_id": pa.array([-1] * n, pa.int64()),
                    "entry_id": pa.array([-1] * n, pa.int64()),
                    "data": pa.array([None] * n, pa.binary()),
                    "error": pa.array(notes, pa.string()),
                }
            ).cast(table.schema)
        #: Damaged places in the files (and indexes that could not be used), each naming the file
        #: and offset.
        self.errors = pa.concat_tables([note, table.filter(damaged)]) if notes else table.filter(damaged)
        #: Whether a ``locations`` index was used.
        self.indexed = any(index is not None for _, _, index in ledger_dirs)
        #: The ledgers scanned for in the entry logs, and those read from the journals.
        self.scanned: list[int] = scanned
        self.journaled: list[int] = journaled
        self._entries = table.filter(pc.invert(damaged))

    def read_ledger(self, ledger_id: int, metadata: bytes, first: int = 0, last: int | None = None) -> pa.Table:
        t = self._entries
        keep = pc.and_(pc.equal(t["ledger_id"], ledger_id), pc.greater_equal(t["entry_id"], first))
        if last is not None:
            keep = pc.and_(keep, pc.less_equal(t["entry_id"], last))
        return t.filter(keep)


def _offload_where(offload: dict[str, Any]) -> str:
    """The offload driver and its properties when known (the metadata store
    has them), else the object name's offload id (all the admin REST API gives)."""
    if offload.get("driver") is None:
        return f"offload id {_offloaded_uuid(offload)}"
    return f"driver {offload.get('driver')!r}, properties {offload.get('driver_properties')}"


def _offloaded_uuid(offload: dict[str, Any]) -> str:
    if offload.get("uuid"):
        return str(uuid.UUID(offload["uuid"]))
    mask = (1 << 64) - 1
    return str(uuid.UUID(int=((offload["uid_msb"] & mask) << 64) | (offload["uid_lsb"] & mask)))


def _with_partition(batch: Any, partition: int) -> pa.Table:
    t = pa.table(batch) if not isinstance(batch, pa.Table) else batch
    t = t.add_column(2, "partition", pa.array([partition] * t.num_rows, pa.int32()))
    return t.select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA)


def _error_rows(ledger_id: int, partition: int, message: str) -> pa.Table:
    return pa.table(
        {"ledger_id": [ledger_id], "entry_id": [-1], "partition": [partition], "data": [None], "error": [message]},
        schema=ENTRY_SCHEMA,
    )


def iter_topic(
    layout: TopicLayout,
    *,
    reader: Any | None = None,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
    read_compacted: bool = False,
) -> Iterator[pa.Table]:
    """The topic's entries, a table per ledger, in topic order, partition by
    partition. A ledger that cannot be read at all gives one error row."""
    reader = reader or _native.BookieReader(layout.bookies)
    for part in layout.partitions:
        # The first position to read: the later of `start` and the entry after the compaction horizon.
        lower = start
        if read_compacted and part.compacted is not None and part.compacted.metadata is None:
            # A compacted view without its compacted ledger would silently be the whole topic.
            yield _error_rows(
                part.compacted.ledger_id,
                part.partition,
                f"compacted ledger {part.compacted.ledger_id}: {NO_METADATA}",
            )
        if read_compacted and part.compacted is not None and part.compacted.metadata is not None:
            records = reader.read_ledger(part.compacted.ledger_id, part.compacted.metadata)
            yield from _compacted_entries(records, part)
            horizon = part.horizon or _compacted_to(part.compacted)
            if horizon is not None:
                after = (horizon[0], horizon[1] + 1)
                lower = after if lower is None else max(lower, after)
        for led in part.ledgers:
            first, last = 0, None
            if lower is not None:
                if led.ledger_id < lower[0]:
                    continue
                if led.ledger_id == lower[0]:
                    first = lower[1]
            if end is not None:
                if led.ledger_id > end[0]:
                    break
                if led.ledger_id == end[0]:
                    last = end[1]
            yield _read_ledger(led, part.partition, reader, first, last, offload_filesystem, offload_prefix)


def _read_ledger(
    led: Ledger, partition: int, reader: Any, first: int, last: int | None, fs: Any, prefix: str
) -> pa.Table:
    off = led.offload
    if off is not None and (led.metadata is None or off.get("bookkeeper_deleted") or fs is not None):
        if fs is None:
            return _error_rows(
                led.ledger_id,
                partition,
                f"ledger {led.ledger_id} is offloaded ({_offload_where(off)}) and no offload_filesystem was given",
            )
        from .offload import read_offloaded_ledger

        name = f"{_offloaded_uuid(off)}-ledger-{led.ledger_id}"
        path = f"{prefix.rstrip('/')}/{name}" if prefix else name
        try:
            table = read_offloaded_ledger(
                path, filesystem=fs, ledger_id=led.ledger_id, first_entry=first, last_entry=last
            )
        except OSError as e:
            return _error_rows(led.ledger_id, partition, f"offloaded ledger {led.ledger_id} at {path}: {e}")
        return _with_partition(table, partition)
    if led.metadata is None:
        return _error_rows(led.ledger_id, partition, f"ledger {led.ledger_id}: {NO_METADATA}")
    try:
        batch = reader.read_ledger(led.ledger_id, led.metadata, first, last)
    except OSError as e:
        return _error_rows(led.ledger_id, partition, str(e))
    return _with_partition(batch, partition)


def _compacted_entries(records: Any, part: Partition) -> Iterator[pa.Table]:
    """The compacted ledger's records as topic entries (their original ids)."""
    from ._compaction import from_ledger_records

    table = pa.table(records)
    good = table.filter(table["error"].is_null())
    bad = table.filter(table["error"].is_valid())
    entries = from_ledger_records(pa.table({"record": good["data"]}))
    entries = entries.set_column(
        entries.schema.get_field_index("partition"),
        "partition",
        pa.array([part.partition] * entries.num_rows, pa.int32()),
    )
    yield entries.select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA)
    if bad.num_rows:
        yield _with_partition(bad, part.partition)


def _compacted_to(compacted: Ledger) -> tuple[int, int] | None:
    """The compacted ledger's ``pulsar/compactedTo``: the last message compaction
    kept, a lower bound of the horizon when the cursor does not give it."""
    raw = compacted.info.get("custom_metadata", {}).get("pulsar/compactedTo")
    if raw is None:
        return None
    mid = _native.MessageId.deserialize(bytes(raw))
    return (mid.ledger_id, mid.entry_id)


def read_topic(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    partitions: Sequence[int] | None = None,
    start_message_id: tuple[int, int] | None = None,
    end_message_id: tuple[int, int] | None = None,
    read_compacted: bool = False,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    timeout: float = 30.0,
) -> pa.Table:
    """A topic's entries straight from the cluster's storage, in topic order:
    ``ledger_id, entry_id, partition, data, error``, ready for :func:`decode`.

    Live ledgers come from the bookies (read only: no fencing, nothing past
    the last-add-confirmed); offloaded ones from ``offload_filesystem`` (a
    ``pyarrow.fs`` filesystem, ``offload_prefix`` the bucket or directory).
    ``read_compacted`` gives the compacted view: the compacted ledger, then
    the topic after the compaction horizon. ``start_message_id`` and
    ``end_message_id`` are inclusive ``(ledger_id, entry_id)`` bounds.

    ``bookie_dirs`` reads a stopped cluster from its bookies' data directories
    instead (see :class:`BookieFiles`: entry logs under ``.../current/``, the
    DbLedgerStorage ``locations`` index when present, the journals for what
    was not flushed): each copy's digest is checked, ledgers are bounded by
    their metadata, and damaged places in the files become error rows naming
    the file and offset.

    The layout comes from the metadata store (``metadata_url`` ``zk:...`` or
    ``rocksdb:...``) or, for users who cannot reach it, from the broker's
    admin REST API (``admin_url``, or an ``http(s)://`` ``metadata_url``;
    ``admin_token`` is sent as ``Authorization: Bearer``). The entries never go
    through the broker. The REST API gives bookie ids, not addresses: ids that
    are not ``host:port`` need ``bookie_addresses`` (id -> ``host:port``); it
    omits ledger passwords, which ``ledger_password`` stands in for (Pulsar's
    default is empty; only HMAC digests use it).
    """
    layout = topic_layout(
        topic,
        metadata_url=metadata_url,
        admin_url=admin_url,
        admin_token=admin_token,
        bookie_addresses=bookie_addresses,
        ledger_password=ledger_password,
        partitions=partitions,
        timeout=timeout,
        offline=bookie_dirs is not None,
    )
    return read_layout(
        layout,
        start_message_id=start_message_id,
        end_message_id=end_message_id,
        read_compacted=read_compacted,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        bookie_dirs=bookie_dirs,
        timeout=timeout,
    )


def topic_layout(
    topic: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    partitions: Sequence[int] | None = None,
    timeout: float = 30.0,
    offline: bool = False,
) -> TopicLayout:
    """The layout :func:`read_topic` reads, from the metadata store or the
    admin REST API (see :func:`read_topic`); ``offline`` (reading bookie
    files) needs no bookie addresses."""
    if (metadata_url is None) == (admin_url is None):
        raise ValueError(
            "give one of metadata_url ('zk:host:2181', 'rocksdb:/path', 'http://broker:8080') or admin_url"
        )
    rest_url = admin_url if admin_url is not None else metadata_url if is_admin_url(metadata_url or "") else None
    if rest_url is not None:
        admin = AdminRest(rest_url, token=admin_token, timeout=timeout)
        layout = resolve_topic_admin(
            topic,
            admin,
            partitions=partitions,
            ledger_password=ledger_password,
            bookie_addresses=bookie_addresses,
        )
        unresolved = _unresolved_bookies(layout, bookie_addresses)
        if unresolved and not offline:
            raise ValueError(
                f"bookie ids {unresolved} are not host:port and the admin REST API gives no bookie addresses: "
                f"pass bookie_addresses={{{unresolved[0]!r}: 'host:port', ...}}"
            )
    else:
        assert metadata_url is not None
        store = open_store(metadata_url, timeout=timeout)
        try:
            layout = resolve_topic(topic, store, partitions=partitions)
        finally:
            store.close()
        if bookie_addresses:
            layout = TopicLayout(layout.topic, layout.partitions, {**layout.bookies, **bookie_addresses})
    return layout


def read_layout(
    layout: TopicLayout,
    *,
    start_message_id: tuple[int, int] | None = None,
    end_message_id: tuple[int, int] | None = None,
    read_compacted: bool = False,
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    bookie_dirs: Sequence[str] | None = None,
    timeout: float = 30.0,
) -> pa.Table:
    """The entries of a resolved layout, as :func:`read_topic` gives them."""
    reader: Any
    tables: list[pa.Table] = []
    if bookie_dirs is not None:
        ledgers = [led for p in layout.partitions for led in [*p.ledgers, p.compacted] if led is not None]
        reader = BookieFiles(bookie_dirs, ledgers)
        if reader.errors.num_rows:
            tables.append(_with_partition(reader.errors, -1))
    else:
        reader = _native.BookieReader(layout.bookies, timeout_ms=int(timeout * 1000))
    tables += list(
        iter_topic(
            layout,
            reader=reader,
            offload_filesystem=offload_filesystem,
            offload_prefix=offload_prefix,
            start=start_message_id,
            end=end_message_id,
            read_compacted=read_compacted,
        )
    )
    # One chunk per ledger in every column, and no empty chunks: consumers that walk the record
    # batches (PySpark's createDataFrame stops at an empty one) see every row.
    tables = [t.combine_chunks() for t in tables if t.num_rows]
    if not tables:
        return ENTRY_SCHEMA.empty_table()
    return pa.concat_tables(tables)
