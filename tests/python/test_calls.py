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
    f = _native.partition_name
    assert str(inspect.signature(f)) == "(topic, index)"
    assert f("t/ns/x", 2) == f(topic="t/ns/x", index=2) == "persistent://t/ns/x-partition-2"
    with pytest.raises(TypeError, match=r"^partition_name\(\) takes 2 positional arguments but 3 were given$"):
        f("x", 1, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^partition_name\(\) got multiple values for argument 'topic'$"):
        f("x", topic="y")  # type: ignore[call-arg,misc]
    with pytest.raises(
        TypeError, match=r"^partition_name\(\) missing 2 required positional arguments: 'topic' and 'index'$"
    ):
        f()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^partition_name\(\) got an unexpected keyword argument 'bogus'$"):
        f("x", 1, bogus=True)  # type: ignore[call-arg]
    g = _native.ledger_node_from_text
    with pytest.raises(
        TypeError, match=r"^ledger_node_from_text\(\) takes from 2 to 3 positional arguments but 4 were given$"
    ):
        g(1, "x", b"", 3)  # type: ignore[call-arg]


def test_bytes_likes_and_arrow_tables_cross() -> None:
    entry = encode_entry([{"value": b"v"}], publish_time=1)
    for data in (entry, bytearray(entry), memoryview(entry)):
        assert parse_entry(data)["payload"] == b"v"
    with pytest.raises(TypeError, match=r"^parse_entry\(\) argument 'data' must be bytes, not str$"):
        parse_entry("x")  # type: ignore[arg-type]
    table = pa.table({"ledger_id": [1, 1], "entry_id": [0, 1], "data": [entry, entry]})
    for t in (table, table.to_batches()[0], table.to_reader()):
        assert _native.max_entry_position(t) == (1, 1)
    # pyo3-arrow's own error for an object that is not Arrow data.
    with pytest.raises(ValueError, match=r"__arrow_c_array__ or __arrow_c_stream__"):
        _native.max_entry_position([1, 2])
