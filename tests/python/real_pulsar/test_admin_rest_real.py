"""``read_topic`` with the layout from a real Pulsar 4.2.4 broker's admin REST API instead of the metadata
store: the same entries, plain and compacted, for a multi-ledger topic with offloaded ledgers, a
partitioned topic, transactions, chunks and a topic whose closed ledgers are still on the bookie. The
entries come from the bookie and tiered storage, never through the broker.
"""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster

from .conftest import BUCKET, NS
from .real_pulsar_compare import assert_same_messages, delivered

pytestmark = pytest.mark.real_pulsar


def zk_url(rp: Any) -> str:
    return f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"


def store_layout(rp: Any, topic: str) -> _cluster.TopicLayout:
    store = _cluster.open_store(zk_url(rp))
    try:
        return _cluster.resolve_topic(topic, store)
    finally:
        store.close()


def bookies(rp: Any) -> dict[str, str]:
    """Bookie id -> address, from the store: the REST API gives ids only (the fixture's id is not host:port)."""
    return store_layout(rp, NS + "java-mixed").bookies


@pytest.mark.parametrize("topic", ("java-mixed", "java-partitioned", "java-txn", "java-chunked"))
@pytest.mark.parametrize("read_compacted", (False, True))
def test_admin_rest_reads_what_the_metadata_store_reads(real_pulsar_zk: Any, topic: str, read_compacted: bool) -> None:
    rp = real_pulsar_zk
    common = dict(read_compacted=read_compacted, offload_filesystem=rp.s3(), offload_prefix=BUCKET)
    via_store = pe.read_topic(NS + topic, metadata_url=zk_url(rp), **common)
    via_rest = pe.read_topic(NS + topic, admin_url=rp.standalone.web_url, bookie_addresses=bookies(rp), **common)
    assert via_rest.filter(pc.is_valid(via_rest["error"])).num_rows == 0
    assert via_rest.num_rows > 0 and via_rest.equals(via_store)
    if topic != "java-partitioned":
        key = "compacted_messages" if read_compacted else "messages"
        if key in rp.truth[topic]:
            assert_same_messages(rp.truth[topic][key], delivered(via_rest))


def test_admin_rest_layout_equals_the_store_layout(real_pulsar_zk: Any) -> None:
    """Ledger by ledger: ids, entry counts, sizes and the BookKeeper metadata built from internal-stats' text
    equal what the store holds; offloaded ledgers carry their offload id (internal-info) and no metadata,
    which internal-stats does not give for them."""
    rp = real_pulsar_zk
    for topic in ("java-mixed", "java-partitioned-partition-0"):
        ours = _cluster.resolve_topic_admin(NS + topic, _cluster.AdminRest(rp.standalone.web_url))
        store = store_layout(rp, NS + topic)
        (a,), (b,) = ours.partitions, store.partitions
        assert [(x.ledger_id, x.entries, x.size) for x in a.ledgers] == [
            (x.ledger_id, x.entries, x.size) for x in b.ledgers
        ]
        offloaded = [x.ledger_id for x in a.ledgers if x.offload is not None]
        assert offloaded == rp.offloaded[topic] == [x.ledger_id for x in b.ledgers if x.offload is not None]
        for x, y in zip(a.ledgers, b.ledgers):
            if x.offload is not None:
                assert x.metadata is None
                assert _cluster.offloaded_uuid(x.offload) == _cluster.offloaded_uuid(y.offload)
            else:
                assert x.info == y.info and x.info["state"] == "OPEN"
        assert a.compacted is not None and b.compacted is not None
        assert a.compacted.ledger_id == b.compacted.ledger_id and a.compacted.info == b.compacted.info
        assert set(ours.bookies) == set(store.bookies)


def test_closed_ledgers_on_the_bookie_and_bad_input(real_pulsar_zk: Any) -> None:
    """A topic whose closed ledgers were never offloaded: every ledger's metadata comes from internal-stats and
    its entries from the bookie. Without the offload filesystem, an offloaded ledger is one error row. Then the
    one-line errors a real broker gives."""
    import pulsar

    rp = real_pulsar_zk
    client = pulsar.Client(rp.standalone.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(NS + "rest-multi", batching_enabled=False)
        for i in range(25):
            producer.send(f"r{i}".encode(), partition_key=f"k{i % 3}")
        producer.close()
    finally:
        client.close()
    # Unloaded: its last ledger closes, so every entry is below a closed ledger's end, not only the LAC.
    rp.admin("PUT", "/persistent/public/default/rest-multi/unload")
    rest = dict(admin_url=rp.standalone.web_url, bookie_addresses=bookies(rp))
    entries = pe.read_topic(NS + "rest-multi", **rest)
    assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    assert len(set(entries["ledger_id"].to_pylist())) >= 3  # several ledgers, closed ones included
    values = [r["value"] for r in pe.decode(entries.drop_columns(["error"])).to_pylist()]
    assert values == [f"r{i}".encode() for i in range(25)]
    assert entries.equals(pe.read_topic(NS + "rest-multi", metadata_url=zk_url(rp)))

    mixed = pe.read_topic(NS + "java-mixed", **rest)
    errors = mixed.filter(pc.is_valid(mixed["error"])).to_pylist()
    assert [e["ledger_id"] for e in errors] == rp.offloaded["java-mixed"]
    assert all("is offloaded" in e["error"] and "no offload_filesystem was given" in e["error"] for e in errors)

    with pytest.raises(LookupError, match=f"unknown topic {NS}no-such-topic: the broker at .* answered 404"):
        pe.read_topic(NS + "no-such-topic", **rest)
    with pytest.raises(ValueError, match=r"bookie ids \['.+'\] are not host:port"):
        pe.read_topic(NS + "java-mixed", admin_url=rp.standalone.web_url)
    # An http:// metadata_url is the admin REST API too.
    same = pe.read_topic(NS + "rest-multi", metadata_url=rp.standalone.web_url, bookie_addresses=bookies(rp))
    assert same.equals(entries)


@pytest.mark.parametrize(
    "topic", ("java-mixed", "java-partitioned-partition-0", "java-txn", "java-tombstoned", "java-encrypted")
)
def test_last_message_position_of_read_topic_equals_the_compacted_reader(real_pulsar_zk: Any, topic: str) -> None:
    """``last_message_position`` of the compacted view read with ``read_topic(read_compacted=True)`` equals the
    broker's GetLastMessageId for a compacted reader: batched topics, transactions, a topic where every key
    ends in a tombstone (an empty compacted ledger: the broker answers EARLIEST) and end-to-end encrypted
    messages ending in an encrypted batch.

    The Java client turns the broker's batch index into a plain message id (batch index -1) unless it is
    positive (``ConsumerImpl``: ``batchIndex > 0`` gives a ``BatchMessageIdImpl``), so 0 and -1 compare equal.
    """
    rp = real_pulsar_zk
    url = zk_url(rp)
    (part,) = store_layout(rp, NS + topic).partitions
    assert part.compacted is not None and part.horizon is not None
    common = dict(metadata_url=url, offload_filesystem=rp.s3(), offload_prefix=BUCKET)
    view = pe.read_topic(NS + topic, read_compacted=True, **common).drop_columns(["error"])
    plain = pe.read_topic(NS + topic, **common).drop_columns(["error"])
    h = part.horizon
    in_ledger = pc.or_(
        pc.less(view["ledger_id"], h[0]),
        pc.and_(pc.equal(view["ledger_id"], h[0]), pc.less_equal(view["entry_id"], h[1])),
    )
    compacted = view.filter(in_ledger)
    assert compacted.num_rows == rp.truth[topic]["internal_stats"]["compactedLedger"]["entries"]
    pos = pe.last_message_position(compacted, topic_entries=plain, read_compacted=True, horizon=h)
    (java,) = rp.truth[topic]["compacted_last_message_ids"]
    as_java = (pos.ledger_id, pos.entry_id, pos.batch_index if pos.batch_index > 0 else -1)
    assert as_java == (java["ledger_id"], java["entry_id"], java["batch_index"]), (pos, java)
    if topic == "java-tombstoned":
        assert compacted.num_rows == 0 and pos == pe.MessagePosition.EARLIEST
    if topic == "java-encrypted":
        # The topic ends in an encrypted batch: its last index, read from the metadata, not the payload.
        assert pos.batch_index > 0
