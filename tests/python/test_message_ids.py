"""MessageId / ChunkMessageId semantics, message-id columns, seek, and the PIP-107
scenario (seek to a chunked message and read it first) through our own stack.
Byte-level checks against Pulsar's clients are in the interop suites."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries import ChunkMessageId, MessageId

T0 = 1_700_000_000_000


def test_plain_batch_and_chunk_ids_serialize_like_java():
    # Java's toByteArray writes batch_size (0 when unknown) and partition only when >= 0.
    assert MessageId(10, 3).serialize().hex() == "080a10033000"
    assert MessageId(10, 3, partition=2).serialize().hex() == "080a100318023000"
    assert MessageId(10, 3, partition=-1, batch_index=1, batch_size=3).serialize().hex() == "080a100320013003"
    chunk = ChunkMessageId(MessageId(10, 2), MessageId(10, 5))
    assert chunk.serialize().hex() == "080a100530003a06080a10023000"  # spec §1.5
    assert str(chunk) == "10:2:-1;10:5:-1"
    assert str(MessageId(10, 3, partition=2, batch_index=1)) == "10:3:2:1"
    assert str(MessageId(10, 3)) == "10:3:-1"


def test_deserialize_precedence_and_errors():
    both = bytes.fromhex("080a10052002300a3a04080a1002")  # batch_index and a first chunk
    parsed = MessageId.deserialize(both)
    assert type(parsed) is MessageId and parsed.batch_index == 2 and parsed.batch_size == 10
    chunk = MessageId.deserialize(bytes.fromhex("080a10053a04080a1002"))
    assert isinstance(chunk, ChunkMessageId)
    assert (chunk.first.entry_id, chunk.last.entry_id, chunk.entry_id) == (2, 5, 5)
    assert type(MessageId.deserialize(bytes.fromhex("080a1003"))) is MessageId
    with pytest.raises(pe.EntryFormatError, match="missing required field `ledgerId`"):
        MessageId.deserialize(bytes.fromhex("1003"))
    with pytest.raises(pe.EntryFormatError, match="truncated"):
        MessageId.deserialize(b"\x08")
    with pytest.raises(ValueError, match="never batched"):
        ChunkMessageId(MessageId(1, 1, partition=-1, batch_index=0), MessageId(1, 2))


def test_equality_ordering_hashing_follow_the_last_chunk():
    chunk = ChunkMessageId(MessageId(7, 1, partition=0), MessageId(7, 4, partition=0))
    assert chunk == MessageId(7, 4, partition=0) and MessageId(7, 4, partition=0) == chunk
    assert hash(chunk) == hash(MessageId(7, 4, partition=0))  # consistent with ==, unlike Java's hashCode
    assert {chunk: "x"}[MessageId(7, 4, partition=0)] == "x"
    assert MessageId(7, 2, partition=0) < chunk < MessageId(7, 5, partition=0)
    assert MessageId(7, 4, partition=0, batch_index=0) > chunk  # batch index -1 sorts first, as in Java
    assert MessageId(7, 4, partition=0, batch_index=1, batch_size=5) == MessageId(
        7, 4, partition=0, batch_index=1, batch_size=9
    )  # batch_size is not compared
    assert sorted([MessageId(2, 0), chunk, MessageId(7, 3, partition=0)]) == [
        MessageId(2, 0),
        MessageId(7, 3, partition=0),
        chunk,
    ]
    assert (MessageId(1, 1) == "1:1:-1") is False
    assert pe.seek_position(chunk) == MessageId(7, 1, partition=0)
    assert pe.seek_position(MessageId(7, 4, partition=0, batch_index=3)) == MessageId(7, 4, partition=0, batch_index=3)


def test_ids_pickle_and_repr():
    chunk = ChunkMessageId(MessageId(1, 2, partition=3), MessageId(1, 9, partition=3))
    again = pickle.loads(pickle.dumps(chunk))
    assert isinstance(again, ChunkMessageId) and str(again) == str(chunk)
    plain = MessageId(1, 2, partition=3, batch_index=4, batch_size=5)
    assert repr(pickle.loads(pickle.dumps(plain))) == repr(plain)
    assert repr(plain) == "MessageId(ledger_id=1, entry_id=2, partition=3, batch_index=4, batch_size=5)"
    assert eval(repr(plain), {"MessageId": MessageId}) == plain


def _topic():
    """A chunked message (entries 0..2, interleaved with a batch at 1), then a single message."""
    chunks = pe.encode_chunked({"value": b"x" * 2_500}, chunk_size=1_000, producer_name="p", publish_time=T0)
    batch = pe.encode_entry([{"value": b"b0"}, {"value": b"b1"}], producer_name="q", publish_time=T0)
    after = pe.encode_entry([{"value": b"next"}], producer_name="q", publish_time=T0)
    return pe.entries_table([chunks[0], batch, chunks[1], chunks[2], after], ledger_id=5)


def test_message_id_columns_in_both_forms():
    entries = _topic()
    decoded = pe.decode(entries)
    assert pe.message_ids(decoded, "str").to_pylist() == [
        "5:0:-1",
        "5:1:-1:0",
        "5:1:-1:1",
        "5:2:-1",
        "5:3:-1",
        "5:4:-1",
    ]
    whole = pe.reassemble_chunks(decoded)
    with_ids = pe.with_message_ids(whole)
    assert with_ids["message_id_str"].to_pylist() == ["5:1:-1:0", "5:1:-1:1", "5:0:-1;5:3:-1", "5:4:-1"]
    parsed = [MessageId.deserialize(b) for b in pe.message_ids(whole).to_pylist()]
    assert isinstance(parsed[2], ChunkMessageId) and parsed[2].first == MessageId(5, 0)
    assert parsed[0].batch_size == 2  # batch members carry the batch size, as Java's consumer sets it
    with pytest.raises(ValueError, match="form must be"):
        pe.message_ids(whole, "hex")
    with pytest.raises(ValueError, match="already has a `message_id` column"):
        pe.with_message_ids(with_ids)


def test_pip_107_seek_to_a_chunked_message_reads_it_first():
    entries = _topic()
    whole = pe.reassemble_chunks(pe.decode(entries))
    chunk_id = MessageId.deserialize(pe.message_ids(whole)[2].as_py())
    assert str(chunk_id) == "5:0:-1;5:3:-1"

    def read_after_seek(message_id, inclusive=True):
        served = pe.seek(entries, message_id, inclusive=inclusive)
        messages = pe.reassemble_chunks(pe.decode(served))
        return [r for r in pe.with_message_ids(messages).to_pylist() if r["error"] is None]

    got = read_after_seek(chunk_id)
    # The batch inside the chunked message's span is served too, and delivered first,
    # as the broker serves it; the chunked message follows, whole, then the next one.
    assert [r["message_id_str"] for r in got] == ["5:1:-1:0", "5:1:-1:1", "5:0:-1;5:3:-1", "5:4:-1"]
    assert got[2]["value"] == b"x" * 2_500
    assert MessageId.deserialize(got[2]["message_id"]) == chunk_id
    # Without PIP-107, the seek lands on the last chunk: the message is lost and the
    # next one comes first.
    before_pip_107 = read_after_seek(MessageId(5, 3))
    assert [r["value"] for r in before_pip_107] == [b"next"]
    # Exclusive: everything after the chunked message.
    assert [r["value"] for r in read_after_seek(chunk_id, inclusive=False)] == [b"next"]


def test_seek_on_decoded_tables_honours_batch_indexes_and_partitions():
    decoded = pe.decode(_topic())
    inclusive = pe.seek(decoded, MessageId(5, 1, partition=-1, batch_index=1))
    assert pe.message_ids(inclusive, "str").to_pylist() == ["5:1:-1:1", "5:2:-1", "5:3:-1", "5:4:-1"]
    exclusive = pe.seek(decoded, MessageId(5, 1, partition=-1, batch_index=1), inclusive=False)
    assert pe.message_ids(exclusive, "str").to_pylist() == ["5:2:-1", "5:3:-1", "5:4:-1"]
    assert pe.seek(decoded, MessageId(5, 3), inclusive=False)["entry_id"].to_pylist() == [4]
    other = pe.decode(
        pe.entries_table([pe.encode_entry([{"value": b"p1"}], publish_time=T0)], ledger_id=5, partition=1)
    )
    two = pa.concat_tables([pe.decode(pe.entries_table(_topic()["data"].to_pylist(), ledger_id=5, partition=0)), other])
    assert pe.seek(two, MessageId(5, 0, partition=1))["value"].to_pylist() == [b"p1"]
    with pytest.raises(ValueError, match="seek first, then reassemble"):
        pe.seek(pe.reassemble_chunks(decoded), MessageId(5, 0))
    with pytest.raises(TypeError):
        pe.seek(decoded, "5:0:-1")
