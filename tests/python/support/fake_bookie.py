"""A fake bookie on 127.0.0.1 for the reader's hardening tests: v2 READENTRY and v3 READ_LAC for
ledgers it makes up on the fly (DUMMY digest, so the payloads need not be stored), and the ways a
broken or hostile bookie behaves: silent, trickling, claiming any last-add-confirmed.

Each connection is served by a daemon thread; :meth:`FakeBookie.close` stops accepting and closes
every connection. Use it as a context manager. :func:`topic_routes` gives the admin REST answers
(for :class:`support.admin_server.FakeAdmin`) of a topic whose ledgers such a bookie holds."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Callable
from typing import Any

from .protobuf_wire import pb_bytes, pb_fields, pb_int

Payload = Callable[[int, int], bytes | None]


def metadata_text(bookie: str, *, state: str = "CLOSED", last_entry_id: int = -1, length: int = 0) -> str:
    """A ledger's metadata as the admin REST API gives it (``LedgerMetadata.toSafeString()``)."""
    closed = f"length={length}, lastEntryId={last_entry_id}, " if state == "CLOSED" else ""
    return (
        "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, "
        f"state={state}, {closed}digestType=DUMMY, password=OMITTED, ensembles={{0=[{bookie}]}}}}"
    )


class FakeBookie:
    """``payload(ledger, entry)`` gives an entry's bytes (``None``: no such entry). ``mode`` is
    ``serve``, ``silent`` (reads requests, never answers) or ``trickle`` (a byte every
    ``trickle_s``). ``lac`` is the explicit last-add-confirmed READ_LAC claims (``None``: -1).
    ``tls``: START_TLS is answered EOK and the connection goes on inside TLS with this server
    context (without it, START_TLS is answered EBADREQ, as by a bookie without TLS); with
    ``tls_only``, a read on a plaintext connection is answered EUA, as by a bookie with
    ``BookieAuthZFactory``. Whatever happens, it stops by itself ``limit`` seconds after it started."""

    def __init__(
        self,
        payload: Payload,
        *,
        mode: str = "serve",
        lac: int | None = None,
        trickle_s: float = 0.5,
        limit: float = 300.0,
        tls: ssl.SSLContext | None = None,
        tls_only: bool = False,
    ) -> None:
        self.payload, self.mode, self.lac, self.trickle_s = payload, mode, lac, trickle_s
        self.tls, self.tls_only = tls, tls_only
        self.start_tls = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self.requests = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()
        self._limit = threading.Timer(limit, self._stop.set)
        self._limit.daemon = True
        self._limit.start()

    def __enter__(self) -> FakeBookie:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._limit.cancel()
        self._thread.join(5)
        self._listener.close()
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(0.5)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _recv(self, conn: socket.socket, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n and not self._stop.is_set():
            try:
                chunk = conn.recv(n - len(buf))
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf) if len(buf) == n else None

    def _send(self, conn: socket.socket, frame: bytes) -> bool:
        try:
            if self.mode == "trickle":
                for b in frame:
                    if self._stop.wait(self.trickle_s):
                        return False
                    conn.sendall(bytes([b]))
            else:
                conn.sendall(frame)
        except OSError:
            return False
        return True

    def _serve(self, conn: socket.socket) -> None:
        secure = False
        while not self._stop.is_set():
            head = self._recv(conn, 4)
            if head is None:
                return
            body = self._recv(conn, struct.unpack(">I", head)[0])
            if body is None:
                return
            self.requests += 1
            if self.mode == "silent":
                continue
            if body[0] != 0x02 and pb_fields(pb_fields(body)[1][0])[2][0] == 9:  # v3 START_TLS
                self.start_tls += 1
                header = pb_fields(body)[1][0]
                out = pb_bytes(1, header) + pb_int(2, 0 if self.tls else 404) + pb_bytes(106, b"")
                if not self._send(conn, struct.pack(">I", len(out)) + out):
                    return
                if self.tls is not None:
                    conn.settimeout(10)
                    try:
                        conn = self.tls.wrap_socket(conn, server_side=True)
                    except (OSError, ssl.SSLError):
                        return
                    conn.settimeout(0.5)
                    self._conns.append(conn)
                    secure = True
                continue
            if self.tls_only and not secure:
                if body[0] == 0x02:
                    ledger, entry = struct.unpack(">qq", body[4:20])
                    out = struct.pack(">Iiqq", 0x02020000, 102, ledger, entry)
                else:
                    out = pb_bytes(1, pb_fields(body)[1][0]) + pb_int(2, 502)
                if not self._send(conn, struct.pack(">I", len(out)) + out):
                    return
                continue
            if body[0] == 0x02:  # v2 READENTRY
                ledger, entry = struct.unpack(">qq", body[4:20])
                data = self.payload(ledger, entry)
                if data is None:
                    out = struct.pack(">Iiqq", 0x02020000, 2, ledger, entry)
                else:
                    header = struct.pack(">qqqq", ledger, entry, entry - 1, 0)
                    out = struct.pack(">Iiqq", 0x02020000, 0, ledger, entry) + header + data
            else:  # v3: READ_LAC only
                request = pb_fields(body)
                header = request[1][0]
                ledger = pb_fields(request[104][0])[1][0]
                lac = -1 if self.lac is None else self.lac
                lac_body = struct.pack(">qq", ledger, lac)
                inner = pb_int(1, 0) + pb_int(2, ledger) + pb_bytes(3, lac_body)
                out = pb_bytes(1, header) + pb_int(2, 0) + pb_bytes(104, inner)
            if not self._send(conn, struct.pack(">I", len(out)) + out):
                return


def topic_routes(topic_path: str, ledgers: list[dict[str, Any]]) -> dict[str, Any]:
    """The routes of :class:`support.admin_server.FakeAdmin` for of a non-partitioned topic ``tenant/ns/name`` with these ledgers
    (``internalStats`` entries: ``ledgerId``, ``entries``, ``size``, ``metadata``)."""
    base = f"/admin/v2/persistent/{topic_path}"
    return {
        f"{base}/partitions": {"partitions": 0},
        f"{base}/internalStats?metadata=true": {"ledgers": ledgers, "cursors": {}},
    }
