"""Local server processes for :mod:`pulsar_entries._standalone`: free loopback ports, stopping a
process by its PID, log tails, plain HTTP, and moto's S3 server (the standalone's offload target).

Split from the standalone module, which starts the broker; everything here binds 127.0.0.1 and
stops only the processes it started, by PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

LOOPBACK = "127.0.0.1"
#: Generic credentials for the loopback S3 (moto accepts any).
S3_ACCESS_KEY = "pulsar-entries-test"
S3_SECRET_KEY = "pulsar-entries-test-secret"
S3_REGION = "us-east-1"

# moto's server, answering every request as S3. Its stock dispatcher guesses the AWS service of each
# request from headers and path; under the offloader's concurrent multipart uploads it sometimes
# guesses none and answers HTTP 500, which fails the offload.
_MOTO_S3_ONLY = """
import sys
from werkzeug.serving import run_simple
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

class S3Only(DomainDispatcherApplication):
    def get_application(self, environ):
        if environ.get("PATH_INFO", "").startswith("/moto-api"):
            return super().get_application(environ)
        with self.lock:
            app = self.app_instances.get("s3")
            if app is None:
                app = self.app_instances["s3"] = self.create_app("s3")
            return app

run_simple(sys.argv[1], int(sys.argv[2]), S3Only(create_backend_app), threaded=True,
           request_handler=MotoRequestHandler)
"""


class StandaloneError(RuntimeError):
    """The broker (or moto) did not start, or stopped unexpectedly; the message names its log."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive TCP ports free on 127.0.0.1 right now (the standalone
    numbers its bookies from one port up)."""
    for _ in range(100):
        first = free_port()
        if first + count > 65535:
            continue
        held = []
        try:
            for port in range(first, first + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(s)
                s.bind((LOOPBACK, port))
            return first
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise OSError(f"no {count} consecutive free ports on {LOOPBACK}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def _stop_pid(proc: subprocess.Popen[bytes] | None, grace: float) -> None:
    """SIGTERM the process, wait up to ``grace`` seconds, then SIGKILL it."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _http(
    method: str,
    url: str,
    body: bytes | None = None,
    timeout: float = 30,
    content_type: str = "application/json",
    token: str | None = None,
) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class MotoServer:
    """moto's S3 server on 127.0.0.1 (objects live in its memory only), serving S3 alone."""

    def __init__(
        self, workdir: Path, *, python: str = sys.executable, port: int | None = None, startup_timeout: float = 60.0
    ) -> None:
        self.workdir = Path(workdir)
        self.python = python
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.log_path = self.workdir / "moto.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> MotoServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [self.python, "-c", _MOTO_S3_ONLY, LOOPBACK, str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise StandaloneError(
                    f"moto server exited with {self.proc.returncode}; log {self.log_path}:\n{_tail(self.log_path)}"
                )
            try:
                status, _ = _http("GET", f"{self.endpoint}/moto-api/", timeout=2)
                if status < 500:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise StandaloneError(f"moto server not up after {self.startup_timeout:.0f} s; log {self.log_path}")
            time.sleep(0.2)

    def create_bucket(self, bucket: str) -> None:
        status, body = _http("PUT", f"{self.endpoint}/{bucket}", body=b"")
        if status != 200:
            raise StandaloneError(f"moto: creating bucket {bucket!r} gave HTTP {status}: {body[:300]!r}")

    def stop(self, grace: float = 10.0) -> None:
        _stop_pid(self.proc, grace)

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
