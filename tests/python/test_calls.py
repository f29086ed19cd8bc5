"""The core's functions over plain values and tables, as ``_native`` exports them: module functions
with Python's signatures and argument binding, bytes-likes and Arrow tables as arguments."""

from __future__ import annotations

import inspect
import pickle

import pyarrow as pa
import pytest

from pulsar_entries import _native, encode_entry, parse_entry


def test_they_are_module_functions_that_pickle_by_name() -> None:
    # Spark pickles what a UDF uses: a function must travel by its name.
    for f in (_native.parse_entry, _native.to_ledger_records, _native.stamp):
        assert f.__module__ == "pulsar_entries._native"
        assert pickle.loads(pickle.dumps(f)) is f


def test_signatures_and_binding_are_pythons() -> None:
    assert str(inspect.signature(_native.ledger_path)) == "(ledger_id, root='/ledgers')"
    assert _native.ledger_path(5) == _native.ledger_path(ledger_id=5) == "/ledgers/00/0000/L0005"
    assert _native.ledger_path(5, "/x") == "/x/00/0000/L0005"
    with pytest.raises(TypeError, match=r"^ledger_path\(\) takes 2 positional arguments but 3 were given$"):
        _native.ledger_path(1, "/x", "y")
    with pytest.raises(TypeError, match=r"^ledger_path\(\) got multiple values for argument 'ledger_id'$"):
        _native.ledger_path(1, ledger_id=2)
    with pytest.raises(TypeError, match=r"^ledger_path\(\) missing 1 required positional argument: 'ledger_id'$"):
        _native.ledger_path()
    with pytest.raises(TypeError, match=r"^ledger_path\(\) got an unexpected keyword argument 'bogus'$"):
        _native.ledger_path(1, bogus=True)


def test_bytes_likes_and_arrow_tables_cross() -> None:
    entry = encode_entry([{"value": b"v"}], publish_time=1)
    for data in (entry, bytearray(entry), memoryview(entry)):
        assert parse_entry(data)["payload"] == b"v"
    with pytest.raises(TypeError, match=r"^parse_entry\(\) argument 'data' must be bytes, not str$"):
        parse_entry("x")  # type: ignore[arg-type]
    table = pa.table({"ledger_id": [1, 1], "entry_id": [0, 1], "data": [entry, entry]})
    for t in (table, table.to_batches()[0], table.to_reader()):
        assert _native.max_entry_position(t) == (1, 1)
    with pytest.raises(TypeError, match=r"argument 'entries' must be an Arrow table, record batch or stream"):
        _native.max_entry_position([1, 2])
