"""How to install an extra, in the words that fit how this package was installed: from an
index or a wheel (``pip install 'pulsar-entries[cluster]'``) or from a source checkout
(``pip install '/path/to/checkout[cluster]'``, ``-e`` when it was installed editable)."""

from __future__ import annotations

from typing import Any


def distribution(name: str) -> Any:
    """The installed distribution (``importlib.metadata`` is imported only when a hint is needed:
    it would add about 1 MiB to every process that imports the package)."""
    from importlib.metadata import distribution as find

    return find(name)


def install_hint(extra: str) -> str:
    """``pip install ...`` for ``extra`` (PEP 610's ``direct_url.json`` tells a source checkout)."""
    import json
    from importlib.metadata import PackageNotFoundError
    from urllib.parse import unquote, urlparse

    try:
        raw = distribution("pulsar-entries").read_text("direct_url.json")
    except PackageNotFoundError:
        raw = None
    try:
        info = json.loads(raw) if raw else {}
    except ValueError:
        info = {}
    url = info.get("url") if isinstance(info, dict) else None
    dir_info = info.get("dir_info") if isinstance(info, dict) else None
    if isinstance(url, str) and url.startswith("file://") and isinstance(dir_info, dict):
        path = unquote(urlparse(url).path)
        editable = "-e " if dir_info.get("editable") else ""
        return f"pip install {editable}'{path}[{extra}]'"
    return f"pip install 'pulsar-entries[{extra}]'"
