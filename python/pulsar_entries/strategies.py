"""Topic compaction strategies (PIP-215) and the value formats they read.

A strategy is any object with ``should_keep_left(prev, cur) -> bool``: true
keeps ``prev`` and ignores ``cur``. ``None`` is a tombstone (an empty
payload), and the strategy is consulted for tombstones too, so it can refuse
a deletion. Optionally:

- ``value_format``: how payloads are decoded before the strategy sees them:
  ``"bytes"`` (the default), ``"utf-8"``, ``"json"``, a callable
  ``decode(bytes) -> value``, or a :class:`ValueFormat` with an encoder too;
- ``is_merge_enabled() -> bool`` and ``merge(prev, cur) -> value``: when
  merging is enabled and ``cur`` is accepted over a ``prev``, the kept value is
  ``merge(prev, cur)``, written as a new message at the position of the latest
  contributing message (an extension described by PIP-215's proposal; Pulsar's
  code has no merge hook). Merged values are encoded back with the format's
  encoder;
- ``handle_skipped_message(key, cur)``: called by :class:`~pulsar_entries.TableView`
  for rejected updates.

The built-ins run natively: :class:`LatestWins`, :class:`FirstWins` and
:class:`VersionedState`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

from . import _native


@dataclass(frozen=True)
class ValueFormat:
    """Decoder and encoder of message values."""

    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]
    name: str = "custom"


def _bytes_only(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(
        f"a merged value must be bytes with this value format, not {type(value).__name__}; "
        "give the strategy a ValueFormat(decode, encode)"
    )


BYTES = ValueFormat(bytes, _bytes_only, "bytes")
UTF8 = ValueFormat(lambda b: bytes(b).decode("utf-8"), lambda s: str(s).encode("utf-8"), "utf-8")
JSON = ValueFormat(
    json.loads, lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), "json"
)

FormatSpec = Union[str, ValueFormat, Callable[[bytes], Any], None]


def value_format(spec: FormatSpec) -> ValueFormat:
    """Resolves a format name, a decoder callable or a :class:`ValueFormat`."""
    if spec is None:
        return BYTES
    if isinstance(spec, ValueFormat):
        return spec
    if isinstance(spec, str):
        named = {"bytes": BYTES, "utf-8": UTF8, "utf8": UTF8, "json": JSON}
        try:
            return named[spec.lower()]
        except KeyError:
            raise ValueError(f"unknown value format {spec!r}; expected bytes, utf-8, json or a callable") from None
    if callable(spec):
        return ValueFormat(spec, _bytes_only, getattr(spec, "__name__", "callable"))
    raise TypeError(f"value_format must be a name, a callable or a ValueFormat, not {type(spec).__name__}")


@runtime_checkable
class CompactionStrategy(Protocol):
    """What a compaction strategy provides (the other hooks are optional)."""

    def should_keep_left(self, prev: Any | None, cur: Any | None) -> bool: ...


class _Builtin:
    """A strategy implemented in Rust; ``should_keep_left`` takes raw or decoded values."""

    value_format: FormatSpec = "bytes"
    _native: Any
    _spec: tuple[Any, ...]

    def _build(self, *spec: Any) -> None:
        self._spec = spec
        self._native = _native.NativeStrategy(*spec)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled without the native strategy, which is rebuilt from its
        # arguments where it is unpickled (Spark ships strategies to executors).
        return {k: v for k, v in self.__dict__.items() if k != "_native"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._native = _native.NativeStrategy(*self._spec)

    def should_keep_left(self, prev: Any | None, cur: Any | None) -> bool:
        fmt = value_format(self.value_format)
        raw = lambda v: None if v is None else (bytes(v) if isinstance(v, (bytes, bytearray)) else fmt.encode(v))  # noqa: E731
        return bool(self._native.should_keep_left(raw(prev), raw(cur)))

    def is_merge_enabled(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LatestWins(_Builtin):
    """The last value wins, as plain compaction does (through the strategic compactor)."""

    def __init__(self) -> None:
        self._build("latest_wins")


class FirstWins(_Builtin):
    """The first value of a key wins; later values are ignored until a tombstone deletes it."""

    def __init__(self) -> None:
        self._build("first_wins")


class VersionedState(_Builtin):
    """Keeps only valid, newer state transitions, like Pulsar's service-unit state strategy.

    Values are JSON objects ``{"state": str, "version": int, "force": bool?}``.
    A tombstone is always accepted; an unreadable value is rejected; a version
    not above the previous one is rejected (gaps are accepted unless
    ``allow_version_gaps=False``: compaction may have removed intermediate
    versions); with no previous value the version must equal ``first_version``
    when given; ``force`` accepts; otherwise the move from the previous state
    (``initial_state`` when there is none) must be listed in ``transitions``.
    The default transitions are Pulsar's service-unit states over a system topic.
    """

    value_format: FormatSpec = "json"

    def __init__(
        self,
        transitions: Mapping[str, Collection[str]] | None = None,
        *,
        initial_state: str = "Init",
        allow_version_gaps: bool = True,
        first_version: int | None = None,
    ) -> None:
        table = None if transitions is None else {k: list(v) for k, v in transitions.items()}
        self._build("versioned_state", table, initial_state, allow_version_gaps, first_version)


class _Adapter:
    """Bridges a Python strategy to the native compactor: raw bytes in and out."""

    def __init__(self, strategy: Any) -> None:
        if not callable(getattr(strategy, "should_keep_left", None)):
            raise TypeError(
                f"{type(strategy).__name__} is not a compaction strategy: it has no should_keep_left(prev, cur)"
            )
        self.strategy = strategy
        self.format = value_format(getattr(strategy, "value_format", None))
        enabled = getattr(strategy, "is_merge_enabled", None)
        self.merge_enabled = bool(enabled()) if callable(enabled) else False
        if self.merge_enabled and not callable(getattr(strategy, "merge", None)):
            raise TypeError(f"{type(strategy).__name__}.is_merge_enabled() is true but it has no merge(prev, cur)")

    def decode(self, raw: bytes | None) -> Any:
        if raw is None:
            return None
        try:
            return self.format.decode(raw)
        except Exception as e:
            raise ValueError(f"a value could not be decoded as {self.format.name}: {e}") from e

    def keep_left_raw(self, prev: bytes | None, cur: bytes | None) -> bool:
        return bool(self.strategy.should_keep_left(self.decode(prev), self.decode(cur)))

    def merge_raw(self, prev: bytes, cur: bytes) -> bytes:
        merged = self.strategy.merge(self.decode(prev), self.decode(cur))
        if merged is None:
            raise ValueError(f"{type(self.strategy).__name__}.merge() returned None; return the merged value")
        return self.format.encode(merged)


def native_strategy(strategy: Any) -> Any:
    """What the native compactor takes for ``strategy``: ``None``, a native built-in or an adapter."""
    if strategy is None:
        return None
    if isinstance(strategy, _Builtin):
        return strategy._native
    return _Adapter(strategy)


__all__ = [
    "BYTES",
    "JSON",
    "UTF8",
    "CompactionStrategy",
    "FirstWins",
    "LatestWins",
    "ValueFormat",
    "VersionedState",
    "value_format",
]
