"""A stand-in for a broker's admin REST API: canned answers by path on 127.0.0.1 (port 0), served by a
daemon thread, stopped by :meth:`FakeAdmin.close` (or the ``with`` block). It records each request's
path and headers. Besides JSON answers it can misbehave as a broken or hostile broker does: redirect,
drip its reply a byte at a time, claim a huge ``Content-Length`` or stream a huge body."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: No handler of a fake runs longer than this, whatever it was asked to do.
HANDLER_LIMIT = 30.0


@dataclass
class Reply:
    """A hand-made answer. ``body`` is sent as is; ``length`` is the ``Content-Length`` claimed (the
    body's length by default; ``-1``: none); ``drip``: seconds between single bytes of the status line,
    headers and body; ``stream``: that many more bytes of body, in 64 KiB writes; ``delay``: seconds
    before answering."""

    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    length: int | None = None
    drip: float | None = None
    stream: int = 0
    delay: float = 0.0


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status=status, body=b"", headers={"Location": location})


class FakeAdmin:
    """Canned answers by path (``routes``: path -> JSON value, bytes, :class:`Reply`, or ``None`` for a
    404 like the broker's for an unknown topic); records each request's path and headers."""

    def __init__(self, routes: dict[str, Any] | None = None, *, not_found: str = "Topic not found") -> None:
        self.routes: dict[str, Any] = dict(routes or {})
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append((self.path, dict(self.headers)))
                answer = fake.routes.get(self.path)
                if not isinstance(answer, Reply):
                    if answer is None:
                        answer = Reply(404, json.dumps({"reason": not_found}).encode())
                    elif isinstance(answer, bytes):
                        answer = Reply(body=answer)
                    else:
                        answer = Reply(body=json.dumps(answer).encode())
                fake._answer(self, answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _answer(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        limit = time.monotonic() + HANDLER_LIMIT
        if reply.delay:
            self.stopping.wait(min(reply.delay, HANDLER_LIMIT))
        length = len(reply.body) + reply.stream if reply.length is None else reply.length
        head = f"HTTP/1.1 {reply.status} Fake\r\nContent-Type: application/json\r\nConnection: close\r\n"
        if length >= 0:
            head += f"Content-Length: {length}\r\n"
        for name, value in reply.headers.items():
            head += f"{name}: {value}\r\n"
        data = head.encode() + b"\r\n" + reply.body
        try:
            if reply.drip is None:
                handler.wfile.write(data)
            else:
                for i in range(len(data)):
                    if self.stopping.is_set() or time.monotonic() > limit:
                        return
                    handler.wfile.write(data[i : i + 1])
                    handler.wfile.flush()
                    time.sleep(reply.drip)
            block = b" " * 65536
            left = reply.stream
            while left > 0 and not self.stopping.is_set() and time.monotonic() < limit:
                handler.wfile.write(block[: min(left, len(block))])
                left -= len(block)
            handler.wfile.flush()
        except OSError:  # the client hung up, as it should on a bad reply
            pass
        handler.close_connection = True

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
