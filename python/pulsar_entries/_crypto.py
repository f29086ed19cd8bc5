"""The consumer's private keys for end-to-end encrypted messages, as Pulsar's
``CryptoKeyReader`` gives them, in the forms the API takes."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Union

from . import _native

#: A private key: PEM bytes, PEM text, or the path of a PEM file.
KeySource = Union[bytes, str, "os.PathLike[str]"]

#: ``crypto_keys``: a :class:`CryptoKeys`, or a mapping from key name (``"*"``: any name) to a key.
CryptoKeysLike = Union[_native.CryptoKeys, Mapping[str, KeySource]]


def _pem(name: str, source: KeySource) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, str) and source.lstrip().startswith("-----BEGIN"):
        return source.encode()
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            return path.read_bytes()
        except OSError as e:
            # The path is not a secret; the file's contents never appear.
            raise _native.OptionsError(f"crypto key {name!r}: cannot read {str(path)!r}: {e.strerror}") from None
    raise TypeError(f"crypto key {name!r}: expected PEM bytes, PEM text or a path, not {type(source).__name__}")


def crypto_keys(keys: CryptoKeysLike | None) -> _native.CryptoKeys | None:
    """``keys`` as the native :class:`CryptoKeys` (``None``: none; encrypted messages stay encrypted)."""
    if keys is None or isinstance(keys, _native.CryptoKeys):
        return keys
    if not isinstance(keys, Mapping):
        raise TypeError(f"crypto_keys: expected a mapping of key name to PEM key or path, not {type(keys).__name__}")
    return _native.CryptoKeys({str(name): _pem(str(name), source) for name, source in keys.items()})


def parse_key_files(text: str) -> dict[str, str]:
    """``name=path,name=path`` (a Spark or CLI option) as a mapping; a bare ``path`` is every name's key."""
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, path = item.partition("=")
        name, path = (name.strip(), path.strip()) if sep else ("*", name.strip())
        if not name or not path:
            raise ValueError(f"crypto keys: {item!r} is not name=path")
        if name in out:
            raise ValueError(f"crypto keys: key {name!r} is given twice")
        out[name] = path
    return out


@functools.lru_cache(maxsize=8)
def load_key_files(files: tuple[tuple[str, str], ...]) -> _native.CryptoKeys | None:
    """The keys of ``(name, path)`` pairs, read once per process (a Spark executor reads its key
    files at its first task); ``()``: none."""
    return crypto_keys(dict(files)) if files else None
