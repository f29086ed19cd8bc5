"""Secrets out of text: what every error, ``repr`` and log line goes through
before it can show a URI, a URL or a token.

- A URI's user information (``s3://KEY:SECRET@bucket``, ``http://user:pass@host``)
  becomes ``***@``.
- Query parameters whose name looks secret (``secret_key=``, ``access_key=``,
  ``token=``, ``password=``, ``sig=``, ``X-Amz-Signature=``, ...) keep their
  name and lose their value: ``secret_key=***``.
- ``Bearer <token>`` becomes ``Bearer ***``.
- Any value passed to :func:`redact` as a known secret is replaced wherever it
  appears.

Each rule works anywhere inside a longer message, so a whole error text can be
passed. Over-redacting is preferred to leaking: a path with an ``@`` in it may
lose its part before the ``@``.
"""

from __future__ import annotations

import re
from typing import Any

#: What replaces a secret.
MASK = "***"

#: ``scheme://userinfo@``: everything between ``//`` and the last ``@`` before a
#: space, a quote or an angle bracket (a password may hold ``/`` or ``:``).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s'\"<>@]*(?:@[^\s'\"<>@]*)*@")

#: Query parameter names that carry a secret (case-insensitive, as a part of the name).
_SECRET_NAMES = (
    "secret",
    "password",
    "passwd",
    "pwd",
    "token",
    "access_key",
    "accesskey",
    "access-key",
    "apikey",
    "api_key",
    "api-key",
    "sig",
    "signature",
    "credential",
    "auth",
    "session",
    "private_key",
    "key_id",
)
_QUERY = re.compile(
    r"(?P<name>[?&;][\w.\-]*?(?:" + "|".join(re.escape(n) for n in _SECRET_NAMES) + r")[\w.\-]*=)[^&;#\s'\"<>]*",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<name>\bBearer\s+)[^\s'\"<>,;]+", re.IGNORECASE)


def redact_uri(text: str) -> str:
    """``text`` with every URI's user information and every secret-looking
    query parameter's value replaced by ``***``, and ``Bearer`` tokens too."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    text = _QUERY.sub(lambda m: m.group("name") + MASK, text)
    return _BEARER.sub(lambda m: m.group("name") + MASK, text)


def redact(text: str, *secrets: str | bytes | None) -> str:
    """:func:`redact_uri`, and each of ``secrets`` (a token, a password; empty ones
    and ``None`` are skipped) replaced wherever it appears in ``text``."""
    for secret in secrets:
        if isinstance(secret, bytes):
            secret = secret.decode("utf-8", "replace")
        if secret:
            text = text.replace(secret, MASK)
    return redact_uri(text)


def filesystem_from_uri(uri: str, what: str | None = None) -> Any:
    """``pyarrow.fs.FileSystem.from_uri(uri)``, whose errors can echo the URI whole (credentials
    included): a failure is raised again as a ValueError (or OSError) with the URI and pyarrow's
    message redacted, prefixed with ``what`` (an option's name) when given."""
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError, TypeError) as e:
        shown = redact_uri(str(uri))
        head = f"{what} {shown!r}" if what else shown
        kind = OSError if isinstance(e, OSError) else ValueError
        raise kind(f"{head}: {redact_uri(str(e))}") from None
