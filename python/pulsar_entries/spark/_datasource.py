"""The Spark data source for stored entries: ``spark.read.format("pulsar-entries").load(path)``.

Reads what :mod:`pulsar_entries._inputs` finds: entry tables (Parquet or Arrow
IPC files) and tiered-storage offload objects, on any filesystem pyarrow knows.
One Spark partition per file or offload object; each yields Arrow record
batches of ``ledger_id``, ``entry_id``, ``data`` and ``error``, then
``partition`` and every other column the entry tables have (the schema is
read from the files' footers on the driver; a column some files lack is null
in their rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from .._inputs import inputs_schema, list_inputs, read_file
from ._arrow import conform, spark_schema

#: The columns every input has; ``partition`` and other entry-table columns follow them.
SCHEMA = "ledger_id long, entry_id long, data binary, error string"


def _path(options: Any) -> str:
    path = options.get("path")
    if not path:
        raise ValueError('pulsar-entries needs a path: spark.read.format("pulsar-entries").load(PATH)')
    return str(path)


class PulsarEntriesDataSource(DataSource):
    """``spark.read.format("pulsar-entries").load(path)``"""

    @classmethod
    def name(cls) -> str:
        return "pulsar-entries"

    def schema(self) -> StructType:
        return spark_schema(inputs_schema(list_inputs(_path(self.options))))

    def reader(self, schema: StructType) -> DataSourceReader:
        return PulsarEntriesReader(_path(self.options), to_arrow_schema(schema, timezone="UTC"))


class PulsarEntriesReader(DataSourceReader):
    """One partition per file or offload object."""

    def __init__(self, path: str, schema: pa.Schema | None = None) -> None:
        self.path = path
        self.arrow_schema = schema

    def partitions(self) -> list[InputPartition]:
        # One partition per file or offload object; its value is the list_inputs tuple.
        return [InputPartition(item) for item in list_inputs(self.path)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for batch in read_file(*partition.value, schema=self.arrow_schema):
            yield conform(batch, large=False)


def register(spark: Any) -> None:
    """Registers ``spark.read.format("pulsar-entries")`` (stored entries) and
    ``spark.read.format("pulsar")`` (topics, straight from the cluster's storage) on a
    session, and enables Python data source filter pushdown, which the topic source uses."""
    from ._topic import register as register_topics
    from ._workers import use_this_python

    use_this_python(spark)
    spark.dataSource.register(PulsarEntriesDataSource)
    register_topics(spark)


def read_entries(spark: Any, path: str) -> DataFrame:
    """Entries under ``path`` (files or directories of Parquet / Arrow entry tables)."""
    register(spark)
    return spark.read.format("pulsar-entries").load(path)
