"""Chunked messages and message ids against the official Pulsar C++ client (PyPI ``pulsar-client``).

* Message ids both ways: our serialized plain, batch and chunk ids parse in the C++ client to the same ledger,
  entry, partition, batch index and first/last chunk; the C++ client's serialized ids parse in ours to equal ids.
* The C++ producer with chunking enabled publishes to the loopback mock broker of ``test_interop_pulsar_client``
  (which advertises a small ``max_message_size``); we reassemble its chunk entries, and the reassembled row's id
  is the chunk id the producer returned.
* The C++ consumer reads chunk entries written by ``encode_chunked`` (every codec) and reassembles them itself.
* PIP-107 end to end: a topic holds a chunked message followed by another message. Seeking the C++ consumer to the
  chunked message's id and reading inclusively returns that message first; the seek command it sends names the
  first chunk, our ``seek_position``; ``seek`` + ``reassemble_chunks`` over the same entries agree. Seeking to the
  last chunk (the pre-PIP-107 id) loses the message, in the C++ client and in ours alike.

Facts about pulsar-client 3.13.0 relied on (checked against the mock broker): ``MessageId.serialize()`` writes no
``batch_size`` and no negative partition; ``str()`` prints ``(ledger,entry,partition,batch)`` and
``first;last`` for chunk ids; after a seek the consumer re-subscribes when the broker closes the connection (a real
broker disconnects consumers on a cursor reset); a reader's ``SUBSCRIBE`` carries ``start_message_id``.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import time

import pulsar  # a missing pulsar-client must fail the module, not skip it
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_entries as pe
from pulsar_entries import ChunkMessageId, MessageId

from support.mock_broker import CPP_COMPRESSION, MockBroker, pb_bytes, pb_fields, pb_int

pytestmark = pytest.mark.interop

CODECS = ["none", "lz4", "zlib", "zstd", "snappy"]
T0 = 1_700_000_000_000
_CPP_ID = re.compile(r"\((-?\d+),(-?\d+),(-?\d+),(-?\d+)\)")


def cpp_parts(cpp_id) -> list[tuple[int, int, int, int]]:
    """``(ledger, entry, partition, batch_index)`` of each half of a C++ id's text form."""
    return [tuple(map(int, m)) for m in _CPP_ID.findall(str(cpp_id))]


def as_cpp_text(mid: MessageId) -> str:
    def one(m):
        return f"({m.ledger_id},{m.entry_id},{m.partition},{m.batch_index})"

    return f"{one(mid.first)};{one(mid.last)}" if isinstance(mid, ChunkMessageId) else one(mid)


class _ConsumerBroker(MockBroker):
    """The producer mock plus just enough for one consumer or reader: SUBSCRIBE (honouring a reader's
    start_message_id), FLOW (serves ``served`` from the cursor), SEEK (recorded; resets the cursor, then drops the
    connection as a broker does), CLOSE_CONSUMER. Entries are served as MESSAGE commands carrying their
    (ledger, entry) id."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.served: list[tuple[int, int, bytes]] = []
        self.cursor = 0
        self.seeks: list[bytes] = []
        self.starts: list[bytes] = []
        self._consumer_id = 0

    def serve(self, ledger: int, entries: list[bytes]) -> None:
        self.served = [(ledger, i, e) for i, e in enumerate(entries)]
        self.cursor = 0
        self.seeks.clear()
        self.starts.clear()

    def _position(self, id_bytes: bytes) -> int:
        f = pb_fields(id_bytes)
        pos = (f[1][0], f[2][0])
        return next((i for i, (l, e, _) in enumerate(self.served) if (l, e) >= pos), len(self.served))

    def _handle(self, conn, typ, sub):
        if typ == 4:  # SUBSCRIBE -> SUCCESS
            self._consumer_id = sub[4][0]
            if 9 in sub:  # a reader's start position
                self.starts.append(bytes(sub[9][0]))
                self.cursor = self._position(sub[9][0])
            self._reply(conn, 13, pb_int(1, sub[5][0]))
        elif typ == 11:  # FLOW: serve everything from the cursor
            while self.cursor < len(self.served):
                ledger, entry, data = self.served[self.cursor]
                self.cursor += 1
                message = pb_int(1, self._consumer_id) + pb_bytes(2, pb_int(1, ledger) + pb_int(2, entry))
                cmd = pb_int(1, 9) + pb_bytes(9, message)
                conn.sendall(struct.pack(">II", 4 + len(cmd) + len(data), len(cmd)) + cmd + data)
        elif typ == 28:  # SEEK -> SUCCESS, reset the cursor, disconnect
            self.seeks.append(bytes(sub[3][0]))
            self.cursor = self._position(sub[3][0])
            self._reply(conn, 13, pb_int(1, sub[2][0]))
            time.sleep(0.05)  # let the client read the SUCCESS first
            conn.shutdown(socket.SHUT_RDWR)
        elif typ == 16:  # CLOSE_CONSUMER -> SUCCESS
            self._reply(conn, 13, pb_int(1, sub[2][0]))
        # ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES: nothing to do.


@pytest.fixture(scope="module")
def broker():
    b = _ConsumerBroker(max_message_size=10_000)
    client = pulsar.Client(b.url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    b.client = client
    yield b
    client.close()
    b.close()


_topics = iter(range(1_000_000))


def topic() -> str:
    return "persistent://public/default/chunks-%d" % next(_topics)


# --------------------------------------------------------------------------- message ids both ways

ids = st.builds(
    MessageId,
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    partition=st.integers(-1, 10_000),
    batch_index=st.integers(-1, 10_000),
    batch_size=st.one_of(st.none(), st.integers(0, 10_000)),
)
chunk_ids = st.builds(
    lambda l1, e1, l2, e2, p: ChunkMessageId(MessageId(l1, e1, partition=p), MessageId(l2, e2, partition=p)),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(-1, 10_000),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(ids, chunk_ids))
def test_our_ids_parse_in_the_cpp_client(mid):
    cpp = pulsar.MessageId.deserialize(mid.serialize())
    expected = [mid.first, mid.last] if isinstance(mid, ChunkMessageId) else [mid]
    assert cpp_parts(cpp) == [(m.ledger_id, m.entry_id, m.partition, m.batch_index) for m in expected]
    assert (cpp.ledger_id(), cpp.entry_id(), cpp.partition(), cpp.batch_index()) == (
        mid.ledger_id,
        mid.entry_id,
        mid.partition,
        mid.batch_index,
    )
    assert str(cpp) == as_cpp_text(mid)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1), st.integers(-1, 10_000), st.integers(-1, 10_000))
def test_cpp_ids_parse_in_ours(ledger, entry, partition, batch_index):
    cpp = pulsar.MessageId(partition, ledger, entry, batch_index)
    ours = MessageId.deserialize(cpp.serialize())
    assert type(ours) is MessageId
    assert ours == MessageId(ledger, entry, partition=partition, batch_index=batch_index)
    assert (ours.ledger_id, ours.entry_id, ours.partition, ours.batch_index) == (ledger, entry, partition, batch_index)


@settings(max_examples=200, deadline=None)
@given(chunk_ids)
def test_cpp_chunk_ids_parse_in_ours(mid):
    # The C++ client writes chunk ids without batch_size; ours must still read them.
    cpp_bytes = pulsar.MessageId.deserialize(mid.serialize()).serialize()
    assert 6 not in pb_fields(cpp_bytes)
    back = MessageId.deserialize(cpp_bytes)
    assert isinstance(back, ChunkMessageId)
    assert (back.first, back.last) == (mid.first, mid.last) and str(back) == str(mid)


# --------------------------------------------------------------------------- C++ producer -> us


@pytest.mark.parametrize("codec", CODECS)
def test_cpp_producer_chunks_reassemble_with_its_ids(broker, codec):
    producer = broker.client.create_producer(
        topic(),
        producer_name="cpp-chunker",
        batching_enabled=False,
        chunking_enabled=True,
        compression_type=CPP_COMPRESSION[codec],
    )
    big = os.urandom(47_000) + b"end"  # incompressible: chunked under every codec
    before = len(broker.entries)
    try:
        big_id = producer.send(big, partition_key="k")
        small_id = producer.send(b"after")
    finally:
        producer.close()
    entries = broker.entries[before:]
    assert len(entries) >= 6, "the C++ producer must have chunked the message"
    metas = [pe.parse_entry(e)["metadata"] for e in entries[:-1]]
    assert {m["uuid"] for m in metas} == {"cpp-chunker-0"}
    assert [m["chunk_id"] for m in metas] == list(range(len(metas)))
    # The C++ producer writes uncompressed_size only with a codec (Java always writes it).
    assert all(m.get("uncompressed_size", len(big) if codec == "none" else None) == len(big) for m in metas)
    # The mock broker numbers entries (1, n) from its first SEND.
    table = pe.entries_table(entries, ledger_id=1, entry_ids=range(before, before + len(entries)))
    out = pe.with_message_ids(pe.reassemble_chunks(pe.decode(table)))
    rows = out.to_pylist()
    assert [r["status"] for r in rows] == ["complete", None]
    assert rows[0]["value"] == big and rows[0]["key"] == "k" and rows[0]["error"] is None
    assert rows[1]["value"] == b"after"
    # Our ids are the producer's: the same text, and its bytes parse to an equal id.
    theirs = [MessageId.deserialize(big_id.serialize()), MessageId.deserialize(small_id.serialize())]
    assert isinstance(theirs[0], ChunkMessageId)
    assert [as_cpp_text(MessageId.deserialize(r["message_id"])) for r in rows] == [str(big_id), str(small_id)]
    assert [MessageId.deserialize(r["message_id"]) for r in rows] == theirs
    assert MessageId.deserialize(rows[0]["message_id"]).first == theirs[0].first


# --------------------------------------------------------------------------- us -> C++ consumer


def our_topic(codec: str, ledger: int = 5):
    value = os.urandom(25_000) + b"end"
    chunks = pe.encode_chunked(
        {"value": value, "key": "big"},
        chunk_size=7_000,
        compression=codec,
        producer_name="ours",
        sequence_id=3,
        publish_time=T0,
    )
    after = pe.encode_entry([{"value": b"next"}], producer_name="ours", sequence_id=4, publish_time=T0 + 1)
    assert len(chunks) == 4
    return value, [*chunks, after], ChunkMessageId(MessageId(ledger, 0), MessageId(ledger, 3))


@pytest.mark.parametrize("codec", CODECS)
def test_cpp_consumer_reassembles_our_chunks(broker, codec):
    value, entries, chunk_id = our_topic(codec)
    broker.serve(5, entries)
    consumer = broker.client.subscribe(topic(), "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    try:
        first = consumer.receive(timeout_millis=10_000)
        second = consumer.receive(timeout_millis=10_000)
    finally:
        consumer.close()
    assert first.data() == value and first.partition_key() == "big"
    assert str(first.message_id()) == as_cpp_text(chunk_id)
    assert second.data() == b"next" and str(second.message_id()) == "(5,4,-1,-1)"
    # The same ids from our own reading of the entries.
    ours = pe.message_ids(pe.reassemble_chunks(pe.decode(pe.entries_table(entries, ledger_id=5))), "str")
    assert ours.to_pylist() == [str(chunk_id), "5:4:-1"]


def _first_after_seek(broker, target, inclusive):
    consumer = broker.client.subscribe(
        topic(), "sub", consumer_type=pulsar.ConsumerType.Exclusive, start_message_id_inclusive=inclusive
    )
    try:
        for _ in range(2):
            consumer.receive(timeout_millis=10_000)
        consumer.seek(target)
        return consumer.receive(timeout_millis=10_000)
    finally:
        consumer.close()


def _ours_after_seek(entries, target, inclusive):
    served = pe.seek(pe.entries_table(entries, ledger_id=5), target, inclusive=inclusive)
    whole = pe.with_message_ids(pe.reassemble_chunks(pe.decode(served)))
    return [r for r in whole.to_pylist() if r["error"] is None]


def test_pip_107_seek_to_a_chunked_message_reads_it_first(broker):
    value, entries, chunk_id = our_topic("zstd")
    cpp_id = pulsar.MessageId.deserialize(chunk_id.serialize())
    broker.serve(5, entries)
    got = _first_after_seek(broker, cpp_id, inclusive=True)
    assert got.data() == value and str(got.message_id()) == as_cpp_text(chunk_id)
    # The seek command names the first chunk: our seek_position.
    [seek] = broker.seeks
    assert MessageId.deserialize(seek) == pe.seek_position(chunk_id) == MessageId(5, 0)
    ours = _ours_after_seek(entries, chunk_id, inclusive=True)
    assert ours[0]["value"] == value and ours[0]["message_id_str"] == str(chunk_id)
    # Exclusive: the next message, in both.
    broker.serve(5, entries)
    assert _first_after_seek(broker, cpp_id, inclusive=False).data() == b"next"
    assert _ours_after_seek(entries, chunk_id, inclusive=False)[0]["value"] == b"next"


def test_seeking_to_the_last_chunk_loses_the_message_as_before_pip_107(broker):
    _value, entries, _chunk_id = our_topic("lz4")
    broker.serve(5, entries)
    got = _first_after_seek(broker, pulsar.MessageId(-1, 5, 3, -1), inclusive=True)
    assert got.data() == b"next"  # the C++ client drops the uncached last chunk
    ours = _ours_after_seek(entries, MessageId(5, 3), inclusive=True)
    assert [r["value"] for r in ours] == [b"next"]
    whole = pe.reassemble_chunks(pe.decode(pe.seek(pe.entries_table(entries, ledger_id=5), MessageId(5, 3))))
    assert whole["status"].to_pylist() == ["incomplete", None]


@pytest.mark.parametrize("inclusive", [True, False])
def test_reader_started_at_a_chunk_id(broker, inclusive):
    value, entries, chunk_id = our_topic("snappy")
    broker.serve(5, entries)
    reader = broker.client.create_reader(
        topic(), pulsar.MessageId.deserialize(chunk_id.serialize()), start_message_id_inclusive=inclusive
    )
    try:
        got = reader.read_next(timeout_millis=10_000)
    finally:
        reader.close()
    # Inclusive: the reader starts at the first chunk (PIP-107); exclusive: after the last.
    [start] = broker.starts
    assert MessageId.deserialize(start) == (chunk_id.first if inclusive else chunk_id.last)
    assert got.data() == (value if inclusive else b"next")
    assert _ours_after_seek(entries, chunk_id, inclusive)[0]["value"] == got.data()
