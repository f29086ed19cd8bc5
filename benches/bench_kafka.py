"""KoP Kafka entries: pulsar_entries.decode vs kafka-python reading the same batches.

    . .venv/bin/activate && python benches/bench_kafka.py [--entries 1000] [--records 50] [--repeats 5]

Corpus (fixed seed), per Kafka codec: ``--entries`` KoP entries, each one Kafka
RecordBatch v2 built with kafka-python's own ``DefaultRecordBatchBuilder`` holding
``--records`` records (key, ~120-byte JSON value, one header), wrapped as KoP's
``kafka`` entry format stores them (``pulsar_entries.kafka.kop_entry``).

Timed in one run, median of ``--repeats`` after a warm-up:

* ours: ``pulsar_entries.decode(table)``: CRC-32C check, decompression and every
  record into Arrow columns;
* kafka-python: ``MemoryRecords(batch)`` per entry, ``validate_crc()``, then every
  record's offset, timestamp, key, value and headers (its pure-Python reader; the
  codecs are the same C libraries: zlib, python-snappy, lz4, zstandard).

Prints records/s and entries/s for both and the speed-up.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time

from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

import pulsar_entries as pe
from pulsar_entries import kafka

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build(codec: int, entries: int, records: int, rng: random.Random):
    batches, data = [], []
    for _ in range(entries):
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=codec,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        for i in range(records):
            value = (
                f'{{"seq":{i},"user":"user-{rng.randrange(100000)}","amount":{rng.uniform(0, 500):.2f},'
                f'"region":"eu-west-1","tags":["web","promo"]}}'
            ).encode()
            b.append(
                i,
                timestamp=1_700_000_000_000 + i,
                key=f"account-{rng.randrange(1000)}".encode(),
                value=value,
                headers=[("trace-id", rng.randbytes(8))],
            )
        batch = bytes(b.build())
        batches.append(batch)
        data.append(kafka.kop_entry([batch], publish_time=1_700_000_000_000))
    return batches, pe.entries_table(data)


def kafka_python_read(batches) -> int:
    n = 0
    for payload in batches:
        mr = MemoryRecords(payload)
        while (batch := mr.next_batch()) is not None:
            assert batch.validate_crc()
            for r in batch:
                _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
                n += 1
    return n


def timed(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--records", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, Python {platform.python_version()}"
    )
    print(
        f"corpus: {args.entries} KoP entries x {args.records} records per codec (kafka-python DefaultRecordBatchBuilder)"
    )
    print(f"{'codec':<8} {'ours rec/s':>12} {'ours entries/s':>15} {'kafka-python rec/s':>19} {'speed-up':>9}")
    rng = random.Random(7)
    for name, codec in CODECS.items():
        batches, table = build(codec, args.entries, args.records, rng)
        total = args.entries * args.records
        out = pe.decode(table)
        assert out.num_rows == total and out["error"].null_count == total
        assert kafka_python_read(batches) == total
        ours = timed(lambda: pe.decode(table), args.repeats)
        theirs = timed(lambda: kafka_python_read(batches), args.repeats)
        print(
            f"{name:<8} {total / ours:>12,.0f} {args.entries / ours:>15,.0f} {total / theirs:>19,.0f} "
            f"{theirs / ours:>8.1f}x"
        )


if __name__ == "__main__":
    main()
