"""pulsar-entries against a real Apache Pulsar 4.2.4: the ledgers the broker offloaded to (moto) S3,
read with ``pulsar_entries.offload``, decoded and reassembled, equal what Java Readers received.

Ground truth is Pulsar's Java client (``tests/real_pulsar`` ``Corpus truth``); see conftest.py.
"""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import offload

from .real_pulsar_compare import assert_same_messages, ours, topic_entries

pytestmark = pytest.mark.real_pulsar

ROCKSDB_TOPICS = (
    "py-mixed",
    "py-chunked",
    "java-mixed",
    "java-chunked",
    "java-txn",
    "java-partitioned-partition-0",
    "java-partitioned-partition-1",
    "java-partitioned-partition-2",
)
ZK_TOPICS = ("java-mixed", "java-chunked", "java-txn", "java-partitioned-partition-1")
#: Topics without transactions or chunks: every entry is dispatchable and whole.
PLAIN_COMPACTED = (
    "py-mixed",
    "java-mixed",
    "java-partitioned-partition-0",
    "java-partitioned-partition-1",
    "java-partitioned-partition-2",
)


# -------------------------------------------------------------------------------- the fixture


def test_broker_offloaded_every_closed_ledger(real_pulsar: Any) -> None:
    """The admin API's offload put every closed ledger in the bucket, and internal-stats says so."""
    objects = real_pulsar.offloaded_objects()
    for topic in ROCKSDB_TOPICS:
        truth = real_pulsar.truth[topic]
        ledgers = truth["internal_stats"]["ledgers"]
        offloaded = [ledger["ledgerId"] for ledger in ledgers if ledger["offloaded"]]
        assert offloaded == real_pulsar.offloaded[topic] and len(offloaded) == len(ledgers) - 1, (topic, ledgers)
        assert len(offloaded) >= (1 if topic.startswith("java-partitioned") else 2), (topic, ledgers)
        for ledger in ledgers[:-1]:
            obj = objects[ledger["ledgerId"]]
            index = offload.read_offload_index(obj.index_path, filesystem=real_pulsar.s3())
            (info,) = index["ledgers"]
            assert info["ledger_id"] == ledger["ledgerId"]
            assert info["last_entry_id"] + 1 == ledger["entries"], (topic, ledger, info)
        # Every message a Reader received lives in an offloaded ledger.
        assert {m["ledger_id"] for m in truth["messages"]} <= set(offloaded), topic


def test_offloaded_entries_are_the_broker_entries(real_pulsar: Any) -> None:
    """Entry counts per ledger equal internal-stats, and each entry carries PIP-70 metadata."""
    for topic in ROCKSDB_TOPICS:
        entries = topic_entries(real_pulsar, topic)
        stats = {
            ledger["ledgerId"]: ledger["entries"] for ledger in real_pulsar.truth[topic]["internal_stats"]["ledgers"]
        }
        counts = pc.value_counts(entries["ledger_id"]).to_pylist()
        assert {c["values"]: c["counts"] for c in counts} == {k: stats[k] for k in real_pulsar.offloaded[topic]}
        decoded = pe.decode(entries, keep_markers=True)
        assert decoded.filter(pc.is_valid(decoded["error"])).num_rows == 0
        assert decoded.filter(pc.is_null(decoded["broker_index"])).num_rows == 0, topic
        assert decoded.filter(pc.is_null(decoded["broker_timestamp"])).num_rows == 0, topic


@pytest.mark.parametrize("topic", ROCKSDB_TOPICS)
def test_messages_equal_java_reader(real_pulsar: Any, topic: str) -> None:
    """Every message (ids, key, value, properties, times) equals what the Java Reader received."""
    java = real_pulsar.truth[topic]["messages"]
    assert java and not any(m.get("stalled") for m in java)
    assert_same_messages(java, ours(real_pulsar, topic))


@pytest.mark.parametrize("topic", ZK_TOPICS)
def test_messages_equal_java_reader_zookeeper(real_pulsar_zk: Any, topic: str) -> None:
    java = real_pulsar_zk.truth[topic]["messages"]
    assert java
    assert_same_messages(java, ours(real_pulsar_zk, topic))


@pytest.mark.parametrize("topic", ROCKSDB_TOPICS)
def test_broker_index_equals_java_get_index(real_pulsar: Any, topic: str) -> None:
    """``offset`` is Message.getIndex() for whole messages; ``broker_index`` is the last chunk's for chunked ones."""
    java = real_pulsar.truth[topic]["messages"]
    mine = ours(real_pulsar, topic)
    assert len(mine) == len(java)
    for m, r in zip(java, mine):
        assert m["index"] is not None
        if r.get("first_chunk_ledger_id") is not None:
            assert r["broker_index"] == m["index"], (m, r["broker_index"])
        else:
            assert r["offset"] == m["index"], (m["repr"], r["offset"], m["index"])


def test_chunked_message_ids_equal_java(real_pulsar: Any) -> None:
    """Chunk message ids (first chunk; last chunk) as the Java Reader reported them, chunks across ledgers included."""
    for topic in ("java-chunked", "py-chunked"):
        java = [m for m in real_pulsar.truth[topic]["messages"] if "first_chunk" in m]
        assert len(java) >= 4, topic
        mine = [r for r in ours(real_pulsar, topic) if r.get("first_chunk_ledger_id") is not None]
        assert [r["status"] for r in mine] == ["complete"] * len(mine)
        got = [
            str(
                pe.ChunkMessageId(
                    pe.MessageId(r["first_chunk_ledger_id"], r["first_chunk_entry_id"]),
                    pe.MessageId(r["ledger_id"], r["entry_id"]),
                )
            )
            for r in mine
        ]
        assert got == [m["repr"] for m in java], topic
    # The Java producer was told the same chunk message ids when it sent them.
    sent = {m["repr"] for m in real_pulsar.produced["java-chunked"] if "first_chunk" in m}
    assert sent == {m["repr"] for m in real_pulsar.truth["java-chunked"]["messages"] if "first_chunk" in m}
    # The corpus really has a message whose chunks sit in two ledgers.
    assert any(
        m["first_chunk"]["ledger_id"] != m["ledger_id"]
        for t in ("java-chunked", "py-chunked")
        for m in real_pulsar.truth[t]["messages"]
        if "first_chunk" in m
    )


def test_transactions_corpus_has_aborted_messages(real_pulsar: Any) -> None:
    """decode marks the aborted transactions' messages, which the Reader never received."""
    decoded = pe.decode(topic_entries(real_pulsar, "java-txn"))
    statuses = pc.value_counts(decoded["txn_status"]).to_pylist()
    by = {s["values"]: s["counts"] for s in statuses}
    produced = real_pulsar.produced["java-txn"]
    expected = {
        "committed": sum(len(ids) for ids in produced["committed"]),
        "aborted": sum(len(ids) for ids in produced["aborted"]),
        None: len(produced["plain"]),
    }
    assert by == expected and expected["aborted"] == 18, by
    aborted_rows = decoded.filter(pc.equal(decoded["txn_status"], "aborted")).to_pylist()
    aborted = {(r["ledger_id"], r["entry_id"]) for r in aborted_rows}
    received = {(m["ledger_id"], m["entry_id"]) for m in real_pulsar.truth["java-txn"]["messages"]}
    assert not aborted & received


@pytest.mark.parametrize("topic", PLAIN_COMPACTED)
def test_compact_equals_read_compacted(real_pulsar: Any, topic: str) -> None:
    """Our ``compact`` of the topic gives the messages a ``readCompacted`` Reader received."""
    java = real_pulsar.truth[topic]["compacted_messages"]
    assert java and not any(m.get("stalled") for m in java)
    compacted = pe.compact(topic_entries(real_pulsar, topic))
    assert compacted.filter(pc.is_valid(compacted["error"])).num_rows == 0
    mine = pe.decode(compacted.drop_columns(["error"]))
    mine_rows = [r for r in mine.to_pylist() if not r["compacted_out"]]
    assert_same_messages(java, mine_rows)
    stats = real_pulsar.truth[topic]["internal_stats"]["compactedLedger"]
    assert compacted.num_rows == stats["entries"], (compacted.num_rows, stats)


@pytest.mark.parametrize("topic", (*PLAIN_COMPACTED, "java-txn"))
def test_last_message_position_equals_compacted_reader(real_pulsar: Any, topic: str) -> None:
    entries = topic_entries(real_pulsar, topic)
    pos = pe.last_message_position(pe.compact(entries), topic_entries=entries, read_compacted=True)
    (java,) = real_pulsar.truth[topic]["compacted_last_message_ids"]
    assert (pos.ledger_id, pos.entry_id, pos.batch_index) == (java["ledger_id"], java["entry_id"], java["batch_index"])


@pytest.mark.parametrize("topic", PLAIN_COMPACTED)
def test_seek_by_time_equals_broker(real_pulsar: Any, topic: str) -> None:
    """The entry ``find_position_by_time`` gives holds the first message the broker's seek delivered."""
    entries = topic_entries(real_pulsar, topic)
    seeks = real_pulsar.truth[topic]["seeks"]
    assert len(seeks) >= 4
    last = (entries["ledger_id"][-1].as_py(), entries["entry_id"][-1].as_py())
    for s in seeks:
        pos = pe.find_position_by_time(entries, s["timestamp"])
        if s["first"] is None:
            assert (pos.ledger_id, pos.entry_id) == (last[0], last[1] + 1), (s, pos)
        else:
            assert (pos.ledger_id, pos.entry_id) == (s["first"]["ledger_id"], s["first"]["entry_id"]), (s, pos)
            assert s["first"]["batch_index"] in (-1, 0), s
