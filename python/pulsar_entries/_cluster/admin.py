"""A topic's layout from the broker's admin REST API (the entries still come
from the bookies or tiered storage, never through the broker).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import pulsar_entries._native as _native

from .._redact import redact
from ..auth import AdminTls, Authentication, Token
from .layout import COMPACTION_CURSOR, Ledger, Partition, TopicLayout, check_partition_count, select_partitions
from .stores import check_timeout

#: The largest reply body read from the admin REST API (64 MiB): a big topic's
#: internal stats run to several MiB; a reply above the cap is an error, not read.
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: Redirects followed per request (brokers answer 307 to the broker that owns a topic).
MAX_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)
_CHUNK = 64 * 1024


def is_admin_url(url: str) -> bool:
    """Whether ``url`` names a broker's admin REST API (``http://`` or ``https://``)."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


def _origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)``, the port filled in from the scheme."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


class _Deadline:
    """Shuts a connection's socket down when its time is up, so that no read
    (headers or body, however slowly the server drips them) outlasts it."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn = conn
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class AdminRest:
    """A broker's admin REST API (``/admin/v2``), read only: GET requests with
    an optional token (``Authorization: Bearer``) or authentication method
    (:mod:`pulsar_entries.auth`), and ``tls`` for https (:class:`AdminTls`).

    ``timeout`` bounds each request as a whole: connecting, the headers and
    the whole body, redirects included (name resolution aside); a request not
    complete by then is a :class:`TimeoutError`. :meth:`get` also takes a
    ``deadline`` (a :func:`time.monotonic` value) for several requests that share
    one budget. Redirects are followed (at most :data:`MAX_REDIRECTS`), and the
    credentials are sent only to the origin (scheme, host, port) of ``url``. A reply
    body above ``max_reply_bytes`` (default :data:`MAX_REPLY_BYTES`) is an error."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        auth: Authentication | None = None,
        tls: AdminTls | None = None,
        timeout: float = 10.0,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        if not is_admin_url(url):
            raise ValueError(f"admin_url {redact(str(url))[:200]!r}: expected http://host:port or https://host:port")
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018 - a port that is not a number raises here
        except ValueError:
            raise ValueError(f"admin_url {redact(url)!r}: not a valid URL") from None
        if parts.hostname is None:
            raise ValueError(f"admin_url {redact(url)!r}: no host")
        if token is not None and auth is not None:
            raise ValueError("give the admin token or an authentication method, not both")
        self.url = url.rstrip("/")
        self._auth: Authentication | None = Token(token) if token is not None else auth
        self._tls = tls
        self._context: ssl.SSLContext | None = None
        self._timeout = check_timeout("timeout", timeout)
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
            raise ValueError(f"max_reply_bytes: expected a positive integer, got {max_reply_bytes!r}")
        self._max = max_reply_bytes

    def __repr__(self) -> str:
        return f"AdminRest({self._shown(self.url)!r}, auth={self._auth!r}, timeout={self._timeout:g})"

    def _shown(self, text: str) -> str:
        return redact(text, *(self._auth.secrets() if self._auth is not None else ()))

    def _ssl(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = (self._tls or AdminTls()).context(self._auth)
        return self._context

    def get(self, path: str, *, what: str | None = None, deadline: float | None = None) -> Any:
        """The JSON answer to ``GET {url}{path}``. A 404 raises :class:`LookupError`
        naming ``what`` (or the path); every failure is one line. The request
        ends by ``timeout`` seconds from now, or by ``deadline`` if that is sooner."""
        url = self.url + path
        started = time.monotonic()
        end = started + self._timeout
        if deadline is not None:
            end = min(end, deadline)
        try:
            status, reason, raw, where = self._fetch(url, end)
        except TimeoutError:
            raise TimeoutError(
                f"GET {self._shown(url)}: no complete answer within {max(end - started, 0):.3g} s"
            ) from None
        if status == 200:
            try:
                return json.loads(raw)
            except RecursionError:
                raise ValueError(f"GET {self._shown(url)}: JSON nested too deeply") from None
            except ValueError as e:
                raise ValueError(
                    f"GET {self._shown(url)}: malformed JSON ({e}): {self._shown(repr(raw[:80]))}"
                ) from None
        text = self._shown(_reason(raw, reason))
        if status == 404:
            raise LookupError(f"{what or path}: the broker at {self._shown(self.url)} answered 404 ({text})")
        if status in (401, 403):
            hint = "pass an admin token or an authentication method"
            if self._auth is not None and _origin(where) != _origin(self.url):
                hint = f"the credentials are not sent to {self._shown(where)}, which the broker redirected to"
            elif self._auth is not None:
                hint = f"the broker refused the credentials of {self._auth!r}"
            raise PermissionError(f"GET {self._shown(url)}: HTTP {status} ({text}); {hint}")
        raise OSError(f"GET {self._shown(url)}: HTTP {status} ({text})")

    def _fetch(self, url: str, end: float) -> tuple[int, str, bytes, str]:
        """``(status, reason, body, final url)`` of GET ``url``, redirects followed."""
        origin = _origin(self.url)
        current = url
        retried = False
        hops = 0
        while hops <= MAX_REDIRECTS:
            headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
            ours = self._auth is not None and _origin(current) == origin
            if ours:
                assert self._auth is not None
                value = self._auth.authorization(end)
                if value:
                    headers["Authorization"] = value
            status, reason, location, body = self._once(current, headers, end)
            if status == 401 and ours and not retried and self._auth is not None and self._auth.renewable:
                # A token may have expired early or been revoked: a method that can fetch another does so, once.
                self._auth.invalidate()
                retried = True
                continue
            if status not in _REDIRECTS or not location:
                return status, reason, body, current
            target = urllib.parse.urljoin(current, location)
            if not is_admin_url(target):
                raise OSError(f"GET {self._shown(url)}: redirected to {self._shown(target)[:200]!r}, not http(s)")
            current = target
            hops += 1
        raise OSError(f"GET {self._shown(url)}: more than {MAX_REDIRECTS} redirects (last to {self._shown(current)})")

    def _once(self, url: str, headers: dict[str, str], end: float) -> tuple[int, str, str | None, bytes]:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname or "", parts.port
        conn: http.client.HTTPConnection
        if parts.scheme.lower() == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=left, context=self._ssl())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=left)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        watchdog = _Deadline(conn, left)
        try:
            try:
                conn.request("GET", target, headers=headers)
                resp = conn.getresponse()
                status = resp.status
                if status in _REDIRECTS:
                    return status, resp.reason, resp.getheader("Location"), b""
                limit = self._max if status == 200 else _CHUNK  # an error's body only gives its reason
                body = self._body(url, resp, limit, strict=status == 200)
                return status, resp.reason, None, body
            except (OSError, http.client.HTTPException) as e:
                if watchdog.fired or isinstance(e, (TimeoutError, socket.timeout)):
                    raise TimeoutError from None
                if isinstance(e, http.client.HTTPException):
                    raise OSError(
                        f"admin REST API {self._shown(self.url)}: broken answer to GET {self._shown(url)} ({e!r})"
                    ) from None
                raise OSError(f"admin REST API {self._shown(self.url)} unreachable: {self._shown(str(e))}") from None
            finally:
                if watchdog.fired:
                    raise TimeoutError
        finally:
            watchdog.cancel()
            conn.close()

    def _body(self, url: str, resp: http.client.HTTPResponse, limit: int, *, strict: bool) -> bytes:
        """The body, read in chunks; above ``limit`` bytes an error (``strict``) or cut."""
        claimed = resp.getheader("Content-Length")
        if strict and claimed is not None and claimed.strip().isdigit() and int(claimed) > limit:
            raise OSError(
                f"GET {self._shown(url)}: the reply is {int(claimed):,} bytes (Content-Length), "
                f"above the cap of {limit:,} bytes"
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = resp.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if not strict:
                    break
                raise OSError(
                    f"GET {self._shown(url)}: the reply is more than {limit:,} bytes (read {size:,}), above the cap"
                )
        return b"".join(chunks)[:limit]


def _reason(body: bytes, fallback: str) -> str:
    """The ``reason`` of a broker's JSON error body, first line; else the HTTP reason."""
    try:
        reason = json.loads(body).get("reason")
        if reason:
            return str(reason).splitlines()[0][:300]
    except Exception:
        pass
    return str(fallback)


def _rest_path(topic: str) -> str:
    """``/admin/v2/persistent/tenant/ns/topic`` for a full topic name."""
    rest = topic.removeprefix("persistent://")
    parts = rest.split("/")
    if len(parts) == 4:  # a v1 name: property/cluster/namespace/topic
        return "/admin/persistent/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)
    tenant, ns, local = rest.split("/", 2)
    return "/admin/v2/persistent/" + "/".join(urllib.parse.quote(p, safe="") for p in (tenant, ns, local))


_MISSING: Any = object()


class _Answer:
    """A broker's JSON answer for one topic, read field by field: a field of
    the wrong shape is a one-line ValueError naming the topic, the field's path
    (``internalStats.ledgers[3].ledgerId``) and the value, never a KeyError or
    AttributeError from deep inside."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def bad(self, path: str, value: Any, expected: str) -> ValueError:
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return ValueError(f"topic {self.topic}: the broker's {path} is {shown}, expected {expected}")

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.bad(path, value, "an object")
        return value

    def field(self, obj: dict[str, Any], key: str, path: str, kind: str, default: Any = _MISSING) -> Any:
        """``obj[key]`` checked as ``kind``: ``int`` (not bool, not float),
        ``count`` (an int >= 0), ``int-1`` (an int >= -1), ``bool``, ``str``,
        ``dict``, ``list``. An absent or null field is ``default`` (required
        when there is none)."""
        where = f"{path}.{key}"
        value = obj.get(key)
        if value is None:
            if default is _MISSING:
                raise self.bad(where, value, f"a value ({kind})")
            return default
        if kind in ("int", "count", "int-1"):
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.bad(where, value, "an integer")
            if (kind == "count" and value < 0) or (kind == "int-1" and value < -1):
                raise self.bad(where, value, "a non-negative integer" if kind == "count" else "an integer >= -1")
            return value
        types: dict[str, Any] = {"bool": bool, "str": str, "dict": dict, "list": list}
        if not isinstance(value, types[kind]):
            expected = {"bool": "true or false", "str": "a string", "dict": "an object", "list": "a list"}[kind]
            raise self.bad(where, value, expected)
        return value

    def position(self, obj: dict[str, Any], key: str, path: str) -> tuple[int, int] | None:
        """A ``"ledger:entry"`` position (two integers), or ``None`` when absent."""
        text = self.field(obj, key, path, "str", None)
        if text is None:
            return None
        ledger, sep, entry = text.partition(":")
        try:
            if not sep or not ledger.lstrip("-").isdigit() or not entry.lstrip("-").isdigit():
                raise ValueError
            return int(ledger), int(entry)
        except ValueError:
            raise self.bad(f"{path}.{key}", text, "'ledgerId:entryId'") from None


def _looks_like_address(bookie: str) -> bool:
    host, sep, port = bookie.rpartition(":")
    return bool(sep and host and port.isdigit())


def _admin_ledger(ledger_id: int, entries: int, size: int, text: Any, password: bytes, offload: Any) -> Ledger:
    node = None if not text else _native.ledger_node_from_text(ledger_id, text, password)
    info: dict[str, Any] = {} if node is None else dict(_native.ledger_metadata(ledger_id, node))
    return Ledger(ledger_id, entries, size, node, info, offload)


def resolve_topic_admin(
    topic: str,
    admin: AdminRest,
    *,
    partitions: Sequence[int] | None = None,
    ledger_password: bytes = b"",
    bookie_addresses: Mapping[str, str] | None = None,
    deadline: float | None = None,
) -> TopicLayout:
    """A topic's layout from the broker's admin REST API: partitions
    (``.../partitions``), ledgers with their BookKeeper metadata and the
    compacted ledger (``.../internalStats?metadata=true``), the compaction
    horizon (the ``__compaction`` cursor's mark-delete position) and, for
    offloaded ledgers, the offload ids (``.../internal-info``).

    Each request is bounded by the ``AdminRest``'s ``timeout``; ``deadline`` (a
    :func:`time.monotonic` value) also bounds them all together, when given.
    Every answer's shape is checked: a field of the wrong type is a one-line
    ValueError naming the topic and the field.

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
        answer = _Answer(base)
        meta = answer.obj(
            admin.get(_rest_path(base) + "/partitions", what=f"unknown topic {base}", deadline=deadline), "partitions"
        )
        n = check_partition_count(base, meta.get("partitions", 0), "the broker's partitions")
        names = [(base, -1)] if n == 0 else [(_native.partition_name(base, i), i) for i in range(n)]
    names = select_partitions(base, names, partitions)
    parts = []
    for name, index in names:
        answer = _Answer(name)
        path = _rest_path(name)
        stats, ledger_list = _internal_stats(admin, path, answer, deadline=deadline)
        uuids: dict[int, str] = {}
        if any(offloaded for _, _, _, _, offloaded in ledger_list):
            info = answer.obj(
                admin.get(path + "/internal-info", what=f"unknown topic {name}", deadline=deadline), "internal-info"
            )
            for i, item in enumerate(answer.field(info, "ledgers", "internal-info", "list", [])):
                where = f"internal-info.ledgers[{i}]"
                led = answer.obj(item, where)
                lid = answer.field(led, "ledgerId", where, "count")
                uuid = answer.field(led, "offloadedContextUuid", where, "str", None)
                if answer.field(led, "isOffloaded", where, "bool", False) and uuid:
                    uuids[lid] = uuid
        ledgers = []
        for lid, entries, size, text, offloaded in ledger_list:
            offload: dict[str, Any] | None = None
            if offloaded:
                if lid not in uuids:
                    raise ValueError(f"topic {name}: ledger {lid} is offloaded but internal-info gives no offload id")
                offload = {"uuid": uuids[lid], "driver": None, "driver_properties": {}, "bookkeeper_deleted": False}
            ledgers.append(_admin_ledger(lid, entries, size, text, ledger_password, offload))
        compacted, horizon = None, None
        cursors = answer.field(stats, "cursors", "internalStats", "dict", {})
        if cursors.get(COMPACTION_CURSOR) is not None:
            where = f"internalStats.cursors.{COMPACTION_CURSOR}"
            cursor = answer.obj(cursors[COMPACTION_CURSOR], where)
            horizon = answer.position(cursor, "markDeletePosition", where)
            c = answer.field(stats, "compactedLedger", "internalStats", "dict", {})
            cid = answer.field(c, "ledgerId", "internalStats.compactedLedger", "int-1", -1)
            loaded = cid >= 0
            if not loaded:
                # The broker has not loaded it: the cursor still names it, without its metadata.
                props = answer.field(cursor, "properties", where, "dict", {})
                cid = answer.field(props, "CompactedTopicLedger", where + ".properties", "int-1", -1)
            if cid >= 0:
                compacted = _admin_ledger(
                    cid,
                    answer.field(c, "entries", "internalStats.compactedLedger", "int-1", 0) if loaded else 0,
                    answer.field(c, "size", "internalStats.compactedLedger", "int-1", 0) if loaded else 0,
                    answer.field(c, "metadata", "internalStats.compactedLedger", "str", None) if loaded else None,
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


#: One ledger of internal-stats: id, entries, size, metadata text (or None), offloaded.
_StatsLedger = tuple[int, int, int, "str | None", bool]


def _internal_stats(
    admin: AdminRest, path: str, answer: _Answer, attempts: int = 3, *, deadline: float | None = None
) -> tuple[dict[str, Any], list[_StatsLedger]]:
    """``internalStats?metadata=true``, its shape checked: the answer and its
    ledgers. The broker fills each ledger's ``metadata`` from its ledger handle
    without waiting for handles still opening, so a ledger can come without it:
    ask again (``attempts`` times in all, a short pause between) and keep the
    metadata any answer gave. Offloaded ledgers never carry it (Pulsar 4.2.4):
    they are not waited for."""
    seen: dict[int, str] = {}
    stats: dict[str, Any] = {}
    ledgers: list[_StatsLedger] = []
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.3 * attempt)
        got = admin.get(path + "/internalStats?metadata=true", what=f"unknown topic {answer.topic}", deadline=deadline)
        if not isinstance(got, dict) or not isinstance(got.get("ledgers"), list):
            raise ValueError(f"topic {answer.topic}: the broker's internal-stats has no ledger list")
        stats = got
        ledgers = []
        for i, item in enumerate(stats["ledgers"]):
            where = f"internalStats.ledgers[{i}]"
            led = answer.obj(item, where)
            ledgers.append(
                (
                    answer.field(led, "ledgerId", where, "count"),
                    answer.field(led, "entries", where, "count", 0),
                    answer.field(led, "size", where, "count", 0),
                    answer.field(led, "metadata", where, "str", None),
                    answer.field(led, "offloaded", where, "bool", False),
                )
            )
        c = answer.field(stats, "compactedLedger", "internalStats", "dict", {})
        cid = answer.field(c, "ledgerId", "internalStats.compactedLedger", "int-1", -1)
        ctext = answer.field(c, "metadata", "internalStats.compactedLedger", "str", None)
        for lid, _, _, text, _ in [*ledgers, (cid, 0, 0, ctext, False)]:
            if text:
                seen[lid] = text
        missing = [
            lid
            for lid, _, _, _, off in [*ledgers, (cid, 0, 0, None, False)]
            if lid >= 0 and not off and lid not in seen
        ]
        if not missing:
            break
    ledgers = [(lid, e, s, seen.get(lid, text), off) for lid, e, s, text, off in ledgers]
    c = stats.get("compactedLedger") or {}
    if isinstance(c, dict) and c.get("ledgerId") in seen:
        c["metadata"] = seen[c["ledgerId"]]
    return stats, ledgers


def _unresolved_bookies(layout: TopicLayout, given: Mapping[str, str] | None) -> list[str]:
    return [b for b, addr in layout.bookies.items() if b not in (given or {}) and not _looks_like_address(addr)]
