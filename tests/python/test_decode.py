"""decode(): output schema, error rows, count reconciliation, input shapes."""

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_entries as pe

from support.tables import int_times

TS = pa.timestamp("ms", tz="UTC")
EXPECTED_TYPES = {
    "ledger_id": pa.int64(),
    "entry_id": pa.int64(),
    "partition": pa.int32(),
    "batch_index": pa.int32(),
    "num_messages": pa.int32(),
    "producer_name": pa.string(),
    "sequence_id": pa.int64(),
    "publish_time": TS,
    "event_time": TS,
    "key": pa.string(),
    "key_b64_encoded": pa.bool_(),
    "ordering_key": pa.binary(),
    "properties": pa.map_(pa.string(), pa.string()),
    "value": pa.binary(),
    "compacted_out": pa.bool_(),
    "schema_version": pa.binary(),
    "compression": pa.string(),
    "uncompressed_size": pa.int64(),
    "encrypted": pa.bool_(),
    "broker_timestamp": TS,
    "broker_index": pa.int64(),
    "uuid": pa.string(),
    "chunk_id": pa.int32(),
    "num_chunks": pa.int32(),
    "total_chunk_size": pa.int32(),
    "marker_type": pa.int32(),
    "txnid_most_bits": pa.int64(),
    "txnid_least_bits": pa.int64(),
    "error": pa.string(),
}

E1 = bytes.fromhex("0e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f")
E2 = bytes.fromhex(
    "0e020000000908fbd095ffbc3110000e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f"
)
E3 = bytes.fromhex(
    "0e014995f652000000240a0d746573742d70726f647563657210001880d095ffbc3132026b315802880100c00101"
    "0000000a12026b3118053000400068656c6c6f0000000418054001776f726c64"
)
E4 = bytes.fromhex("0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101")


def test_output_schema_has_every_documented_column(table_of):
    out = pe.decode(table_of([E1]))
    for name, typ in EXPECTED_TYPES.items():
        assert out.schema.field(name).type.equals(typ), name


def test_spec_vectors_decode(table_of):
    out = int_times(pe.decode(table_of([E1, E2, E3, E4])))
    rows = out.to_pylist()
    assert len(rows) == 4  # E4 is a marker: skipped by default
    e1, e2, m1, m2 = rows
    assert (e1["value"], e1["sequence_id"], e1["publish_time"], e1["batch_index"]) == (b"hello", 7, 1700000000000, -1)
    assert e1["broker_timestamp"] is None and e1["broker_index"] is None
    assert (e2["broker_timestamp"], e2["broker_index"], e2["value"]) == (1700000000123, 0, b"hello")
    assert (m1["key"], m1["value"], m1["batch_index"], m1["num_messages"]) == ("k1", b"hello", 0, 2)
    assert (m2["key"], m2["value"], m2["batch_index"], m2["sequence_id"]) == (None, b"world", 1, 1)
    assert all(r["error"] is None and r["compression"] == "none" for r in rows)


def test_spec_vectors_encode_exactly():
    kw = dict(producer_name="test-producer", publish_time=1700000000000)
    assert pe.encode_entry([{"value": b"hello"}], sequence_id=7, **kw) == E1
    assert (
        pe.encode_entry([{"value": b"hello"}], sequence_id=7, broker_timestamp=1700000000123, broker_index=0, **kw)
        == E2
    )
    batch = [{"value": b"hello", "key": "k1"}, {"value": b"world"}]
    assert pe.encode_entry(batch, sequence_id=0, **kw) == E3


def test_markers_kept_on_request(table_of):
    out = pe.decode(table_of([E4, E1]), keep_markers=True)
    assert out.column("marker_type").to_pylist() == [21, None]
    assert out.column("txnid_most_bits").to_pylist() == [1, None]


def test_bad_entries_give_one_error_row_each_and_counts_reconcile(table_of):
    good_batch = pe.encode_entry([{"value": b"a"}, {"value": b"b"}, {"value": b"c"}], compression="zstd")
    corrupt = bytearray(good_batch)
    corrupt[-3] ^= 0xFF
    inputs = [good_batch, b"", b"\x0e\x01\x00", bytes(corrupt), E1, b"\x00\x00\x00\x02\x08"]
    out = pe.decode(table_of(inputs))
    errors = out.column("error").to_pylist()
    entry_ids = out.column("entry_id").to_pylist()
    # Every input entry is accounted for: messages for good ones, one error row for bad ones.
    assert sorted(set(entry_ids)) == list(range(len(inputs)))
    assert [entry_ids.count(i) for i in range(len(inputs))] == [3, 1, 1, 1, 1, 1]
    bad = {eid: err for eid, err in zip(entry_ids, errors) if err}
    assert set(bad) == {1, 2, 3, 5}
    assert bad[1] == "truncated metadata size at entry offset 0: needs 4 bytes, 0 available"
    assert bad[2] == "truncated checksum at entry offset 2: needs 4 bytes, 1 available"
    assert bad[3].startswith("checksum mismatch: stored crc32c 0x")
    assert "MessageMetadata" in bad[5] and "entry offset 4" in bad[5]


def test_checksum_verification_can_be_disabled(table_of):
    corrupt = bytearray(E1)
    corrupt[-1] ^= 1  # hello -> hellp... still a valid message
    assert pe.decode(table_of([bytes(corrupt)])).column("error").to_pylist()[0].startswith("checksum mismatch")
    out = pe.decode(table_of([bytes(corrupt)]), verify_checksum=False)
    assert out.column("value").to_pylist() == [b"hellm" if corrupt[-1] == ord("m") else bytes(corrupt[-5:])]


def test_max_uncompressed_size(table_of):
    e = pe.encode_entry([{"value": b"x" * 100_000}], compression="lz4")
    err = pe.decode(table_of([e]), max_uncompressed_size=1000).column("error").to_pylist()[0]
    assert err.startswith("uncompressed_size 100000 exceeds the limit of 1000 bytes")
    with pytest.raises(ValueError, match="exceeds the supported maximum"):
        pe.decode(table_of([e]), max_uncompressed_size=1 << 40)


def test_input_shapes(table_of):
    entries = [pe.encode_entry([{"value": bytes([i])}]) for i in range(5)]
    table = table_of(entries, ledger_id=3, partition=2)
    expected = pe.decode(table)
    assert expected.column("partition").to_pylist() == [2] * 5
    # A record batch, a stream, large_binary data and int32 ids all decode the same.
    assert pe.decode(table.to_batches()[0]).equals(expected)
    assert pe.decode(pa.RecordBatchReader.from_batches(table.schema, table.to_batches())).equals(expected)
    large = table.set_column(2, "data", table.column("data").cast(pa.large_binary()))
    assert pe.decode(large).equals(expected)
    narrow = table.set_column(1, "entry_id", table.column("entry_id").cast(pa.int32()))
    assert pe.decode(narrow).equals(expected)
    # No partition column: -1.
    assert pe.decode(table.drop_columns(["partition"])).column("partition").to_pylist() == [-1] * 5


def test_schema_errors_raise(table_of):
    with pytest.raises(ValueError, match="no `data` column"):
        pe.decode(pa.table({"ledger_id": [1], "entry_id": [2]}))
    with pytest.raises(ValueError, match="must be binary"):
        pe.decode(pa.table({"ledger_id": [1], "entry_id": [2], "data": ["text"]}))


def test_empty_input_keeps_the_schema(table_of):
    out = pe.decode(table_of([]))
    assert out.num_rows == 0
    assert out.schema.equals(pe.decode(table_of([E1])).schema)


def test_parse_entry_reports_everything():
    info = pe.parse_entry(E2)
    assert info["broker_entry_metadata"] == {"broker_timestamp": 1700000000123, "index": 0}
    assert info["checksum"] == {"stored": 0xCDEBA9A5, "computed": 0xCDEBA9A5, "valid": True}
    assert info["metadata"] == {
        "producer_name": "test-producer",
        "sequence_id": 7,
        "publish_time": 1700000000000,
        "uncompressed_size": 5,
    }
    assert (info["payload"], info["is_batch"], info["num_messages"], info["metadata_size"]) == (b"hello", False, 1, 26)
    batch1 = bytes.fromhex("000000090a0170100018015801")
    assert pe.parse_entry(batch1)["is_batch"] is True  # presence, not value, marks a batch


def test_parse_entry_errors_are_entry_format_errors():
    assert issubclass(pe.EntryFormatError, ValueError)
    with pytest.raises(pe.EntryFormatError, match="truncated MessageMetadata at entry offset 10"):
        pe.parse_entry(E1[:20])
    with pytest.raises(pe.EntryFormatError, match="Invalid unknown tag type: 3"):
        pe.parse_entry(b"\x00\x00\x00\x01\x0b")


def test_encode_entry_validates_arguments():
    with pytest.raises(ValueError, match="unknown compression"):
        pe.encode_entry([{"value": b""}], compression="gzip")
    with pytest.raises(ValueError, match='unknown key "vale"'):
        pe.encode_entry([{"vale": b""}])
    with pytest.raises(TypeError, match=r'messages\[0\]\["key"\] must be str, bytes or None'):
        pe.encode_entry([{"key": 5}])
    with pytest.raises(ValueError, match="batch=False takes exactly one message"):
        pe.encode_entry([{}, {}], batch=False)


def test_encode_entry_field_presence_follows_java():
    single = pe.parse_entry(pe.encode_entry([{"value": b"abc", "key": "k"}]))["metadata"]
    assert single["uncompressed_size"] == 3 and "compression" not in single
    assert single["partition_key_b64_encoded"] is False
    assert "num_messages_in_batch" not in single
    one = pe.parse_entry(pe.encode_entry([{"value": b"abc"}], batch=True))["metadata"]
    assert one["num_messages_in_batch"] == 1 and "uncompressed_size" not in one
    zipped = pe.parse_entry(pe.encode_entry([{"value": b"abc"}] * 2, compression="snappy"))["metadata"]
    assert zipped["compression"] == "snappy" and zipped["uncompressed_size"] > 0
    keyed = pe.parse_entry(pe.encode_entry([{"value": b"", "key": b"\x00\xff"}]))["metadata"]
    assert (keyed["partition_key"], keyed["partition_key_b64_encoded"]) == ("AP8=", True)
    entry_props = pe.parse_entry(pe.encode_entry([{"value": b""}] * 2, properties={"entry.format": "x"}))
    assert entry_props["metadata"]["properties"] == [("entry.format", "x")]


messages = st.lists(
    st.fixed_dictionaries(
        {
            "value": st.one_of(st.none(), st.binary(max_size=200)),
            "key": st.one_of(st.none(), st.text(max_size=8), st.binary(max_size=8)),
            "properties": st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=3),
            "event_time": st.one_of(st.none(), st.integers(1, 2**42)),
            "ordering_key": st.one_of(st.none(), st.binary(max_size=6)),
        }
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(msgs=messages, codec=st.sampled_from(["none", "lz4", "zlib", "zstd", "snappy"]), checksum=st.booleans())
def test_round_trip(msgs, codec, checksum):
    import base64

    entry = pe.encode_entry(msgs, batch=True, compression=codec, checksum=checksum, sequence_id=10)
    rows = int_times(pe.decode(pe.entries_table([entry]))).to_pylist()
    assert len(rows) == len(msgs)
    for i, (row, m) in enumerate(zip(rows, msgs)):
        assert row["error"] is None
        assert row["value"] == m["value"]
        if isinstance(m["key"], bytes):
            assert (row["key"], row["key_b64_encoded"]) == (base64.b64encode(m["key"]).decode(), True)
        else:
            assert row["key"] == m["key"]
        assert dict(row["properties"]) == m["properties"]
        assert row["event_time"] == m["event_time"]
        assert row["ordering_key"] == m["ordering_key"]
        assert row["sequence_id"] == 10 + i
        assert row["compression"] == codec


@settings(max_examples=25, deadline=None)
@given(msgs=messages, codec=st.sampled_from(["none", "lz4", "zlib", "zstd", "snappy"]))
def test_every_bit_flip_is_an_error_row(msgs, codec):
    entry = pe.encode_entry(msgs, batch=True, compression=codec)
    flipped = []
    for i in range(len(entry)):
        for bit in range(8):
            e = bytearray(entry)
            e[i] ^= 1 << bit
            flipped.append(bytes(e))
    out = pe.decode(pe.entries_table(flipped))
    assert out.num_rows == len(flipped)
    assert out.column("error").null_count == 0


def _projection_corpus() -> list[bytes | None]:
    """Entries of every shape: batches of every codec (keys, properties, null
    values), single messages, chunks, a transaction and its marker, an
    encrypted entry, KoP entries (records with headers, a control batch),
    bad entries and a null cell."""
    from pulsar_entries import kafka

    from support.entrygen import encrypted_entry

    out: list[bytes | None] = []
    for i, codec in enumerate(["none", "lz4", "zlib", "zstd", "snappy"]):
        msgs = [
            {
                "value": None if j == 2 else b"v%d" % j * (j + 1),
                "key": None if j % 2 else f"k{j}",
                "properties": {f"p{x}": str(j) for x in range(j % 3)},
                "event_time": 1_000 + j if j % 2 == 0 else None,
            }
            for j in range(1 + 3 * i)
        ]
        out.append(pe.encode_entry(msgs, compression=codec, broker_index=10 * i if i % 2 else None))
        out.append(pe.encode_entry(msgs[:1], batch=False, compression=codec, broker_timestamp=5))
    out += pe.encode_chunked({"value": b"chunked " * 40, "key": "c"}, chunk_size=50)
    out += [E1, E2, E3, E4, encrypted_entry(2, "ek", b"ciphertext")]
    records = [
        {"key": b"kk", "value": b"kafka", "headers": [("h", b"x"), ("n", None)], "timestamp": 7},
        {"value": None},
    ]
    for codec in ["none", "gzip", "lz4", "zstd", "snappy"]:
        out.append(kafka.kop_entry([kafka.record_batch(records, compression=codec, base_offset=3)]))
    out.append(kafka.kop_entry([kafka.control_batch(True, producer_id=9)]))
    out += [b"", b"\x0e\x01\x00", None, E1[:-2]]
    return out


@pytest.mark.parametrize("keep_markers", [False, True])
def test_projected_decode_equals_the_full_decodes_columns(keep_markers):
    entries = _projection_corpus()
    table = pa.table(
        {
            "ledger_id": pa.array([4] * len(entries), pa.int64()),
            "entry_id": pa.array(range(len(entries)), pa.int64()),
            "data": pa.array(entries, pa.binary()),
        }
    )
    full = pe.decode(table, keep_markers=keep_markers)
    assert full.column("error").null_count <= full.num_rows - 4  # the bad entries
    assert {"kafka", "pulsar"} <= set(full.column("processor").to_pylist())
    names = full.column_names
    sets = [[n] for n in names] + [
        ["ledger_id", "entry_id", "batch_index", "key", "value", "publish_time"],
        ["value", "publish_time", "key", "ledger_id"],
        ["error", "txn_status", "properties", "headers", "offset", "chunk_id"],
        names[::-1],
        [],
    ]
    for cols in sets:
        got = pe.decode(table, keep_markers=keep_markers, columns=cols)
        assert got.column_names == cols
        assert got.num_rows == full.num_rows
        assert got.equals(full.select(cols)), cols


def test_projection_rejects_unknown_and_repeated_columns(table_of):
    with pytest.raises(pe.OptionsError, match="unknown decode column"):
        pe.decode(table_of([E1]), columns=["value", "nope"])
    with pytest.raises(pe.OptionsError, match="requested twice"):
        pe.decode(table_of([E1]), columns=["value", "value"])


def test_carrying_decode_with_columns_keeps_ids_errors_and_extras():
    from pulsar_entries._carry import decode_carrying

    entries = pa.table(
        {
            "ledger_id": pa.array([1, 1, 1], pa.int64()),
            "entry_id": pa.array([0, 1, 2], pa.int64()),
            "data": pa.array([E3, None, E1], pa.binary()),
            "error": pa.array([None, "block damaged", None]),
            "topic": pa.array(["a", "b", "c"]),
        }
    )
    full = decode_carrying(entries)
    for cols in (["value", "topic", "error"], ["key", "topic"], ["value"]):
        got = decode_carrying(entries, cols)
        assert got.select(cols).equals(full.select(cols)), cols
    assert decode_carrying(entries, ["error", "topic"]).column("error").to_pylist() == [
        None,
        None,
        "block damaged",
        None,
    ]
