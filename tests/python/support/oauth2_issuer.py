"""An OAuth2 issuer on 127.0.0.1 for the tests: OpenID discovery and the client credentials grant.

``grant(form, n)`` answers the ``n``-th token request (its form fields) with an HTTP status and a JSON body,
so each test decides what a token is and whom it is given to. Each request is recorded in ``forms``. The
server is bounded: :meth:`Issuer.close` stops it (the fixtures do)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Grant = Callable[[dict[str, str], int], tuple[int, dict[str, Any]]]


class Issuer:
    def __init__(self, grant: Grant) -> None:
        self.forms: list[dict[str, str]] = []
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    self._json(200, {"issuer": issuer.url, "token_endpoint": issuer.url + "/oauth/token"})
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(min(size, 65536)).decode()))
                issuer.forms.append(form)
                self._json(*grant(form, len(issuer.forms)))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
