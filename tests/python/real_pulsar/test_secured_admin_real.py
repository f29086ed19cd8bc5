"""The admin REST API route against a secured Apache Pulsar 4.2.4 standalone: the broker requires token
authentication and serves https with a certificate of a CA the test makes. A local OAuth2 issuer (127.0.0.1)
hands out client-credentials tokens the broker accepts, each valid for a few seconds, so the read refreshes one.
The layout comes through the admin API; the entries still come from the bookie, never through the broker.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries._servers import free_port
from pulsar_entries._standalone import Standalone
from pulsar_entries.auth import AdminTls, OAuth2, Token

from .conftest import NS, build_classpath
from support.cli import run_cli

pytestmark = pytest.mark.real_pulsar

TOPIC = NS + "secured-orders"
CLIENT_ID, CLIENT_SECRET, AUDIENCE = "pulsar-entries-test", "cl1ent-s3cret-value", "urn:pulsar:test"
#: Seconds an issued token is valid: short, so that one read outlives a token.
LIFETIME = 4


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key: bytes, subject: str, lifetime: float | None = None) -> str:
    """An HS256 JWT, as Pulsar's AuthenticationProviderToken checks them (``tokenSecretKey``)."""
    claims: dict[str, Any] = {"sub": subject}
    if lifetime is not None:
        claims["exp"] = int(time.time() + lifetime)
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + _b64(json.dumps(claims).encode())
    return head + "." + _b64(hmac.new(key, head.encode(), hashlib.sha256).digest())


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)


def certificates(d: Path) -> dict[str, Path]:
    """A CA, and the broker's certificate for 127.0.0.1 signed by it (PEM; PKCS#8 key)."""
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(d / "ca.key"))
    openssl(
        "req",
        "-x509",
        "-new",
        "-key",
        str(d / "ca.key"),
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-out",
        str(d / "ca.pem"),
    )
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(d / "broker.key"))
    openssl("req", "-new", "-key", str(d / "broker.key"), "-subj", "/CN=127.0.0.1", "-out", str(d / "broker.csr"))
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509", "-req", "-in", str(d / "broker.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", str(d / "san.ext"), "-out", str(d / "broker.pem"),
    )  # fmt: skip
    return {"ca": d / "ca.pem", "cert": d / "broker.pem", "key": d / "broker.key"}


class Issuer:
    """An OAuth2 issuer on 127.0.0.1: OpenID discovery and the client credentials grant, tokens signed
    with the broker's key, each valid for :data:`LIFETIME` seconds. Bounded: stopped by the fixture."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.grants: list[dict[str, str]] = []
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
                issuer.grants.append(form)
                ok = (
                    form.get("grant_type") == "client_credentials"
                    and form.get("client_id") == CLIENT_ID
                    and form.get("client_secret") == CLIENT_SECRET
                    and form.get("audience") == AUDIENCE
                )
                if not ok:
                    self._json(401, {"error": "invalid_client", "error_description": "bad client credentials"})
                    return
                token = jwt(issuer.key, "admin", LIFETIME)
                self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": LIFETIME})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("secured")
    key = os.urandom(32)
    admin = jwt(key, "admin")
    certs = certificates(work)
    lib, _, _ = build_classpath()
    tls_port = free_port()
    sa = Standalone(
        lib,
        work / "pulsar",
        metadata="rocksdb",
        admin_token=admin,
        config={
            "authenticationEnabled": "true",
            "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
            "tokenSecretKey": "data:;base64," + base64.b64encode(key).decode(),
            "authorizationEnabled": "true",
            "superUserRoles": "admin",
            "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "brokerClientAuthenticationParameters": f"token:{admin}",
            "webServicePortTls": tls_port,
            "tlsCertificateFilePath": certs["cert"],
            "tlsKeyFilePath": certs["key"],
            "tlsTrustCertsFilePath": certs["ca"],
            "transactionCoordinatorEnabled": "false",
        },
    )
    issuer = None
    try:
        sa.start()
        issuer = Issuer(key)
        import pulsar

        client = pulsar.Client(sa.service_url, authentication=pulsar.AuthenticationToken(admin))
        try:
            producer = client.create_producer(TOPIC, batching_enabled=True, batching_max_messages=7)
            for i in range(60):
                producer.send_async(f"order-{i}".encode(), None, partition_key=f"k{i % 5}")
            producer.flush()
            producer.close()
            reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
            truth = []
            while reader.has_message_available():
                m = reader.read_next(timeout_millis=20_000)
                truth.append((m.partition_key(), m.data()))
            reader.close()
        finally:
            client.close()
        # A reader never reads past the last-add-confirmed. Pipelined adds carry an old one; the
        # bookie learns the last from the broker's explicit LAC (every 100 ms here): wait for it.
        store = f"rocksdb:{sa.metadata_dir}"
        deadline = time.monotonic() + 30
        while len(messages(pe.read_topic(TOPIC, metadata_url=store))) < len(truth):
            assert time.monotonic() < deadline, "the bookie's last-add-confirmed never reached the last entry"
            time.sleep(0.2)
        creds = work / "credentials.json"
        creds.write_text(
            json.dumps({"type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
        )
        yield {
            "sa": sa,
            "issuer": issuer,
            "https": f"https://127.0.0.1:{tls_port}",
            "ca": str(certs["ca"]),
            "creds": creds,
            "admin": admin,
            "truth": truth,
            "work": work,
        }
    finally:
        if issuer is not None:
            issuer.stop()
        sa.stop()


def messages(entries: Any) -> list[tuple[str, bytes]]:
    assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    rows = pe.decode(entries.drop_columns(["error"])).to_pylist()
    assert all(r["error"] is None for r in rows)
    return [(r["key"], r["value"]) for r in rows]


def test_oauth2_reads_the_layout_over_https_and_refreshes_its_token(secured: dict[str, Any]) -> None:
    issuer = secured["issuer"]
    auth = OAuth2(issuer.url, secured["creds"], audience=AUDIENCE)
    tls = AdminTls(secured["ca"])
    got = messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=auth, admin_tls=tls))
    assert got == secured["truth"] and len(got) == 60
    assert auth.fetches == 1
    # The token expires; the next read fetches a new one (and the broker accepts it).
    time.sleep(LIFETIME + 0.5)
    got = messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=auth, admin_tls=tls))
    assert got == secured["truth"] and auth.fetches == 2
    assert [g["audience"] for g in issuer.grants[-2:]] == [AUDIENCE, AUDIENCE]
    # A token method and the same https settings, for comparison.
    token = Token(secured["admin"])
    assert messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=token, admin_tls=tls)) == got
    assert secured["admin"] not in repr(token) and CLIENT_SECRET not in repr(auth)


def test_refusals_are_one_line_and_show_no_secret(secured: dict[str, Any], tmp_path: Path) -> None:
    tls = AdminTls(secured["ca"])
    texts = []
    with pytest.raises(PermissionError) as e:  # no credentials at all
        pe.read_topic(TOPIC, admin_url=secured["https"], admin_tls=tls)
    texts.append(str(e.value))
    assert "HTTP 401" in texts[-1]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"client_id": CLIENT_ID, "client_secret": "not-the-s3cret-value"}))
    with pytest.raises(PermissionError) as e:
        pe.read_topic(
            TOPIC,
            admin_url=secured["https"],
            admin_auth=OAuth2(secured["issuer"].url, wrong, audience=AUDIENCE),
            admin_tls=tls,
        )
    texts.append(str(e.value))
    assert "refused the client credentials" in texts[-1]
    with pytest.raises(OSError) as e:  # the system's CAs do not know this broker's certificate
        pe.read_topic(TOPIC, admin_url=secured["https"], admin_token=secured["admin"])
    texts.append(str(e.value))
    assert "CERTIFICATE_VERIFY_FAILED" in texts[-1] or "certificate verify failed" in texts[-1]
    for t in texts:
        assert "\n" not in t
        for secret in (secured["admin"], CLIENT_SECRET, "not-the-s3cret-value"):
            assert secret not in t, t


def test_the_cli_takes_pulsar_auth_plugin_names(secured: dict[str, Any], tmp_path: Path) -> None:
    params = json.dumps(
        {
            "type": "client_credentials",
            "issuerUrl": secured["issuer"].url,
            "privateKey": f"file://{secured['creds']}",
            "audience": AUDIENCE,
        }
    )
    out = tmp_path / "m.parquet"
    run = run_cli(
        "decode",
        TOPIC,
        str(out),
        "--metadata-url",
        secured["https"],
        "--auth-plugin",
        "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
        "--auth-params",
        params,
        "--tls-trust-certs-file",
        secured["ca"],
    )
    import pyarrow.parquet as pq

    table = pq.read_table(out)
    assert [(r["key"], r["value"]) for r in table.to_pylist()] == secured["truth"]
    # A secret on the command line is refused, before any request.
    inline = run_cli(
        "decode",
        TOPIC,
        str(tmp_path / "x.parquet"),
        "--metadata-url",
        secured["https"],
        "--auth-plugin",
        "token",
        "--auth-params",
        f"token:{secured['admin']}",
        ok=False,
    )
    assert "holds a secret on the command line" in inline.stderr
    for text in (run.stdout, run.stderr, inline.stdout, inline.stderr):
        assert secured["admin"] not in text and CLIENT_SECRET not in text
