"""``read_topic`` against a real Apache Pulsar 4.2.4: the topic's layout from the metadata store
(ZooKeeper, and the RocksDB store of the standalone), its entries from the bookie over BookKeeper's
own protocol or from tiered storage, and what ``decode`` + ``reassemble_chunks`` make of them equals
what Java Readers received.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster, _native

from .conftest import BUCKET, NS
from .real_pulsar_compare import (
    assert_records_equal_broker,
    assert_same_messages,
    broker_compacted_ledger,
    delivered,
)

pytestmark = pytest.mark.real_pulsar

TOPICS = ("java-mixed", "java-chunked", "java-txn", "java-partitioned-partition-1")


def zk_url(rp: Any) -> str:
    return f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"


def rocksdb_url(rp: Any) -> str:
    return f"rocksdb:{rp.standalone.metadata_dir}"


@pytest.mark.parametrize("topic", TOPICS)
def test_read_topic_from_the_bookie_equals_java_reader_zookeeper(real_pulsar_zk: Any, topic: str) -> None:
    entries = pe.read_topic(NS + topic, metadata_url=zk_url(real_pulsar_zk))
    stats = real_pulsar_zk.truth[topic]["internal_stats"]
    # Every entry of every ledger, in topic order, and nothing past the last-add-confirmed.
    expected = [(led["ledgerId"], e) for led in stats["ledgers"] for e in range(led["entries"])]
    assert list(zip(entries["ledger_id"].to_pylist(), entries["entry_id"].to_pylist())) == expected
    assert_same_messages(real_pulsar_zk.truth[topic]["messages"], delivered(entries))


@pytest.mark.parametrize("topic", ("py-mixed", "py-chunked", "java-mixed", "java-txn"))
def test_read_topic_with_the_rocksdb_store(real_pulsar: Any, topic: str) -> None:
    entries = pe.read_topic(NS + topic, metadata_url=rocksdb_url(real_pulsar))
    assert_same_messages(real_pulsar.truth[topic]["messages"], delivered(entries))


def test_partitioned_topic_reads_every_partition_in_order(real_pulsar_zk: Any) -> None:
    entries = pe.read_topic(NS + "java-partitioned", metadata_url=zk_url(real_pulsar_zk))
    parts = entries["partition"].to_pylist()
    assert parts == sorted(parts) and set(parts) == {0, 1, 2}
    for p in range(3):
        mine = delivered(entries.filter(pc.equal(entries["partition"], p)))
        assert_same_messages(real_pulsar_zk.truth[f"java-partitioned-partition-{p}"]["messages"], mine)
    only = pe.read_topic(NS + "java-partitioned", metadata_url=zk_url(real_pulsar_zk), partitions=[2])
    assert set(only["partition"].to_pylist()) == {2}


def test_offloaded_ledgers_come_from_tiered_storage(real_pulsar_zk: Any) -> None:
    """With the offload filesystem, offloaded ledgers are read from S3 even with every bookie
    unreachable; the live ledger, which only the bookie holds, becomes one error row."""
    rp = real_pulsar_zk
    store = _cluster.open_store(zk_url(rp))
    try:
        layout = _cluster.resolve_topic(NS + "java-mixed", store)
    finally:
        store.close()
    (part,) = layout.partitions
    offloaded = [led.ledger_id for led in part.ledgers if led.offload is not None]
    assert offloaded == rp.offloaded["java-mixed"]
    assert {led.offload["driver"] for led in part.ledgers if led.offload} == {"S3"}
    dead = _native.BookieReader(
        {b: "127.0.0.1:1" for b in layout.bookies}, options=_native.BookieClientOptions(connect_timeout_ms=500)
    )
    tables = list(_cluster.iter_layout(layout, reader=dead, offload_filesystem=rp.s3(), offload_prefix=BUCKET))
    entries = pa.concat_tables(tables)
    from_s3 = entries.filter(pc.is_in(entries["ledger_id"], pa.array(offloaded, pa.int64())))
    assert_same_messages(rp.truth["java-mixed"]["messages"], delivered(from_s3))
    live = entries.filter(pc.invert(pc.is_in(entries["ledger_id"], pa.array(offloaded, pa.int64())))).to_pylist()
    assert len(live) == 1 and live[0]["data"] is None
    assert "too few bookies answered" in live[0]["error"] and "127.0.0.1:1" in live[0]["error"], live


def test_read_compacted_equals_the_compacted_reader(real_pulsar_zk: Any) -> None:
    """The compacted ledger (read from the bookie, CRC32 digests), then the topic after the horizon."""
    for topic in ("java-mixed", "java-partitioned-partition-0"):
        entries = pe.read_topic(NS + topic, metadata_url=zk_url(real_pulsar_zk), read_compacted=True)
        assert_same_messages(real_pulsar_zk.truth[topic]["compacted_messages"], delivered(entries))


def test_start_and_end_bound_the_read(real_pulsar_zk: Any) -> None:
    stats = real_pulsar_zk.truth["java-mixed"]["internal_stats"]
    first, second = stats["ledgers"][0]["ledgerId"], stats["ledgers"][1]["ledgerId"]
    entries = pe.read_topic(
        NS + "java-mixed", metadata_url=zk_url(real_pulsar_zk), start_message_id=(first, 3), end_message_id=(second, 4)
    )
    ids = list(zip(entries["ledger_id"].to_pylist(), entries["entry_id"].to_pylist()))
    assert ids[0] == (first, 3) and ids[-1] == (second, 4)
    assert len(ids) == stats["ledgers"][0]["entries"] - 3 + 5


def test_reading_a_live_topic_never_fences_the_producer(real_pulsar_zk: Any) -> None:
    """Reading the open ledger while a producer writes: the producer keeps succeeding, and the read
    stops at the last-add-confirmed."""
    import pulsar

    rp = real_pulsar_zk
    client = pulsar.Client(rp.standalone.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(NS + "live-tail", batching_enabled=False)
        sent = [producer.send(f"m{i}".encode()) for i in range(30)]
        for _ in range(3):
            entries = pe.read_topic(NS + "live-tail", metadata_url=zk_url(rp))
            assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
            # Never past what the producer had acknowledged.
            assert entries.num_rows <= len(sent)
            values = [r["value"] for r in pe.decode(entries.drop_columns(["error"])).to_pylist()]
            assert values == [f"m{i}".encode() for i in range(len(values))]
            sent += [producer.send(f"m{len(sent) + i}".encode()) for i in range(10)]
        assert len(sent) == 60, "the producer kept succeeding after every read"
        # With explicit LAC on (the fixture's broker config), the tail becomes visible.
        final = pe.read_topic(NS + "live-tail", metadata_url=zk_url(rp))
        assert final.num_rows >= 50
    finally:
        client.close()


def test_bad_inputs_give_one_line_errors(real_pulsar_zk: Any) -> None:
    url = zk_url(real_pulsar_zk)
    with pytest.raises(LookupError, match="unknown topic persistent://public/default/no-such-topic"):
        pe.read_topic(NS + "no-such-topic", metadata_url=url)
    with pytest.raises(ValueError, match="unsupported store 'etcd'"):
        pe.read_topic(NS + "java-mixed", metadata_url="etcd:http://127.0.0.1:1")
    with pytest.raises(ValueError, match="non-persistent"):
        pe.read_topic("non-persistent://public/default/x", metadata_url=url)
    with pytest.raises(OSError, match="no ZooKeeper answered"):
        pe.read_topic(NS + "java-mixed", metadata_url="zk:127.0.0.1:1", timeout=2)
    with pytest.raises(ValueError, match="has no partition"):
        pe.read_topic(NS + "java-partitioned", metadata_url=url, partitions=[7])


@pytest.mark.parametrize("topic", ("java-mixed", "java-partitioned-partition-1", "java-txn"))
def test_compact_equals_the_broker_compacted_ledger_record_by_record(real_pulsar_zk: Any, topic: str) -> None:
    """Our ``to_ledger_records(compact(...))`` of the topic read from the bookie equals the broker's compacted
    ledger (read from the bookie too): the same records with the same message ids, byte for byte where the codec's
    output is deterministic across implementations (NONE, ZLIB, SNAPPY), the same messages otherwise. On
    ``java-txn`` the aborted transactions' messages are left out, as the broker's compactor leaves them."""
    url = zk_url(real_pulsar_zk)
    entries = pe.read_topic(NS + topic, metadata_url=url).drop_columns(["error"])
    ours = pe.to_ledger_records(pe.compact(entries).drop_columns(["error"]))
    assert_records_equal_broker(ours, broker_compacted_ledger(url, NS + topic))
