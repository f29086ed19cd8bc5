"""Interop tests against the official Pulsar C++ client (PyPI ``pulsar-client``).

Direction 1 (ours -> C++): entries built by ``pulsar_entries.encode_entry`` are split with the C++ client's own
batch parser, ``pulsar.MessageBatch().parse_from(batch_buffer, num_messages)``, and every message is compared with
the input.

Direction 2 (C++ -> ours): the C++ producer publishes (batched and non-batched, every codec) to an in-process mock
broker that speaks just enough of the binary protocol; the captured SEND payload is exactly the byte string a
broker stores (entry-format.md §1.7), and it is read back with ``pulsar_entries``.

Facts about pulsar-client 3.13.0 that these tests rely on (verified with hand-built buffers):

* ``MessageBatch.parse_from(data, n)`` takes the raw, *uncompressed* batch buffer (§5.1 framing, no entry header,
  no checksum; ``bytes``/``bytearray``/``str``, not ``memoryview``) and performs no bounds checks -- a malformed
  buffer means reads past the end, so the framing is validated here first (``_check_framing``).
* ``Message.partition_key()`` / ``ordering_key()`` return ``str`` ('' when absent; a non-UTF-8 value raises
  ``UnicodeDecodeError`` whose ``.object`` is the raw bytes). The ``partition_key_b64_encoded`` and
  ``null_partition_key`` flags are not exposed: a binary key shows up as its base64 text.
* ``event_timestamp()`` is 0 when absent; ``has_null_value()`` reflects SingleMessageMetadata.null_value and
  ``data()`` is b'' for a null value; ``properties()`` is a dict (first duplicate wins).
* ``sequence_id`` is not exposed except through ``str(msg._message)`` ("Message(prod=, seq=N, ...)").
* Message ids are ``(ledger, entry, partition, batch_index)`` taken from ``with_message_id``.
"""

import base64
import re
import struct
import zlib

import pulsar  # a missing pulsar-client must fail the module, not skip it
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_entries

from support.mock_broker import CPP_COMPRESSION, MockBroker, pb_fields

pytestmark = pytest.mark.interop

# --------------------------------------------------------------------------------------------------------------
# Helpers: protobuf scan, codecs, pulsar-client wrappers
# --------------------------------------------------------------------------------------------------------------

_CODEC_NAMES = {0: "NONE", 1: "LZ4", 2: "ZLIB", 3: "ZSTD", 4: "SNAPPY"}
_SEQ_RE = re.compile(r"\bseq=(\d+)")


def _check_framing(buf, n):
    """Walk the §5.1 records so that the unchecked C++ parser never reads out of bounds."""
    i = 0
    for _ in range(n):
        assert i + 4 <= len(buf), "batch buffer truncated before a record size"
        (smm_size,) = struct.unpack_from(">I", buf, i)
        i += 4
        assert i + smm_size <= len(buf), "SingleMessageMetadata overruns the batch buffer"
        smm = pb_fields(buf[i : i + smm_size])
        i += smm_size
        assert 3 in smm, "SingleMessageMetadata.payload_size (required) missing"
        payload_size = smm[3][-1]
        assert i + payload_size <= len(buf), "payload overruns the batch buffer"
        i += payload_size
    assert i == len(buf), "bytes left after the last batch record (no trailer allowed)"


def _codec_name(value):
    if value is None:
        return "NONE"
    if isinstance(value, int):
        return _CODEC_NAMES[value]
    return str(getattr(value, "name", value)).upper()


def _decompress(payload, codec, size):
    """Independent decompression of a stored payload (entry-format.md §4.2)."""
    codec = _codec_name(codec)
    if codec == "NONE":
        return bytes(payload)
    if codec == "ZLIB":
        # Java writes an unterminated sync-flushed stream: inflate streaming, never require the end marker.
        return zlib.decompressobj().decompress(payload)
    if size == 0:
        return b""
    arrow_codec = {"LZ4": "lz4_raw", "ZSTD": "zstd", "SNAPPY": "snappy"}[codec]
    return pa.decompress(payload, decompressed_size=size, codec=arrow_codec, asbytes=True)


def _as_bytes(getter):
    """pulsar-client returns keys as str; recover the raw bytes even when they are not UTF-8."""
    try:
        return getter().encode("utf-8")
    except UnicodeDecodeError as exc:
        return bytes(exc.object)


def _sequence_id(msg):
    m = _SEQ_RE.search(str(msg._message))
    assert m, f"cannot find seq= in {str(msg._message)!r}"
    return int(m.group(1))


def _expected_partition_key(key):
    if key is None:
        return b""
    if isinstance(key, (bytes, bytearray)):
        return base64.b64encode(bytes(key))  # binary key: base64 text + b64 flag (entry-format.md §9)
    return key.encode("utf-8")


def _split_with_pulsar(buf, n, ledger=7, entry=11, partition=-1):
    _check_framing(buf, n)
    batch = pulsar.MessageBatch().with_message_id(pulsar.MessageId(partition, ledger, entry, -1))
    msgs = batch.parse_from(bytes(buf), n)
    assert len(msgs) == n
    return msgs


def _assert_pulsar_message(msg, spec, index, ledger=7, entry=11):
    value = spec.get("value")
    assert msg.data() == (b"" if value is None else value)
    assert msg.has_null_value() is (value is None)
    assert _as_bytes(msg.partition_key) == _expected_partition_key(spec.get("key"))
    assert msg.properties() == dict(spec.get("properties") or {})
    # event_time absent and event_time 0 are indistinguishable in pulsar-client (both read as 0).
    assert msg.event_timestamp() == (spec.get("event_time") or 0)
    assert _as_bytes(msg.ordering_key) == (spec.get("ordering_key") or b"")
    if spec.get("sequence_id") is not None:
        assert _sequence_id(msg) == spec["sequence_id"]
    mid = msg.message_id()
    assert (mid.ledger_id(), mid.entry_id(), mid.batch_index()) == (ledger, entry, index)


def _encode_and_split(messages, compression="none", **kwargs):
    entry = pulsar_entries.encode_entry(messages, batch=True, compression=compression, **kwargs)
    assert isinstance(entry, (bytes, bytearray))
    parsed = pulsar_entries.parse_entry(bytes(entry))
    md = parsed["metadata"]
    assert md["num_messages_in_batch"] == len(messages), "batch header must always carry num_messages_in_batch"
    payload = parsed["payload"]
    if compression == "none":
        assert _codec_name(md.get("compression")) == "NONE"
        assert "uncompressed_size" not in md or md["uncompressed_size"] == len(payload)
        buf = payload
    else:
        assert _codec_name(md.get("compression")) == compression.upper()
        size = md["uncompressed_size"]
        buf = _decompress(payload, compression, size)
        assert len(buf) == size
    return md, _split_with_pulsar(buf, len(messages))


# --------------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------------

_text = st.text(max_size=12)
_message = st.fixed_dictionaries(
    {
        "value": st.one_of(st.none(), st.binary(max_size=48)),
        "key": st.one_of(st.none(), st.text(max_size=16)),
        "properties": st.dictionaries(_text, _text, max_size=4),
        "event_time": st.one_of(st.none(), st.integers(min_value=1, max_value=2**63 - 1)),
        "ordering_key": st.one_of(st.none(), st.binary(max_size=16)),
    },
    optional={"sequence_id": st.one_of(st.none(), st.integers(min_value=0, max_value=2**63 - 1))},
)
_message_any_key = _message.flatmap(
    lambda m: st.one_of(st.none(), st.text(max_size=16), st.binary(max_size=16)).map(lambda k: {**m, "key": k})
)


# --------------------------------------------------------------------------------------------------------------
# Direction 1: our encoder -> pulsar-client's MessageBatch
# --------------------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_message, min_size=1, max_size=8))
def test_batch_parsed_by_pulsar_client(messages):
    _, msgs = _encode_and_split(messages)
    for i, (msg, spec) in enumerate(zip(msgs, messages)):
        _assert_pulsar_message(msg, spec, i)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_message_any_key, min_size=1, max_size=6))
def test_batch_with_binary_keys_parsed_by_pulsar_client(messages):
    _, msgs = _encode_and_split(messages)
    for i, (msg, spec) in enumerate(zip(msgs, messages)):
        _assert_pulsar_message(msg, spec, i)


@pytest.mark.parametrize("compression", ["lz4", "zlib", "zstd", "snappy"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(_message_any_key, min_size=1, max_size=6))
def test_compressed_batch_parsed_by_pulsar_client(compression, messages):
    _, msgs = _encode_and_split(messages, compression=compression)
    for i, (msg, spec) in enumerate(zip(msgs, messages)):
        _assert_pulsar_message(msg, spec, i)


FIXED_MESSAGES = [
    {
        "value": b"hello",
        "key": "k1",
        "properties": {"a": "1", "b": "2"},
        "event_time": 1_700_000_000_123,
        "sequence_id": 5,
        "ordering_key": b"ok",
    },
    {"value": None, "key": "tombstone", "properties": {}, "event_time": None, "sequence_id": 6, "ordering_key": None},
    {
        "value": b"",
        "key": None,
        "properties": {"empty": ""},
        "event_time": None,
        "sequence_id": 7,
        "ordering_key": None,
    },
    {
        "value": b"\x00\xff\x00",
        "key": b"\x00\x01\xfe\xff",
        "properties": {"k": "v"},
        "event_time": 1,
        "sequence_id": 8,
        "ordering_key": b"\xff\x00",
    },
    {
        "value": b"bin-key-empty",
        "key": b"",
        "properties": {},
        "event_time": None,
        "sequence_id": 9,
        "ordering_key": b"",
    },
    {
        "value": "ünïcödé".encode(),
        "key": "ключ",
        "properties": {"ü": "é"},
        "event_time": 2**62,
        "sequence_id": 10,
        "ordering_key": "ördering".encode(),
    },
]


@pytest.mark.parametrize("compression", ["none", "lz4", "zlib", "zstd", "snappy"])
def test_fixed_batch_parsed_by_pulsar_client(compression):
    md, msgs = _encode_and_split(
        FIXED_MESSAGES, compression=compression, producer_name="interop", sequence_id=5, publish_time=1_700_000_000_000
    )
    for i, (msg, spec) in enumerate(zip(msgs, FIXED_MESSAGES)):
        _assert_pulsar_message(msg, spec, i)
    # Batch header (entry-format.md §5.3): first message's key / ordering key, last message's sequence id.
    assert md["producer_name"] == "interop"
    assert md["publish_time"] == 1_700_000_000_000
    assert md["partition_key"] == "k1"
    assert md["highest_sequence_id"] == 10
    assert "event_time" not in md and not md.get("properties")


@pytest.mark.parametrize(
    "message",
    [
        {
            "value": b"only",
            "key": "k",
            "properties": {"p": "q"},
            "event_time": 42,
            "sequence_id": 3,
            "ordering_key": b"o",
        },
        {"value": None, "key": b"\xde\xad\xbe\xef", "properties": {}, "event_time": None, "ordering_key": None},
        {"value": b"", "key": None, "properties": {}, "event_time": None, "ordering_key": None},
    ],
)
@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_batch_of_one_parsed_by_pulsar_client(message, compression):
    md, msgs = _encode_and_split([message], compression=compression)
    assert md["num_messages_in_batch"] == 1  # present even for one message (§5.4)
    _assert_pulsar_message(msgs[0], message, 0)


def test_pulsar_client_reads_checksum_independent_batch_buffer():
    """The batch buffer is identical with and without the entry checksum / broker entry metadata prefix."""
    msgs = [{"value": b"x", "key": "k", "properties": {}, "event_time": None, "ordering_key": None}]
    plain = pulsar_entries.parse_entry(pulsar_entries.encode_entry(msgs, batch=True, checksum=False))
    with_prefix = pulsar_entries.parse_entry(
        pulsar_entries.encode_entry(msgs, batch=True, broker_timestamp=1_700_000_000_999, broker_index=41)
    )
    assert plain["payload"] == with_prefix["payload"]
    assert with_prefix["broker_entry_metadata"]["broker_timestamp"] == 1_700_000_000_999
    assert with_prefix["broker_entry_metadata"]["index"] == 41
    assert plain["broker_entry_metadata"] is None
    _assert_pulsar_message(_split_with_pulsar(plain["payload"], 1)[0], msgs[0], 0)


# --------------------------------------------------------------------------------------------------------------
# Direction 2: pulsar-client's producer (C++) -> mock broker -> our reader
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpp_producer():
    broker = MockBroker()
    client = pulsar.Client(
        broker.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )
    counter = iter(range(1_000_000))

    def produce(messages, compression="none", batching=True):
        """Publish ``messages`` (test specs; str keys only) and return the stored entries."""
        producer = client.create_producer(
            "persistent://public/default/interop-%d" % next(counter),
            producer_name="cpp-producer",
            batching_enabled=batching,
            batching_max_messages=10_000,
            batching_max_publish_delay_ms=600_000,
            batching_max_allowed_size_in_bytes=4 * 1024 * 1024,
            compression_type=CPP_COMPRESSION[compression],
        )
        before = len(broker.entries)
        try:
            for spec in messages:
                # The Python wrapper drops falsy keys / event times and turns content=None into a null value.
                producer.send_async(
                    spec["value"],
                    None,
                    properties=spec.get("properties") or None,
                    partition_key=spec.get("key"),
                    ordering_key=(spec.get("ordering_key") or b"").decode() or None,
                    event_timestamp=spec.get("event_time"),
                )
            producer.flush()
        finally:
            producer.close()
        return broker.entries[before:]

    yield produce
    client.close()
    broker.close()


def _cpp_expected(spec):
    """What the C++ producer actually stores for a test spec (falsy optionals are dropped by the wrapper)."""
    return {
        "value": spec["value"],
        "key": spec.get("key") or None,
        "properties": dict(spec.get("properties") or {}),
        "event_time": spec.get("event_time") or None,
        "ordering_key": spec.get("ordering_key") or None,
    }


def _column(table, name):
    return table.column(name).to_pylist()


def _decode_entries(entries):
    """Single adapter for ``pulsar_entries.decode``'s *input* table (one row per stored entry).
    ASSUMPTION: columns ledger_id / entry_id / data; adjust here if the package's input schema differs."""
    table = pa.table(
        {
            "ledger_id": pa.array([1] * len(entries), pa.int64()),
            "entry_id": pa.array(range(len(entries)), pa.int64()),
            "data": pa.array(entries, pa.binary()),
        }
    )
    return pulsar_entries.decode(table)


def _assert_decoded_rows(out, expected):
    assert out.num_rows == len(expected)
    errors = _column(out, "error")
    assert errors == [None] * len(expected), errors
    keys = [k.encode() if isinstance(k, str) else k for k in _column(out, "key")]
    assert keys == [None if e["key"] is None else e["key"].encode() for e in expected]
    assert _column(out, "value") == [e["value"] for e in expected]
    props = [dict(p) if p is not None else {} for p in _column(out, "properties")]
    assert props == [e["properties"] for e in expected]
    event_times = out.column("event_time").cast(pa.int64()).to_pylist()
    assert event_times == [e["event_time"] for e in expected]
    okeys = [k.encode() if isinstance(k, str) else k for k in _column(out, "ordering_key")]
    assert okeys == [e["ordering_key"] for e in expected]


_cpp_message = st.fixed_dictionaries(
    {
        "value": st.one_of(st.none(), st.binary(max_size=48)),
        "key": st.one_of(st.none(), st.text(max_size=16)),
        "properties": st.dictionaries(_text, _text, max_size=3),
        "event_time": st.one_of(st.none(), st.integers(min_value=1, max_value=2**62)),
        "ordering_key": st.one_of(st.none(), st.text(max_size=8).map(str.encode)),
    }
)


@pytest.mark.parametrize("compression", ["none", "lz4", "zlib", "zstd", "snappy"])
def test_cpp_produced_batch_entries(cpp_producer, compression):
    messages = (
        FIXED_MESSAGES[:3]
        + [FIXED_MESSAGES[5]]
        + [
            {
                "value": b"v%d" % i * 20,
                "key": "key-%d" % (i % 3),
                "properties": {"i": str(i)},
                "event_time": 1_000 + i,
                "ordering_key": None,
            }
            for i in range(20)
        ]
    )
    entries = cpp_producer(messages, compression=compression, batching=True)
    assert len(entries) == 1
    entry = entries[0]
    assert entry[:2] == b"\x0e\x01"  # the C++ producer always writes the CRC32C magic

    parsed = pulsar_entries.parse_entry(entry)
    md = parsed["metadata"]
    assert parsed["broker_entry_metadata"] is None
    assert md["producer_name"] == "cpp-producer"
    assert md["num_messages_in_batch"] == len(messages)
    assert md["partition_key"] == messages[0]["key"]
    assert _codec_name(md.get("compression")) == compression.upper()
    buf = _decompress(parsed["payload"], md.get("compression"), md.get("uncompressed_size", 0))
    if compression != "none":
        assert len(buf) == md["uncompressed_size"]
    # Cross-check the decompressed buffer with the C++ client's own parser, then with ours.
    for i, (msg, spec) in enumerate(zip(_split_with_pulsar(buf, len(messages)), messages)):
        _assert_pulsar_message(msg, _cpp_expected(spec), i)

    out = _decode_entries([entry])
    assert _column(out, "batch_index") == list(range(len(messages)))
    _assert_decoded_rows(out, [_cpp_expected(m) for m in messages])


@pytest.mark.parametrize("compression", ["none", "lz4", "zlib", "zstd", "snappy"])
def test_cpp_produced_single_entries(cpp_producer, compression):
    messages = [*FIXED_MESSAGES[:3], FIXED_MESSAGES[5]]
    entries = cpp_producer(messages, compression=compression, batching=False)
    assert len(entries) == len(messages)
    for entry, spec in zip(entries, messages):
        parsed = pulsar_entries.parse_entry(entry)
        md = parsed["metadata"]
        assert "num_messages_in_batch" not in md  # non-batched: the payload is the message (§5.4)
        assert _codec_name(md.get("compression")) == compression.upper()
        value = _decompress(parsed["payload"], md.get("compression"), md.get("uncompressed_size", 0))
        assert value == (spec["value"] or b"")
        assert md.get("null_value", False) is (spec["value"] is None)
    _assert_decoded_rows(_decode_entries(entries), [_cpp_expected(m) for m in messages])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    messages=st.lists(_cpp_message, min_size=1, max_size=8),
    compression=st.sampled_from(["none", "lz4", "zlib", "zstd", "snappy"]),
)
def test_cpp_produced_random_batches(cpp_producer, messages, compression):
    entries = cpp_producer(messages, compression=compression, batching=True)
    assert len(entries) == 1
    out = _decode_entries(entries)
    assert _column(out, "batch_index") == list(range(len(messages)))
    _assert_decoded_rows(out, [_cpp_expected(m) for m in messages])
