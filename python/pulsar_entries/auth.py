"""Authentication and TLS for a broker's admin REST API, as Pulsar's clients
configure them (``authPlugin`` / ``authParams``, ``tlsTrustCertsFilePath``, ...).

The admin API is only ever asked for the topic's layout and schema; the entries
never go through the broker. Four methods, by their Pulsar names:

- :class:`Token` (``AuthenticationToken``): ``Authorization: Bearer``;
- :class:`OAuth2` (``AuthenticationOAuth2``, the client credentials flow): a
  token from the issuer's token endpoint, found by OpenID discovery, fetched
  again before it expires;
- :class:`Basic` (``AuthenticationBasic``): ``Authorization: Basic``;
- :class:`TlsAuth` (``AuthenticationTls``): a client certificate.

:class:`AdminTls` holds the https settings (a CA bundle, hostname verification)
and, for :class:`TlsAuth`, the client certificate. :func:`from_pulsar` builds a
method from Pulsar's plugin name and parameter string, so a ``client.conf`` can
be copied as it is.

Secrets come from files or the environment: a token, a password or a client
secret is read when needed and never appears in a ``repr``, an error or a log
line (each method lists its secrets for :func:`pulsar_entries._redact.redact`).
Credentials go only where they belong: the authorization header only to the
admin URL's origin, the client secret only to the issuer's token endpoint, over
https (or http to a loopback address, for tests).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import json
import os
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._redact import MASK, redact

__all__ = [
    "AdminTls",
    "Authentication",
    "Basic",
    "BookieTls",
    "OAuth2",
    "SettingError",
    "TlsAuth",
    "Token",
    "ZooKeeperAccess",
    "admin_settings",
    "bookie_client_options",
    "bookie_settings",
    "from_pulsar",
    "zookeeper_settings",
]

#: The largest answer read from a token or discovery endpoint.
MAX_AUTH_REPLY = 1 << 20


class Authentication:
    """A way to authenticate to the admin REST API (see the subclasses)."""

    #: The client certificate and key files (``TlsAuth`` only).
    cert_file: str | None = None
    key_file: str | None = None
    #: Whether :meth:`invalidate` makes new credentials (a refused request is then tried once more).
    renewable: bool = False

    def authorization(self, deadline: float) -> str | None:
        """The ``Authorization`` header's value for a request due by ``deadline`` (a
        :func:`time.monotonic` value), or None."""
        return None

    def invalidate(self) -> None:
        """The broker refused the last credentials (HTTP 401): fetch new ones next time, if the
        method can."""

    def secrets(self) -> list[str]:
        """The secret texts of this method that are known now, to redact from any text."""
        return []


def _read_secret(path: str | os.PathLike[str], what: str) -> str:
    p = Path(str(path).removeprefix("file://"))
    try:
        return p.read_text().strip()
    except OSError as e:
        raise ValueError(f"{what}: cannot read {str(p)!r}: {e.strerror}") from None


class Token(Authentication):
    """``Authorization: Bearer <token>``: the token itself, or read from ``file`` (a path or
    ``file:///path``, read at each use so that a rotated token is picked up) or the environment
    variable ``env``. Pulsar: ``AuthenticationToken`` with ``token:<jwt>`` or ``file:///path``."""

    def __init__(self, token: str | None = None, *, file: str | os.PathLike[str] | None = None, env: str | None = None):
        given = [n for n, v in (("token", token), ("file", file), ("env", env)) if v is not None]
        if len(given) != 1:
            raise ValueError(f"Token: give one of token, file or env (got {given or 'none'})")
        self._token, self._file, self._env = token, file, env
        if env is not None and not os.environ.get(env):
            raise ValueError(f"Token: the environment variable {env} is not set")

    def _value(self) -> str:
        if self._token is not None:
            return self._token
        if self._file is not None:
            return _read_secret(self._file, "Token file")
        assert self._env is not None
        return os.environ.get(self._env, "")

    def authorization(self, deadline: float) -> str | None:
        return f"Bearer {self._value()}"

    def secrets(self) -> list[str]:
        with contextlib.suppress(ValueError):
            return [self._value()]
        return []

    def __repr__(self) -> str:
        if self._file is not None:
            return f"Token(file={str(self._file)!r})"
        if self._env is not None:
            return f"Token(env={self._env!r})"
        return f"Token({MASK!r})"


class Basic(Authentication):
    """``Authorization: Basic``, the password from ``password_file`` or the environment variable
    ``password_env`` (or given). Pulsar: ``AuthenticationBasic`` (``{"userId": ..., "password": ...}``)."""

    def __init__(
        self,
        user: str,
        *,
        password: str | None = None,
        password_file: str | os.PathLike[str] | None = None,
        password_env: str | None = None,
    ):
        if ":" in user:
            raise ValueError("Basic: the user id may not contain ':'")
        given = [
            n
            for n, v in (("password", password), ("password_file", password_file), ("password_env", password_env))
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(f"Basic: give one of password, password_file or password_env (got {given or 'none'})")
        self.user = user
        self._password, self._file, self._env = password, password_file, password_env

    def _value(self) -> str:
        if self._password is not None:
            return self._password
        if self._file is not None:
            return _read_secret(self._file, "Basic password file")
        return os.environ.get(self._env or "", "")

    def authorization(self, deadline: float) -> str | None:
        raw = f"{self.user}:{self._value()}".encode()
        return "Basic " + base64.b64encode(raw).decode()

    def secrets(self) -> list[str]:
        with contextlib.suppress(ValueError):
            pw = self._value()
            return [pw, base64.b64encode(f"{self.user}:{pw}".encode()).decode()]
        return []

    def __repr__(self) -> str:
        return f"Basic({self.user!r}, password={MASK!r})"


class TlsAuth(Authentication):
    """A client certificate (PEM files) presented on https. Pulsar: ``AuthenticationTls``
    (``tlsCertFile:...,tlsKeyFile:...``)."""

    def __init__(self, cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]):
        for name, f in (("cert_file", cert_file), ("key_file", key_file)):
            if not Path(f).is_file():
                raise ValueError(f"TlsAuth: {name} {str(f)!r} is not a readable file")
        self.cert_file, self.key_file = str(cert_file), str(key_file)

    def __repr__(self) -> str:
        return f"TlsAuth(cert_file={self.cert_file!r}, key_file={self.key_file!r})"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_endpoint(url: str, what: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"OAuth2: the {what} {redact(url)!r} is not an http(s) URL")
    if scheme == "http" and not _loopback(parts.hostname):
        raise ValueError(f"OAuth2: the {what} {redact(url)!r} must be https (http only to a loopback address)")
    return parts


class OAuth2(Authentication):
    """OAuth 2.0 client credentials, as Pulsar's ``AuthenticationOAuth2`` does them:

    - ``issuer_url``: the issuer; its token endpoint comes from OpenID discovery
      (``<issuer>/.well-known/openid-configuration``), unless ``token_endpoint`` is given;
    - ``credentials_file``: Pulsar's key file, JSON with ``client_id`` and ``client_secret``
      (and optionally ``issuer_url``), read when a token is fetched;
    - ``audience``, ``scope``: sent with the request when given.

    A token is fetched at first use and again once 90 % of its lifetime (``expires_in``) has
    passed, or when the broker answers 401. The client secret is sent only to the token
    endpoint, over https (or http to a loopback address). ``tls`` verifies the issuer's
    certificate (default: the system's CAs)."""

    def __init__(
        self,
        issuer_url: str | None = None,
        credentials_file: str | os.PathLike[str] | None = None,
        *,
        audience: str | None = None,
        scope: str | None = None,
        token_endpoint: str | None = None,
        tls: AdminTls | None = None,
    ):
        if credentials_file is None:
            raise ValueError("OAuth2: credentials_file is required (JSON with client_id and client_secret)")
        self.credentials_file = str(credentials_file).removeprefix("file://")
        creds = self._credentials()
        issuer_url = issuer_url or creds.get("issuer_url")
        if not issuer_url and not token_endpoint:
            raise ValueError("OAuth2: give issuer_url (or token_endpoint)")
        if issuer_url:
            _check_endpoint(issuer_url, "issuer URL")
        if token_endpoint:
            _check_endpoint(token_endpoint, "token endpoint")
        self.issuer_url = issuer_url.rstrip("/") if issuer_url else None
        self.audience, self.scope = audience, scope
        self._endpoint = token_endpoint
        self._tls = tls
        self.renewable = True
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0
        #: Tokens fetched so far (tests and progress lines read it).
        self.fetches = 0

    def _credentials(self) -> dict[str, str]:
        text = _read_secret(self.credentials_file, "OAuth2 credentials file")
        try:
            creds = json.loads(text)
        except ValueError:
            raise ValueError(f"OAuth2: the credentials file {self.credentials_file!r} is not JSON") from None
        if not isinstance(creds, dict) or not all(
            isinstance(creds.get(k), str) for k in ("client_id", "client_secret")
        ):
            raise ValueError(
                f"OAuth2: the credentials file {self.credentials_file!r} needs client_id and client_secret (strings)"
            )
        return creds

    def _context(self) -> ssl.SSLContext:
        return (self._tls or AdminTls()).context()

    def _request(self, method: str, url: str, body: bytes | None, deadline: float, secrets: list[str]) -> Any:
        parts = _check_endpoint(url, "token endpoint" if body else "discovery URL")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"OAuth2: no time left to ask {redact(url)}")
        conn: http.client.HTTPConnection
        if parts.scheme.lower() == "https":
            conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=left, context=self._context())
        else:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=left)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            raw = resp.read(MAX_AUTH_REPLY + 1)
        except (OSError, http.client.HTTPException) as e:
            raise OSError(f"OAuth2: {method} {redact(url)} failed: {redact(str(e), *secrets)}") from None
        finally:
            conn.close()
        if len(raw) > MAX_AUTH_REPLY:
            raise OSError(f"OAuth2: the answer of {redact(url)} is above {MAX_AUTH_REPLY:,} bytes")
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = None
        if resp.status != 200:
            why = answer.get("error_description") or answer.get("error") if isinstance(answer, dict) else None
            text = redact(str(why or resp.reason), *secrets)[:200]
            if resp.status in (400, 401, 403):
                raise PermissionError(
                    f"OAuth2: {redact(url)} refused the client credentials: HTTP {resp.status} ({text})"
                )
            raise OSError(f"OAuth2: {method} {redact(url)}: HTTP {resp.status} ({text})")
        if not isinstance(answer, dict):
            raise OSError(f"OAuth2: {redact(url)} did not answer a JSON object")
        return answer

    def _token_endpoint(self, deadline: float) -> str:
        if self._endpoint is None:
            url = f"{self.issuer_url}/.well-known/openid-configuration"
            found = self._request("GET", url, None, deadline, []).get("token_endpoint")
            if not isinstance(found, str):
                raise OSError(f"OAuth2: the discovery document of {redact(url)} has no token_endpoint")
            _check_endpoint(found, "token endpoint")
            self._endpoint = found
        return self._endpoint

    def _fetch(self, deadline: float) -> None:
        creds = self._credentials()
        form = {
            "grant_type": "client_credentials",
            "client_id": creds["client_id"],
            "client_secret": creds["client_secret"],
        }
        if self.audience:
            form["audience"] = self.audience
        if self.scope:
            form["scope"] = self.scope
        secrets = [creds["client_secret"]]
        asked = time.monotonic()
        answer = self._request(
            "POST", self._token_endpoint(deadline), urllib.parse.urlencode(form).encode(), deadline, secrets
        )
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise OSError("OAuth2: the token endpoint's answer has no access_token")
        lifetime = answer.get("expires_in")
        lifetime = float(lifetime) if isinstance(lifetime, (int, float)) and lifetime > 0 else 3600.0
        self._token = token
        self._refresh_at = asked + 0.9 * lifetime
        self.fetches += 1

    def authorization(self, deadline: float) -> str | None:
        with self._lock:
            if self._token is None or time.monotonic() >= self._refresh_at:
                self._fetch(deadline)
            return f"Bearer {self._token}"

    def invalidate(self) -> None:
        with self._lock:
            self._token = None

    def secrets(self) -> list[str]:
        out = [self._token] if self._token else []
        with contextlib.suppress(ValueError):
            out.append(self._credentials()["client_secret"])
        return out

    def __repr__(self) -> str:
        return (
            f"OAuth2(issuer_url={self.issuer_url!r}, credentials_file={self.credentials_file!r}, "
            f"audience={self.audience!r})"
        )


@dataclass(frozen=True)
class AdminTls:
    """https to the admin REST API (Pulsar's names in brackets):

    - ``trust_certs_file`` (``tlsTrustCertsFilePath``): a PEM CA bundle (default: the system's);
    - ``hostname_verification`` (``tlsHostnameVerificationEnable``, default True): the
      certificate must name the host (Python's default; Pulsar's Java client's is false);
    - ``allow_insecure`` (``tlsAllowInsecureConnection``, default False): accept any certificate.

    A :class:`TlsAuth` adds the client certificate."""

    trust_certs_file: str | None = None
    hostname_verification: bool = True
    allow_insecure: bool = False

    def __post_init__(self) -> None:
        if self.trust_certs_file is not None and not Path(self.trust_certs_file).is_file():
            raise ValueError(f"AdminTls: trust_certs_file {self.trust_certs_file!r} is not a readable file")

    def context(self, auth: Authentication | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.trust_certs_file)
        if self.allow_insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif not self.hostname_verification:
            ctx.check_hostname = False
        if auth is not None and auth.cert_file is not None:
            try:
                ctx.load_cert_chain(auth.cert_file, auth.key_file)
            except (OSError, ssl.SSLError) as e:
                raise ValueError(f"TlsAuth: cannot load {auth.cert_file!r} / {auth.key_file!r}: {e}") from None
        return ctx


@dataclass(frozen=True)
class ZooKeeperAccess:
    """TLS and authentication to a ZooKeeper metadata store (Pulsar's ``zookeeper.ssl.*`` client
    settings, and ZooKeeper's ``addauth``), for ``metadata_url="zk:host:2281"``:

    - ``ca_file``: PEM CA bundle the server's certificate is checked against (``zookeeper.ssl.trustStore``);
      giving it, or a client certificate, turns TLS on (the chart's secure client port is 2281);
    - ``cert_file``, ``key_file``: the client certificate and key, PEM (``zookeeper.ssl.keyStore``), for a
      server with ``ssl.clientAuth=need``;
    - ``hostname_verification`` (default False, as ZooKeeper's client): the certificate must name the host;
    - ``digest_user`` with ``digest_password_file`` or ``digest_password_env``: digest authentication
      (``addauth digest user:password``), for nodes whose ACLs need it;
    - ``sasl_user`` with ``sasl_password_file`` or ``sasl_password_env``: SASL DIGEST-MD5 (the server's JAAS
      ``Server`` section); needs the ``pure-sasl`` package.

    Passwords are read from their file or variable when the store opens, never shown."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    hostname_verification: bool = False
    digest_user: str | None = None
    digest_password_file: str | None = None
    digest_password_env: str | None = None
    sasl_user: str | None = None
    sasl_password_file: str | None = None
    sasl_password_env: str | None = None

    def __post_init__(self) -> None:
        for name in ("ca_file", "cert_file", "key_file"):
            f = getattr(self, name)
            if f is not None and not Path(f).is_file():
                raise ValueError(f"ZooKeeperAccess: {name} {f!r} is not a readable file")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("ZooKeeperAccess: give cert_file and key_file together")
        for kind in ("digest", "sasl"):
            user = getattr(self, f"{kind}_user")
            given = [n for n in ("password_file", "password_env") if getattr(self, f"{kind}_{n}") is not None]
            if user is not None and len(given) != 1:
                raise ValueError(
                    f"ZooKeeperAccess: {kind}_user needs one of {kind}_password_file or {kind}_password_env"
                )
            if user is None and given:
                raise ValueError(f"ZooKeeperAccess: {kind}_{given[0]} needs {kind}_user")
            if user is not None and ":" in user:
                raise ValueError(f"ZooKeeperAccess: {kind}_user may not contain ':'")

    @property
    def tls(self) -> bool:
        return self.ca_file is not None or self.cert_file is not None

    def _password(self, kind: str) -> str:
        f, env = getattr(self, f"{kind}_password_file"), getattr(self, f"{kind}_password_env")
        if f is not None:
            return _read_secret(f, f"ZooKeeper {kind} password file")
        value = os.environ.get(env or "")
        if not value:
            raise ValueError(f"ZooKeeper {kind} password: the environment variable {env} is not set")
        return value

    def secrets(self) -> list[str]:
        out = []
        for kind in ("digest", "sasl"):
            if getattr(self, f"{kind}_user") is not None:
                with contextlib.suppress(ValueError):
                    out.append(self._password(kind))
        return out

    def kazoo_args(self) -> dict[str, Any]:
        """``KazooClient`` keyword arguments for these settings."""
        args: dict[str, Any] = {}
        if self.tls:
            args.update(
                use_ssl=True,
                ca=self.ca_file,
                certfile=self.cert_file,
                keyfile=self.key_file,
                verify_certs=self.ca_file is not None,
                check_hostname=self.hostname_verification,
            )
        if self.digest_user is not None:
            args["auth_data"] = [("digest", f"{self.digest_user}:{self._password('digest')}")]
        if self.sasl_user is not None:
            import importlib.util

            if importlib.util.find_spec("puresasl") is None:
                raise ValueError("ZooKeeper SASL needs the pure-sasl package: pip install pure-sasl")
            args["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.sasl_user,
                "password": self._password("sasl"),
            }
        return args

    def __repr__(self) -> str:
        shown = [f"{f}={getattr(self, f)!r}" for f in ("ca_file", "cert_file", "key_file", "digest_user", "sasl_user")]
        return f"ZooKeeperAccess({', '.join(s for s in shown if not s.endswith('=None'))})"


@dataclass(frozen=True)
class BookieTls:
    """TLS to the bookies, as a Pulsar broker's BookKeeper client is configured (Pulsar's names in
    brackets). Every connection asks for TLS as BookKeeper's client does (a ``START_TLS`` request,
    then a TLS 1.2 or 1.3 handshake on the same socket):

    - ``trust_certs_file`` (``bookkeeperTLSTrustCertsFilePath``): the PEM CA bundle the bookies'
      certificates are checked against;
    - ``certificate_file``, ``key_file`` (``bookkeeperTLSCertificateFilePath``,
      ``bookkeeperTLSKeyFilePath``): a PEM client certificate and its unencrypted key (PKCS#8, PKCS#1
      or SEC1), for bookies with ``tlsClientAuthentication=true`` or that authorize by the
      certificate's role (``BookieAuthZFactory``);
    - ``hostname_verification`` (default False, as BookKeeper's ``tlsHostnameVerificationEnabled``):
      the certificate must also name the bookie's host (bookies register by address).

    The files are read when a reader is built; a key file is never shown."""

    trust_certs_file: str
    certificate_file: str | None = None
    key_file: str | None = None
    hostname_verification: bool = False

    def __post_init__(self) -> None:
        for name in ("trust_certs_file", "certificate_file", "key_file"):
            f = getattr(self, name)
            if f is not None and not Path(f).is_file():
                raise ValueError(f"BookieTls: {name} {f!r} is not a readable file")
        if (self.certificate_file is None) != (self.key_file is None):
            raise ValueError("BookieTls: give certificate_file and key_file together")


class SettingError(ValueError):
    """A setting that cannot be used. ``setting`` says which one, in this module's words (``trust_certs_file``,
    ``plugin``, ``zookeeper``, ``bookie_tls``), so that the CLI and the Spark source can each name their own
    option; the message never holds a secret."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


def admin_settings(
    plugin: str | None, params: str = "", *, trust_certs_file: str | None = None, hostname_verification: bool = True
) -> dict[str, Any]:
    """``admin_auth`` / ``admin_tls`` from Pulsar's client settings (``authPlugin``, ``authParams``,
    ``tlsTrustCertsFilePath``, ``tlsHostnameVerificationEnable``); empty when none is given."""
    out: dict[str, Any] = {}
    tls = None
    if trust_certs_file is not None or not hostname_verification:
        try:
            tls = AdminTls(trust_certs_file, hostname_verification=hostname_verification)
        except ValueError as e:
            raise SettingError("trust_certs_file", str(e)) from None
        out["admin_tls"] = tls
    if plugin is not None:
        try:
            out["admin_auth"] = from_pulsar(plugin, params, tls=tls)
        except ValueError as e:
            raise SettingError("plugin", str(e)) from None
    return out


def zookeeper_settings(
    *,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    digest_user: str | None = None,
    sasl_user: str | None = None,
    password_file: str | None = None,
    password_env: str | None = None,
) -> ZooKeeperAccess | None:
    """A :class:`ZooKeeperAccess` from flat settings, one password source serving digest or SASL, whichever
    user is given; ``None`` when nothing is given."""
    if not any((ca_file, cert_file, key_file, digest_user, sasl_user)):
        if password_file or password_env:
            raise SettingError("zookeeper", "a ZooKeeper password needs a digest or SASL user")
        return None
    try:
        return ZooKeeperAccess(
            ca_file=ca_file,
            cert_file=cert_file,
            key_file=key_file,
            digest_user=digest_user,
            digest_password_file=password_file if digest_user else None,
            digest_password_env=password_env if digest_user else None,
            sasl_user=sasl_user,
            sasl_password_file=password_file if sasl_user else None,
            sasl_password_env=password_env if sasl_user else None,
        )
    except ValueError as e:
        raise SettingError("zookeeper", str(e)) from None


def bookie_settings(
    trust_certs_file: str | None,
    certificate_file: str | None = None,
    key_file: str | None = None,
    *,
    hostname_verification: bool = False,
    timeout: float = 30.0,
) -> BookieTls | None:
    """A :class:`BookieTls` from flat settings, its files read now (a bad one is one error before any read);
    ``None`` when nothing is given."""
    if trust_certs_file is None:
        if certificate_file or key_file or hostname_verification:
            raise SettingError("trust_certs_file", "TLS to the bookies needs the CA bundle (the trust certs file)")
        return None
    try:
        tls = BookieTls(trust_certs_file, certificate_file, key_file, hostname_verification=hostname_verification)
        bookie_client_options(timeout, tls)
    except ValueError as e:  # an OptionsError is one
        raise SettingError("bookie_tls", str(e)) from None
    return tls


def bookie_client_options(timeout: float, tls: BookieTls | None = None) -> Any:
    """The bookie client's options: ``timeout`` seconds per request, and ``tls``."""
    from . import _native

    timeout_ms = max(1, int(timeout * 1000))
    if tls is None:
        return _native.BookieClientOptions(timeout_ms=timeout_ms)
    return _native.BookieClientOptions(
        timeout_ms=timeout_ms,
        tls_trust_certs_file=tls.trust_certs_file,
        tls_certificate_file=tls.certificate_file,
        tls_key_file=tls.key_file,
        tls_hostname_verification=tls.hostname_verification,
    )


_PLUGINS = {
    "token": "token",
    "org.apache.pulsar.client.impl.auth.AuthenticationToken": "token",
    "oauth2": "oauth2",
    "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2": "oauth2",
    "basic": "basic",
    "org.apache.pulsar.client.impl.auth.AuthenticationBasic": "basic",
    "tls": "tls",
    "org.apache.pulsar.client.impl.auth.AuthenticationTls": "tls",
}


def _params(text: str) -> dict[str, str]:
    """Pulsar's auth parameter string: JSON, or ``key:value,key:value``."""
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            raise ValueError("auth params: not valid JSON") from None
        if not isinstance(value, dict):
            raise ValueError("auth params: expected a JSON object")
        return {str(k): str(v) for k, v in value.items()}
    out = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"auth params: {key[:40]!r}... is not key:value")
        out[key.strip()] = value.strip()
    return out


def has_inline_secret(params: str) -> bool:
    """Whether Pulsar auth parameters hold a secret itself (a token, a password, a client secret)
    rather than a file or an environment variable that does."""
    text = params.strip()
    return text.startswith("token:") or any(k in text for k in ('"password"', "password:", "client_secret"))


def from_pulsar(plugin: str, params: str = "", *, tls: AdminTls | None = None) -> Authentication:
    """A method from Pulsar's ``authPlugin`` and ``authParams`` (class name or short name):

    - ``token``: ``token:<jwt>``, ``file:///path`` or ``env:VAR``;
    - ``oauth2``: ``{"type": "client_credentials", "issuerUrl": ..., "privateKey": "file:///creds.json",
      "audience": ..., "scope": ...}``;
    - ``basic``: ``{"userId": ..., "password": ...}``, or ``passwordFile`` / ``passwordEnv``;
    - ``tls``: ``tlsCertFile:/path,tlsKeyFile:/path``.

    An error never shows the parameters' values."""
    kind = _PLUGINS.get(plugin.strip())
    if kind is None:
        raise ValueError(
            f"auth plugin {plugin!r}: expected one of {sorted(set(_PLUGINS.values()))} or Pulsar's class names"
        )
    if kind == "token":
        text = params.strip()
        if text.startswith("token:"):
            return Token(text[len("token:") :])
        if text.startswith("file:"):
            return Token(file=text)
        if text.startswith("env:"):
            return Token(env=text[len("env:") :])
        raise ValueError("auth params for token: expected token:<jwt>, file:///path or env:VAR")
    p = _params(params)
    if kind == "oauth2":
        if p.get("type", "client_credentials") != "client_credentials":
            raise ValueError(f"auth params for oauth2: type {p['type']!r} is not supported (client_credentials)")
        return OAuth2(
            p.get("issuerUrl"),
            p.get("privateKey"),
            audience=p.get("audience"),
            scope=p.get("scope"),
            tls=tls,
        )
    if kind == "basic":
        if "userId" not in p:
            raise ValueError("auth params for basic: userId is required")
        return Basic(
            p["userId"],
            password=p.get("password"),
            password_file=p.get("passwordFile"),
            password_env=p.get("passwordEnv"),
        )
    if "tlsCertFile" not in p or "tlsKeyFile" not in p:
        raise ValueError("auth params for tls: tlsCertFile and tlsKeyFile are required")
    return TlsAuth(p["tlsCertFile"], p["tlsKeyFile"])
