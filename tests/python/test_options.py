"""The options classes: built by keyword, checked by the core when built (an OptionsError with the core's
message), compared and pickled by their fields; the public functions show their keywords."""

from __future__ import annotations

import inspect
import pickle
import re

import pytest

import pulsar_entries as pe
import pulsar_entries.chunks as chunks
from pulsar_entries import _native

CASES = [
    (_native.DecodeOptions, {"max_output_bytes": 0}, "max_output_bytes must be at least 1 (None means no budget)"),
    (
        _native.DecodeOptions,
        {"max_uncompressed_size": 1 << 31},
        "max_uncompressed_size 2147483648 exceeds the supported maximum",
    ),
    (
        _native.DecodeOptions,
        {"max_uncompressed_size": -1},
        "argument 'max_uncompressed_size' must be a non-negative int, not -1",
    ),
    (_native.DecodeOptions, {"utf8_errors": "ignore"}, 'unknown utf8_errors "ignore"; expected "replace" or "error"'),
    (_native.ReassemblyOptions, {"max_pending": 0}, "max_pending must be at least 1 (None means unlimited)"),
    (_native.ReassemblyOptions, {"max_pending": -3}, "argument 'max_pending' must be a non-negative int, not -3"),
    (_native.ReassemblyOptions, {"expire_after_ms": -1}, "expire_after_ms must not be negative (None means never)"),
    (
        _native.ReassemblyOptions,
        {"max_message_size": 1 << 31},
        "max_message_size 2147483648 exceeds the supported maximum",
    ),
    (
        _native.CompactionOptions,
        {"order": "newest"},
        'unknown compaction order "newest"; expected "publish" or "event_time"',
    ),
    (_native.CompactionOptions, {"max_uncompressed_size": 1 << 31}, "max_uncompressed_size 2147483648 exceeds"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), CASES)
def test_building_is_the_check(cls: type, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(pe.OptionsError, match="^invalid option: " + re.escape(message)):
        cls(**kwargs)


@pytest.mark.parametrize(
    "options",
    [
        _native.DecodeOptions(),
        _native.DecodeOptions(verify_checksum=False, keep_markers=True, utf8_errors="error", max_output_bytes=10),
        _native.ReassemblyOptions(),
        _native.ReassemblyOptions(max_pending=None, expire_after_ms=None, max_message_size=1024),
        _native.CompactionOptions(),
        _native.CompactionOptions(order="event_time", retain_null_key=True, verify_checksum=False),
    ],
)
def test_options_pickle_compare_and_repr(options: object) -> None:
    again = pickle.loads(pickle.dumps(options))
    assert again == options and type(again) is type(options)
    assert repr(again) == repr(options)
    assert repr(options).startswith(type(options).__name__ + "(")


def test_none_means_the_core_default_except_where_none_is_a_value() -> None:
    d = _native.DecodeOptions(verify_checksum=None, max_uncompressed_size=None)
    assert d == _native.DecodeOptions() and d.verify_checksum is True
    assert d.max_uncompressed_size == pe.DEFAULT_MAX_UNCOMPRESSED_SIZE and d.max_output_bytes is None
    r = _native.ReassemblyOptions()
    assert (r.max_pending, r.expire_after_ms) == (100, 60_000)
    unlimited = _native.ReassemblyOptions(max_pending=None, expire_after_ms=None)
    assert (unlimited.max_pending, unlimited.expire_after_ms) == (None, None) and unlimited != r
    assert _native.CompactionOptions(order="event-time").order == "event_time"
    assert _native.DecodeOptions(keep_markers=True) != _native.DecodeOptions()


def test_options_are_keyword_only_and_typed() -> None:
    with pytest.raises(TypeError):
        _native.DecodeOptions(True)  # type: ignore[misc]
    with pytest.raises(TypeError):
        _native.ReassemblyOptions(max_pendin=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _native.CompactionOptions(retain_null_key="yes")  # type: ignore[arg-type]


def test_public_signatures_show_their_keywords() -> None:
    decode = inspect.signature(pe.decode).parameters
    for name in ("processors", "verify_checksum", "keep_markers", "max_uncompressed_size", "utf8_errors"):
        assert decode[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert list(inspect.signature(_native.decode).parameters) == [
        "entries",
        "processors",
        "options",
        "columns",
        "crypto_keys",
    ]
    reassemble = inspect.signature(chunks.reassemble_chunks).parameters
    assert reassemble["max_pending"].default == 100 and reassemble["expire_after_ms"].default == 60_000
    for f in (
        _native.compaction_candidates,
        _native.rebuild_entries,
        _native.reassemble_chunks,
    ):
        params = inspect.signature(f).parameters
        assert "options" in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()), f


def test_compactor_is_a_class() -> None:
    c = pe.Compactor()
    assert isinstance(c, pe.Compactor)
