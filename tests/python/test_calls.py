"""The native functions: typed pyo3 functions with real signatures, arguments bound and checked by pyo3
before any work, bytes-likes and Arrow tables as arguments."""

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
    with pytest.raises(TypeError, match=r"expected bytes, bytearray or memoryview, not str\nwhile processing 'data'"):
        parse_entry("x")  # type: ignore[arg-type]
    table = pa.table({"ledger_id": [1, 1], "entry_id": [0, 1], "data": [entry, entry]})
    for t in (table, table.to_batches()[0], table.to_reader()):
        assert _native.max_entry_position(t) == (1, 1)
    # pyo3-arrow's own error for an object that is not Arrow data.
    with pytest.raises(ValueError, match=r"__arrow_c_array__ or __arrow_c_stream__"):
        _native.max_entry_position([1, 2])


def test_every_native_function_has_a_real_signature() -> None:
    functions = [f for f in vars(_native).values() if callable(f) and type(f).__name__ == "builtin_function_or_method"]
    assert len(functions) >= 40
    for f in functions:
        params = inspect.signature(f).parameters
        assert all(p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL for p in params.values()), f
    sig = inspect.signature(_native.encode_entry)
    assert list(sig.parameters)[:3] == ["messages", "batch", "compression"]
    assert sig.parameters["compression"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["compression"].default is None
    assert (
        str(inspect.signature(_native.decode))
        == "(entries, *, processors=None, options=None, columns=None, crypto_keys=None)"
    )


def test_a_misspelled_keyword_fails_before_any_work() -> None:
    """pyo3 binds every argument before the body runs: a call with a typo reads no entry and computes
    nothing (the old shims ran the body, then refused the leftover keyword)."""
    batches = []

    def entries() -> pa.RecordBatchReader:
        table = pa.table({"ledger_id": [1], "entry_id": [0], "data": [encode_entry([{"key": "k"}])]})

        def each() -> object:
            for b in table.to_batches():
                batches.append(b)
                yield b

        return pa.RecordBatchReader.from_batches(table.schema, each())

    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'optoins'"):
        _native.compaction_candidates(entries(), optoins=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"while processing 'options'"):
        _native.decode(entries(), options={"verify_checksum": False})  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"'str' object cannot be interpreted as an integer\nwhile processing 'sequence_id'"
    ):
        _native.encode_entry([{"value": b"x"}], sequence_id="7")  # type: ignore[arg-type]
    assert batches == []
    assert _native.compaction_candidates(entries()).num_rows == 1 and len(batches) == 1
