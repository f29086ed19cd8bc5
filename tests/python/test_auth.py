"""``pulsar_entries.auth``: Pulsar's authentication methods for the admin REST API, built from Pulsar's plugin
names and parameters, and how the admin client uses them (only to the admin URL's origin, a renewable
token fetched anew once after a 401, no secret in any text). The real broker: test_secured_admin_real."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pulsar_entries import _cluster
from pulsar_entries.auth import AdminTls, Basic, OAuth2, TlsAuth, Token, from_pulsar, has_inline_secret

from support.admin_server import FakeAdmin, Reply
from support.oauth2_issuer import Issuer as OAuth2Issuer


def token_issuer(lifetime: int = 3600) -> OAuth2Issuer:
    """A client-credentials issuer on 127.0.0.1 whose tokens are ``t1``, ``t2``, ..."""

    def grant(form: dict[str, str], n: int) -> tuple[int, dict[str, Any]]:
        if form.get("client_secret") != "sekret-123":
            return 401, {"error": "invalid_client", "error_description": "wrong secret sekret-123?"}
        return 200, {"access_token": f"t{n}", "expires_in": lifetime}

    return OAuth2Issuer(grant)


def soon() -> float:
    return time.monotonic() + 30


@pytest.fixture
def issuer() -> Iterator[OAuth2Issuer]:
    i = token_issuer()
    try:
        yield i
    finally:
        i.close()


@pytest.fixture
def creds(tmp_path: Path) -> Path:
    path = tmp_path / "creds.json"
    path.write_text(json.dumps({"client_id": "me", "client_secret": "sekret-123"}))
    return path


def test_pulsar_plugin_names_and_params(tmp_path: Path, creds: Path) -> None:
    tok = tmp_path / "token"
    tok.write_text("file-token\n")
    assert isinstance(from_pulsar("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc"), Token)
    assert from_pulsar("token", f"file://{tok}").authorization(soon()) == "Bearer file-token"
    basic = from_pulsar("basic", json.dumps({"userId": "u", "password": "p"}))
    assert isinstance(basic, Basic) and basic.authorization(soon()) == "Basic " + base64.b64encode(b"u:p").decode()
    oauth = from_pulsar(
        "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
        json.dumps({"type": "client_credentials", "issuerUrl": "https://idp.example", "privateKey": f"file://{creds}"}),
    )
    assert isinstance(oauth, OAuth2) and oauth.issuer_url == "https://idp.example"
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    assert isinstance(from_pulsar("tls", f"tlsCertFile:{cert},tlsKeyFile:{cert}"), TlsAuth)
    for plugin, params, text in (
        ("kerberos", "", "expected one of"),
        ("token", "abc", "expected token:"),
        ("basic", json.dumps({"password": "hunter2"}), "userId is required"),
        ("oauth2", json.dumps({"type": "jwt_bearer", "privateKey": f"file://{creds}"}), "not supported"),
        ("oauth2", json.dumps({"issuerUrl": "http://idp.example", "privateKey": f"file://{creds}"}), "must be https"),
        ("basic", "{not json", "not valid JSON"),
    ):
        with pytest.raises(ValueError, match=text) as e:
            from_pulsar(plugin, params)
        assert "hunter2" not in str(e.value)
    assert has_inline_secret("token:abc") and has_inline_secret('{"userId": "u", "password": "p"}')
    assert not has_inline_secret(f"file://{tok}") and not has_inline_secret('{"privateKey": "file:///c.json"}')
    assert "abc" not in repr(Token("abc")) and "hunter2" not in repr(Basic("u", password="hunter2"))


def test_oauth2_discovers_fetches_and_refreshes(issuer: OAuth2Issuer, creds: Path) -> None:
    auth = OAuth2(issuer.url, creds, audience="aud", scope="s1")
    assert auth.authorization(soon()) == "Bearer t1"
    assert auth.authorization(soon()) == "Bearer t1"  # cached while valid
    assert issuer.forms == [
        {
            "grant_type": "client_credentials",
            "client_id": "me",
            "client_secret": "sekret-123",
            "audience": "aud",
            "scope": "s1",
        }
    ]
    auth.invalidate()
    assert auth.authorization(soon()) == "Bearer t2" and auth.fetches == 2
    short = token_issuer(lifetime=1)
    try:
        a = OAuth2(short.url, creds)
        assert a.authorization(soon()) == "Bearer t1"
        time.sleep(1.0)  # 90 % of the lifetime has passed
        assert a.authorization(soon()) == "Bearer t2"
    finally:
        short.close()
    bad = creds.parent / "bad.json"
    bad.write_text(json.dumps({"client_id": "me", "client_secret": "wrong-one"}))
    with pytest.raises(PermissionError, match="refused the client credentials") as e:
        OAuth2(issuer.url, bad).authorization(soon())
    assert "wrong-one" not in str(e.value)
    with pytest.raises(ValueError, match="needs client_id and client_secret"):
        (creds.parent / "empty.json").write_text("{}")
        OAuth2(issuer.url, creds.parent / "empty.json")


def test_admin_rest_sends_credentials_to_its_origin_and_renews_once(issuer: OAuth2Issuer, creds: Path) -> None:
    with FakeAdmin({"/ok": {"a": 1}}) as fake:
        auth = OAuth2(issuer.url, creds)
        admin = _cluster.AdminRest(fake.url, auth=auth, timeout=5)
        assert admin.get("/ok") == {"a": 1}
        assert fake.requests[-1][1]["Authorization"] == "Bearer t1"
        # A 401 (a revoked token): a new token, one more try, then the answer's error.
        fake.routes["/revoked"] = Reply(401, b'{"reason": "token revoked"}')
        with pytest.raises(PermissionError, match="refused the credentials") as e:
            admin.get("/revoked")
        assert [h["Authorization"] for p, h in fake.requests if p == "/revoked"] == ["Bearer t1", "Bearer t2"]
        assert "sekret-123" not in repr(admin) and "sekret-123" not in str(e.value)
        # A static token is not renewable: one try.
        static = _cluster.AdminRest(fake.url, auth=Token("s3cr3t"), timeout=5)
        with pytest.raises(PermissionError) as e:
            static.get("/revoked")
        assert "s3cr3t" not in str(e.value) and "s3cr3t" not in repr(static)
        assert [h["Authorization"] for p, h in fake.requests if p == "/revoked"][-1] == "Bearer s3cr3t"
        assert len([p for p, _ in fake.requests if p == "/revoked"]) == 3
    with pytest.raises(ValueError, match="not both"):
        _cluster.AdminRest("http://127.0.0.1:1", token="a", auth=Token("b"))
    with pytest.raises(ValueError, match="not a readable file"):
        AdminTls("/no/such/ca.pem")
