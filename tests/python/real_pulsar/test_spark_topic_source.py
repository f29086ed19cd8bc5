"""``spark.read.format("pulsar")`` against a real Apache Pulsar 4.2.4: the topic read straight from the
bookies and tiered storage in one hop, row for row what Java Readers received (plain, compacted,
partitioned, offloaded + live, chunked across partition boundaries), pushed filters, and one clear
error on the driver for bad options."""

from __future__ import annotations

from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries._cluster import scan
from pulsar_entries._standalone import S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY
from pulsar_entries.spark import _topic, register

from .conftest import BUCKET, NS
from .real_pulsar_compare import assert_same_messages

pytestmark = [pytest.mark.real_pulsar, pytest.mark.spark]


def zk_url(rp: Any) -> str:
    return f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"


def rocksdb_url(rp: Any) -> str:
    return f"rocksdb:{rp.standalone.metadata_dir}"


def offload_path(rp: Any) -> str:
    return (
        f"s3://{S3_ACCESS_KEY}:{S3_SECRET_KEY}@{BUCKET}?endpoint_override=127.0.0.1:{rp.moto.port}"
        f"&scheme=http&region={S3_REGION}"
    )


def load(spark: Any, topic: str, url: str, **options: Any) -> Any:
    register(spark)
    reader = spark.read.format("pulsar").option("metadataUrl", url).option("topic", NS + topic)
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()


def rows(df: Any) -> list[dict[str, Any]]:
    table = df.toArrow()
    table = table.sort_by(
        [
            ("partition", "ascending"),
            ("ledger_id", "ascending"),
            ("entry_id", "ascending"),
            ("batch_index", "ascending"),
        ]
    )
    return table.to_pylist()


def delivered(got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a Reader is delivered: every row a message (no error), aborted transactions left out."""
    for r in got:
        assert r["error"] is None, r
    return [r for r in got if r["txn_status"] != "aborted" and not r["compacted_out"]]


def same_as_read_topic(got: list[dict[str, Any]], topic: str, url: str, **kw: Any) -> None:
    """The source's rows equal ``reassemble_chunks(decode(read_topic(...)))``, every column."""
    entries = pe.read_topic(NS + topic, metadata_url=url, **kw)
    expected = pe.reassemble_chunks(pe.decode(entries.drop_columns(["error"])))
    expected = expected.sort_by(
        [
            ("partition", "ascending"),
            ("ledger_id", "ascending"),
            ("entry_id", "ascending"),
            ("batch_index", "ascending"),
        ]
    )
    want = expected.to_pylist()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        a = dict(a, properties=dict(a["properties"] or []))
        b = dict(b, properties=dict(b["properties"] or []))
        assert a == b


@pytest.mark.parametrize("topic", ("java-mixed", "java-chunked", "java-partitioned-partition-1"))
@pytest.mark.parametrize("per_partition", (50_000, 3))
def test_format_pulsar_equals_the_java_reader(real_pulsar_zk: Any, spark: Any, topic: str, per_partition: int) -> None:
    rp = real_pulsar_zk
    df = load(spark, topic, zk_url(rp), entriesPerPartition=per_partition)
    if per_partition == 3:
        # Ranges of 3 entries: chunked messages straddle them.
        n = sum(led["entries"] for led in rp.truth[topic]["internal_stats"]["ledgers"])
        assert n > 6 and df.rdd.getNumPartitions() >= -(-n // 3)
    got = rows(df)
    assert_same_messages(rp.truth[topic]["messages"], delivered(got))
    same_as_read_topic(got, topic, zk_url(rp))


@pytest.mark.parametrize("per_partition", (1, 2, 5))
def test_chunked_messages_are_whole_across_partitions_rocksdb(real_pulsar: Any, spark: Any, per_partition: int) -> None:
    """``py-chunked`` (pulsar-client, chunks of 100 KiB-ish messages) with ranges of 1, 2 and 5 entries: every
    chunked message straddles ranges; the range of its first chunk reads ahead, the others drop its chunks."""
    rp = real_pulsar
    url = rocksdb_url(rp)
    got = rows(load(spark, "py-chunked", url, entriesPerPartition=per_partition))
    assert_same_messages(rp.truth["py-chunked"]["messages"], delivered(got))
    same_as_read_topic(got, "py-chunked", url)
    opts = _topic.TopicOptions.parse(
        {"metadataUrl": url, "topic": NS + "py-chunked", "entriesPerPartition": str(per_partition)}
    )
    ranges = [r for _, r in _topic.plan(opts, _topic.resolve_layouts(opts))]
    starts = [(r.segments[0].ledger.ledger_id, r.segments[0].first) for r in ranges]
    straddling = [
        r
        for r in got
        if r["status"] == "complete"
        and any(
            (r["first_chunk_ledger_id"], r["first_chunk_entry_id"]) < s <= (r["ledger_id"], r["entry_id"])
            for s in starts
        )
    ]
    assert len(straddling) >= 3, "chunked messages straddle range boundaries"


def test_partitioned_topic_and_the_partition_filter(real_pulsar_zk: Any, spark: Any) -> None:
    rp = real_pulsar_zk
    df = load(spark, "java-partitioned", zk_url(rp), entriesPerPartition=4)
    got = rows(df)
    total = df.rdd.getNumPartitions()
    assert {r["partition"] for r in got} == {0, 1, 2}
    for p in range(3):
        mine = [r for r in got if r["partition"] == p]
        assert_same_messages(rp.truth[f"java-partitioned-partition-{p}"]["messages"], delivered(mine))
    from pyspark.sql import functions as F

    def pushing() -> Any:
        # One DataFrame per query: Spark keeps a DataFrame's planned read (see the source's docstring).
        return load(spark, "java-partitioned", zk_url(rp), entriesPerPartition=4, pushFilters="true")

    # Pushed: only partition 2's ranges are planned and read.
    only = pushing().filter(F.col("partition") == 2)
    assert only.rdd.getNumPartitions() < total
    assert rows(only) == [r for r in got if r["partition"] == 2]
    two = pushing().filter(F.col("partition").isin(0, 2))
    assert rows(two) == [r for r in got if r["partition"] in (0, 2)]
    # Without pushFilters, the same filter is Spark's alone: every range is read.
    plain = df.filter(F.col("partition") == 2)
    assert plain.rdd.getNumPartitions() == total and rows(plain) == rows(only)


@pytest.mark.parametrize("topic", ("java-mixed", "java-partitioned-partition-0"))
def test_read_compacted_equals_the_compacted_reader(real_pulsar_zk: Any, spark: Any, topic: str) -> None:
    rp = real_pulsar_zk
    got = rows(load(spark, topic, zk_url(rp), readCompacted="true", entriesPerPartition=3))
    assert_same_messages(rp.truth[topic]["compacted_messages"], delivered(got))


def test_offloaded_ledgers_from_tiered_storage_live_ones_broken_give_an_error_row(
    real_pulsar_zk: Any, spark: Any
) -> None:
    """With ``offloadPath``, the offloaded ledgers are read from S3 (split along their blocks); with every bookie
    unreachable, the live ledger is one error row and the job still succeeds."""
    rp = real_pulsar_zk
    from pulsar_entries import _cluster

    store = _cluster.open_store(zk_url(rp))
    try:
        layout = _cluster.resolve_topic(NS + "java-mixed", store)
    finally:
        store.close()
    dead = ",".join(f"{b}=127.0.0.1:1" for b in layout.bookies)
    df = load(spark, "java-mixed", zk_url(rp), offloadPath=offload_path(rp), bookieAddresses=dead, timeout=3)
    got = rows(df)
    bad = [r for r in got if r["error"] is not None]
    assert len(bad) == 1 and "127.0.0.1:1" in bad[0]["error"], bad
    offloaded = set(rp.offloaded["java-mixed"])
    assert bad[0]["ledger_id"] not in offloaded
    assert_same_messages(rp.truth["java-mixed"]["messages"], delivered([r for r in got if r["error"] is None]))


def test_bad_options_and_unreachable_metadata_fail_on_the_driver(real_pulsar_zk: Any, spark: Any) -> None:
    register(spark)
    url = zk_url(real_pulsar_zk)

    def fails(match: str, **options: Any) -> None:
        reader = spark.read.format("pulsar")
        for k, v in options.items():
            reader = reader.option(k, v)
        with pytest.raises(Exception, match=match):
            reader.load()

    fails("give exactly one of the options topic", metadataUrl=url)
    fails("give one of the options metadataUrl", topic=NS + "java-mixed")
    fails("unknown option", metadataUrl=url, topic=NS + "java-mixed", entriesPerPartion="5")
    fails(
        "entriesPerPartition='x': expected an integer",
        metadataUrl=url,
        topic=NS + "java-mixed",
        entriesPerPartition="x",
    )
    fails("startingMessageId='nope'", metadataUrl=url, topic=NS + "java-mixed", startingMessageId="nope")
    fails("unknown topic persistent://public/default/no-such-topic", metadataUrl=url, topic=NS + "no-such-topic")
    fails("no ZooKeeper answered", metadataUrl="zk:127.0.0.1:1", topic=NS + "java-mixed", timeout="2")
    fails(
        "unknown topic persistent://public/default/java-partitioned-partition-7",
        metadataUrl=url,
        topic=NS + "java-partitioned-partition-7",
    )
    fails("utf8_errors", metadataUrl=url, topic=NS + "java-mixed", utf8Errors="bogus")


def test_starting_and_ending_message_ids(real_pulsar_zk: Any, spark: Any) -> None:
    rp = real_pulsar_zk
    stats = rp.truth["java-mixed"]["internal_stats"]
    first, second = stats["ledgers"][0]["ledgerId"], stats["ledgers"][1]["ledgerId"]
    got = rows(
        load(
            spark,
            "java-mixed",
            zk_url(rp),
            startingMessageId=f"{first}:3",
            endingMessageId=f"{second}:4",
            entriesPerPartition=2,
        )
    )
    ids = sorted({(r["ledger_id"], r["entry_id"]) for r in got})
    assert ids[0] == (first, 3) and ids[-1] == (second, 4)
    same_as_read_topic(got, "java-mixed", zk_url(rp), start_message_id=(first, 3), end_message_id=(second, 4))


OFFLOADED, LIVE = 1500, 500


@pytest.fixture(scope="module")
def seek_topic(real_pulsar_zk: Any) -> dict[str, Any]:
    """``spark-seek``: see :func:`make_seek_topic`."""
    return make_seek_topic(real_pulsar_zk, "spark-seek")


def make_seek_topic(rp: Any, name: str) -> dict[str, Any]:
    """Topic ``name`` (new; each module makes its own): 1,500 unbatched messages in a ledger offloaded to S3,
    then 500 in the live ledger; and what a pulsar-client Reader receives from it."""
    import pulsar

    from .conftest import _offload

    client = pulsar.Client(rp.standalone.service_url, operation_timeout_seconds=60)
    try:
        # A durable subscription that never acknowledges: the broker trims no ledger of the topic.
        client.subscribe(NS + name, "keep-everything").close()
        producer = client.create_producer(NS + name, batching_enabled=False, block_if_queue_full=True)
        for i in range(OFFLOADED):
            producer.send_async(
                f"m{i}".encode(), lambda res, mid: None, properties={"i": str(i)}, partition_key=f"k{i % 10}"
            )
        producer.flush()
        producer.close()
        offloaded = _offload(rp.standalone, (name,))[name]
        producer = client.create_producer(NS + name, batching_enabled=False, block_if_queue_full=True)
        for i in range(OFFLOADED, OFFLOADED + LIVE):
            producer.send_async(
                f"m{i}".encode(), lambda res, mid: None, properties={"i": str(i)}, partition_key=f"k{i % 10}"
            )
        producer.flush()
        producer.close()
        reader = client.create_reader(NS + name, pulsar.MessageId.earliest)
        truth = []
        while len(truth) < OFFLOADED + LIVE:
            try:
                m = reader.read_next(timeout_millis=10_000)
            except Exception as e:
                stats = rp.admin("GET", f"/persistent/public/default/{name}/internalStats")
                raise AssertionError(f"the Reader stalled after {len(truth)} messages ({e!r}): {stats}") from None
            mid = m.message_id()
            truth.append(
                {
                    "id": (mid.ledger_id(), mid.entry_id()),
                    "value": m.data(),
                    "key": m.partition_key(),
                    "properties": m.properties(),
                    "publish_time": m.publish_timestamp(),
                }
            )
        assert not reader.has_message_available()
        reader.close()
    finally:
        client.close()
    return {"topic": name, "offloaded": offloaded, "truth": truth}


def reader_view(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": (r["ledger_id"], r["entry_id"]),
        "value": r["value"],
        "key": r["key"],
        "properties": dict(r["properties"] or []),
        "publish_time": int(r["publish_time"].timestamp() * 1000),
    }


def test_offloaded_plus_live_ledgers_equal_a_reader(
    real_pulsar_zk: Any, spark: Any, seek_topic: dict[str, Any]
) -> None:
    rp = real_pulsar_zk
    topic = seek_topic["topic"]
    got = rows(load(spark, topic, zk_url(rp), offloadPath=offload_path(rp), entriesPerPartition=200))
    assert [reader_view(r) for r in delivered(got)] == seek_topic["truth"]
    ledgers = {r["ledger_id"] for r in got}
    assert set(seek_topic["offloaded"]) < ledgers, "offloaded and live ledgers"
    # The offloaded ledger is read from S3, in ranges that start on its blocks; the live one is cut in 200s.
    opts = _topic.TopicOptions.parse(
        {"metadataUrl": zk_url(rp), "topic": NS + topic, "offloadPath": offload_path(rp), "entriesPerPartition": "200"}
    )
    fs, prefix = opts.offload()
    ranges = [r for _, r in _topic.plan(opts, _topic.resolve_layouts(opts))]
    offloaded_segments = [s for r in ranges for s in r.segments if s.ledger.ledger_id in seek_topic["offloaded"]]
    assert offloaded_segments and all(scan.from_offload(s.ledger, fs) for s in offloaded_segments)
    for s in offloaded_segments:
        assert s.first in scan._block_starts(s.ledger, fs, prefix)
    # The live ledgers (10 entries each, the fixture's rollover) share ranges of 200 entries.
    live = [s for r in ranges for s in r.segments if s.ledger.ledger_id not in seek_topic["offloaded"]]
    assert sum(s.count or 0 for s in live) == LIVE
    assert all(r.entries is not None and r.entries <= 200 for r in ranges)
    assert len(ranges) == (OFFLOADED + LIVE) // 200


def test_publish_time_range_is_a_seek_reading_log_n_entries(
    real_pulsar_zk: Any, spark: Any, seek_topic: dict[str, Any]
) -> None:
    """``publish_time`` bounds become two binary searches on the driver: O(log n) entries read to find the range,
    then only the range is planned; Spark applies the filter again, and filters it cannot push stay correct."""
    import datetime as dt
    import math

    from pyspark.sql import functions as F
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThan

    rp = real_pulsar_zk
    topic = seek_topic["topic"]
    truth = seek_topic["truth"]
    n = len(truth)
    lo_ms, hi_ms = truth[1400]["publish_time"], truth[1700]["publish_time"]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    lo, hi = epoch + dt.timedelta(milliseconds=lo_ms), epoch + dt.timedelta(milliseconds=hi_ms)
    expected = [t for t in truth if lo_ms <= t["publish_time"] < hi_ms]
    assert 100 < len(expected) < n - 500, len(expected)

    # The entries the planner read: two binary searches, O(log n) each, and the range itself is all that is planned.
    opts = _topic.TopicOptions.parse({"metadataUrl": zk_url(rp), "topic": NS + topic, "offloadPath": offload_path(rp)})
    pushed = _topic.Pushed()
    for f in (GreaterThanOrEqual(("publish_time",), lo), LessThan(("publish_time",), hi)):
        assert not pushed.add(f)  # Spark applies it again
    counter = scan.ReadCounter()
    ranges = [r for _, r in _topic.plan(opts, _topic.resolve_layouts(opts), pushed, counter=counter)]
    assert 0 < counter.probes <= 2 * (math.ceil(math.log2(n)) + 1), counter
    planned = sum(r.entries or 0 for r in ranges)
    assert len(expected) <= planned <= len(expected) + 2, (planned, len(expected))

    def pushing() -> Any:
        return load(spark, topic, zk_url(rp), offloadPath=offload_path(rp), entriesPerPartition=100, pushFilters="true")

    total = pushing().rdd.getNumPartitions()
    window = pushing().filter((F.col("publish_time") >= F.lit(lo)) & (F.col("publish_time") < F.lit(hi)))
    assert [reader_view(r) for r in rows(window)] == expected
    # Fewer ranges than the whole topic: the seek narrowed the plan.
    assert window.rdd.getNumPartitions() < total
    # A filter the source does not take (on the key, and an OR) is still applied by Spark.
    window = pushing().filter((F.col("publish_time") >= F.lit(lo)) & (F.col("publish_time") < F.lit(hi)))
    mixed = window.filter((F.col("key") == "k3") | (F.col("value") == F.lit(b"m1500")))
    assert [reader_view(r) for r in rows(mixed)] == [t for t in expected if t["key"] == "k3" or t["value"] == b"m1500"]


@pytest.mark.parametrize("topic", ("py-mixed", "java-txn"))
def test_rocksdb_store_topics_equal_the_reader(real_pulsar: Any, spark: Any, topic: str) -> None:
    """The RocksDB metadata store of the standalone; ``py-mixed`` (five codecs, batched and not) and ``java-txn``
    (committed and aborted transactions: read as one range, so each abort marker is in the range of its messages)."""
    rp = real_pulsar
    per_partition = 7 if topic == "py-mixed" else 50_000
    got = rows(load(spark, topic, rocksdb_url(rp), entriesPerPartition=per_partition))
    assert_same_messages(rp.truth[topic]["messages"], delivered(got))
    same_as_read_topic(got, topic, rocksdb_url(rp))
