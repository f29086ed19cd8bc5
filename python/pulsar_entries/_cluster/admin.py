"""A topic's layout from the broker's admin REST API (the entries still come
from the bookies or tiered storage, never through the broker).
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import pulsar_entries._native as _native

from .layout import COMPACTION_CURSOR, Ledger, Partition, TopicLayout, select_partitions


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
    names = select_partitions(base, names, partitions)
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
