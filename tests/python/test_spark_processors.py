"""A user Python payload processor running inside Spark (local[2]).

``pulsar_entries.spark.decode(df, processors=[...])`` ships the processors to the
executors (cloudpickle) and calls ``pulsar_entries.decode(batch, processors=...)``
per Arrow batch in ``mapInArrow``. The processor here is defined inside the test,
so it travels by value, exactly as a user's notebook-defined class would. The
result must equal an in-process decode of the same entries.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries import kafka
from pulsar_entries.processors import KAFKA, PULSAR, Processor

pytestmark = pytest.mark.spark


def csv_entry(lines, *, publish_time):
    return pe.encode_entry(
        [{"value": "\n".join(lines).encode()}],
        batch=False,
        compression="zstd",
        producer_name="csv-writer",
        publish_time=publish_time,
        properties={"entry.format": "csv"},
    )


def mixed_entries() -> pa.Table:
    """Pulsar batches, a KoP Kafka entry and `csv` entries (one the processor rejects), broker-stamped."""
    data = [
        pe.encode_entry([{"value": b"p0", "key": "a"}, {"value": b"p1", "key": "b"}], publish_time=1_000),
        csv_entry(["u1,hello", "u2,world"], publish_time=2_000),
        kafka.kop_entry(
            [
                kafka.record_batch(
                    [{"key": b"k", "value": b"kafka-0", "timestamp": 5}, {"key": None, "value": None, "timestamp": 6}],
                    compression="gzip",
                )
            ],
            publish_time=3_000,
        ),
        csv_entry(["u3,ok", "!boom"], publish_time=4_000),
        csv_entry(["u4,last"], publish_time=5_000),
        pe.encode_entry([{"value": b"p2"}], publish_time=6_000),
    ]
    table = pe.entries_table(data, ledger_id=42)
    return pe.stamp(table, timestamps=[1_001, 2_001, 3_001, 4_001, 5_001, 6_001])


def make_csv_processor():
    class CsvProcessor(Processor):
        """A made-up `key,value` line format; a line `!boom` is rejected."""

        name = "csv"
        entry_property = ("entry.format", "csv")

        def process(self, payload, context):
            out = []
            for i, line in enumerate(payload.decode().splitlines()):
                if line == "!boom":
                    raise ValueError(f"bad line {i}")
                key, value = line.split(",", 1)
                out.append(
                    {
                        "key": key,
                        "value": value.encode(),
                        "properties": {"line": str(i)},
                        "event_time": context.publish_time + i,
                    }
                )
            return out

    return CsvProcessor()


COLUMNS = ["ledger_id", "entry_id", "batch_index", "processor", "key", "value", "offset", "error"]


def normalized(rows):
    out = [tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in row) for row in rows]
    return sorted(out, key=lambda r: (r[0], r[1], -1 if r[2] is None else r[2]))


def test_user_python_processor_runs_in_spark_local(spark):
    from pulsar_entries.spark import decode as spark_decode

    table = mixed_entries()
    processors = [make_csv_processor(), KAFKA, PULSAR]
    expected = pe.decode(table, processors=processors).select(COLUMNS).to_pylist()
    df = spark.createDataFrame(table.to_pandas(), schema="ledger_id long, entry_id long, data binary").repartition(2)
    assert df.rdd.getNumPartitions() == 2
    result = spark_decode(df, processors=processors)
    got = [tuple(r) for r in result.select(*COLUMNS).collect()]
    assert normalized(got) == normalized([tuple(r[c] for c in COLUMNS) for r in expected])
    by_processor = {}
    for row in got:
        by_processor.setdefault(row[3], []).append(row)
    assert sorted(bytes(r[5]) for r in by_processor["csv"]) == [b"hello", b"last", b"world"]
    assert len(by_processor["kafka"]) == 2 and len(by_processor["pulsar"]) == 3
    errors = [r for r in got if r[7] is not None]
    assert [(r[1], r[7]) for r in errors] == [(3, "processor `csv` failed: ValueError: bad line 1")]


def test_default_processors_decode_kop_entries_in_spark(spark):
    from pulsar_entries.spark import decode as spark_decode

    table = mixed_entries()
    df = spark.createDataFrame(table.to_pandas(), schema="ledger_id long, entry_id long, data binary")
    got = [tuple(r) for r in spark_decode(df).select(*COLUMNS).collect()]
    expected = pe.decode(table).select(COLUMNS).to_pylist()
    assert normalized(got) == normalized([tuple(r[c] for c in COLUMNS) for r in expected])
    assert {r[3] for r in got} == {"kafka", "pulsar"}  # csv entries fall back to Pulsar's single message
