"""``spark.read.format("pulsar")`` against a real Apache Pulsar 4.2.4: the topic read straight from the
bookies and tiered storage in one hop, row for row what Java Readers received (plain, compacted,
partitioned, offloaded + live, chunked across partition boundaries), pushed filters, and one clear
error on the driver for bad options."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
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
        f"s3://{BUCKET}?endpoint_override=127.0.0.1:{rp.moto.port}&scheme=http"
        f"&access_key={S3_ACCESS_KEY}&secret_key={S3_SECRET_KEY}&region={S3_REGION}"
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
