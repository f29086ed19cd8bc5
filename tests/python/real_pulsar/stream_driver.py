"""A Spark driver that streams a topic to a Parquet sink: ``python stream_driver.py METADATA_URL TOPIC
OUT CHECKPOINT DONE_FLAG [OPTION=VALUE ...]``. It runs until killed, or, once ``DONE_FLAG`` exists,
until the stream has caught up (no backlog and no rows in two micro-batches in a row)."""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

from pyspark.sql import SparkSession

from pulsar_entries.spark import register


def main() -> int:
    url, topic, out, ckpt, done, *extra = sys.argv[1:]
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    reader = spark.readStream.format("pulsar").option("metadataUrl", url).option("topic", topic)
    for kv in extra:
        k, _, v = kv.partition("=")
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("checkpointLocation", ckpt)
        .trigger(processingTime="1 second")
        .start(out)
    )
    quiet = 0
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        time.sleep(1)
        if query.exception() is not None:
            print(f"query failed: {query.exception()}", file=sys.stderr)
            return 1
        p = query.lastProgress
        if not os.path.exists(done) or not p:
            continue
        latest = json.loads(p["sources"][0]["latestOffset"] or "{}")
        idle = p["numInputRows"] == 0 and all(v["backlogEntries"] == 0 for v in latest.values())
        quiet = quiet + 1 if idle else 0
        if quiet >= 3:
            query.stop()
            return 0
    print("the stream did not catch up in 400 s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
