"""The exception hierarchy: every kind raised by a real call, each class both a
``PulsarEntriesError`` and the matching built-in, and the classes picklable
(Spark ships exceptions from executors)."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries import _native

GOOD = pe.encode_entry([{"key": "k", "value": b"v"}], publish_time=1)
BAD = b"\x00\x00\x00\x05abc"  # metadata size 5, three bytes left


def test_hierarchy_and_builtin_bases():
    value_kinds = [pe.InputSchemaError, pe.OptionsError, pe.OrderError, pe.DataError]
    for cls in value_kinds:
        assert issubclass(cls, pe.PulsarEntriesError)
        assert issubclass(cls, ValueError)
        assert not issubclass(cls, OSError)
    for cls in (pe.EntryFormatError, pe.OffloadFormatError):
        assert issubclass(cls, pe.DataError)
        assert issubclass(cls, ValueError)
    assert issubclass(pe.StorageError, pe.PulsarEntriesError)
    assert issubclass(pe.StorageError, OSError)
    assert not issubclass(pe.StorageError, ValueError)
    assert issubclass(pe.PulsarEntriesError, Exception)
    assert not issubclass(pe.PulsarEntriesError, ValueError)
    # One class object, whichever module it is reached through.
    assert _native.EntryFormatError is pe.EntryFormatError
    for name in (
        "PulsarEntriesError",
        "InputSchemaError",
        "OptionsError",
        "OrderError",
        "DataError",
        "EntryFormatError",
        "OffloadFormatError",
        "StorageError",
    ):
        assert name in pe.__all__
        assert getattr(pe, name).__module__ == "pulsar_entries"


def check(exc: BaseException, cls: type, builtin: type) -> None:
    assert type(exc) is cls, type(exc)
    assert isinstance(exc, pe.PulsarEntriesError)
    assert isinstance(exc, builtin)


def test_input_schema_error():
    no_data = pa.table({"ledger_id": [1], "entry_id": [0]})
    with pytest.raises(pe.InputSchemaError, match="no `data` column") as info:
        pe.decode(no_data)
    check(info.value, pe.InputSchemaError, ValueError)
    with pytest.raises(pe.InputSchemaError, match="`record` must be binary") as info:
        _native.from_ledger_records(pa.table({"record": [1, 2]}))
    check(info.value, pe.InputSchemaError, ValueError)


def test_options_error():
    table = pe.entries_table([GOOD])
    with pytest.raises(pe.OptionsError, match="max_uncompressed_size 2147483648 exceeds") as info:
        pe.decode(table, max_uncompressed_size=2**31)
    check(info.value, pe.OptionsError, ValueError)
    with pytest.raises(pe.OptionsError, match="unknown compression"):
        pe.encode_entry([{"value": b"x"}], compression="brotli")
    with pytest.raises(pe.OptionsError, match="max_pending must be at least 1"):
        pe.reassemble_chunks(pe.decode(table), max_pending=0)
    with pytest.raises(pe.OptionsError, match="unknown compaction order"):
        pe.Compactor(order="random")
    with pytest.raises(pe.OptionsError, match="unknown utf8_errors"):
        _native.DecodeOptions(utf8_errors="ignore")
    with pytest.raises(pe.OptionsError, match="unknown built-in strategy"):
        _native.NativeStrategy("coin_flip")


def test_an_int_option_out_of_range_is_an_options_error_naming_the_value():
    with pytest.raises(pe.OptionsError, match=r"argument 'sequence_id' must be a non-negative int, not -1") as info:
        pe.encode_entry([{"value": b"x"}], sequence_id=-1)
    check(info.value, pe.OptionsError, ValueError)
    with pytest.raises(pe.OptionsError, match=r"argument 'max_uncompressed_size' .* not -5"):
        pe.decode(pe.entries_table([GOOD]), max_uncompressed_size=-5)
    # A value of another type stays Python's TypeError.
    with pytest.raises(
        TypeError, match=r"'str' object cannot be interpreted as an integer\nwhile processing 'sequence_id'"
    ):
        pe.encode_entry([{"value": b"x"}], sequence_id="7")


def unsorted_candidates() -> pa.Table:
    entries = pe.entries_table([pe.encode_entry([{"key": k, "value": b"v"}], publish_time=1) for k in ("a", "b")])
    rows = _native.compaction_candidates(entries).to_pylist()
    return pa.Table.from_pylist(rows[::-1], schema=_native.compaction_candidates(entries).schema)


def test_order_violation_is_a_pulsar_entries_value_error():
    with pytest.raises(pe.PulsarEntriesError, match="not sorted") as info:
        _native.SurvivorFolder().push(unsorted_candidates())
    assert isinstance(info.value, ValueError)


def test_order_error():
    with pytest.raises(pe.OrderError, match="not sorted") as info:
        _native.SurvivorFolder().push(unsorted_candidates())
    check(info.value, pe.OrderError, ValueError)


def test_data_errors_and_decode_agrees_with_parse_entry():
    with pytest.raises(pe.EntryFormatError, match="truncated") as info:
        pe.parse_entry(BAD)
    check(info.value, pe.EntryFormatError, ValueError)
    assert isinstance(info.value, pe.DataError)
    # decode reports malformed bytes per row, with the text parse_entry raises.
    rows = pe.decode(pe.entries_table([BAD])).to_pylist()
    assert len(rows) == 1
    assert str(info.value) in rows[0]["error"]
    with pytest.raises(pe.EntryFormatError, match="truncated"):
        pe.MessageId.deserialize(b"\x08")
    index = pa.array([b"\x00" * 64], pa.binary())
    with pytest.raises(pe.OffloadFormatError, match="bad index magic") as info:
        _native.parse_offload_index(index)
    check(info.value, pe.OffloadFormatError, ValueError)
    assert isinstance(info.value, pe.DataError)


def test_storage_error(tmp_path):
    entries = pe.entries_table([GOOD], ledger_id=3)
    missing = tmp_path / "no-such-dir" / "data"
    with pytest.raises(pe.StorageError, match="no-such-dir") as info:
        _native.write_offload_streaming(
            entries,
            str(missing),
            str(tmp_path / "index"),
            timestamp=1,
            options=_native.OffloadOptions(block_size=1 << 20),
        )
    check(info.value, pe.StorageError, OSError)


def test_exceptions_pickle():
    with pytest.raises(pe.EntryFormatError) as info:
        pe.parse_entry(BAD)
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is pe.EntryFormatError
    assert str(back) == str(info.value)


def test_python_callback_exceptions_propagate_as_they_are():
    class Boom(Exception):
        pass

    class Exploding:
        def should_keep_left(self, prev, cur):
            if prev is not None:
                raise Boom("exploded on purpose")
            return False

    table = pe.entries_table([pe.encode_entry([{"key": "k", "value": b"%d" % i}], publish_time=i) for i in (1, 2)])
    # A strategy's own exception, not a PulsarEntriesError.
    with pytest.raises(Boom, match="exploded on purpose"):
        pe.compact(table, strategy=Exploding())
