"""The Spark data source for stored entries: ``spark.read.format("pulsar-entries").load(path)``.

Reads what :mod:`pulsar_entries._inputs` finds: entry tables (Parquet or Arrow
IPC files) and tiered-storage offload objects, on any filesystem pyarrow knows.
One Spark partition per file or offload object; each yields Arrow record
batches of ``ledger_id``, ``entry_id``, ``data`` and ``error``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .._inputs import list_inputs, read_file

SCHEMA = "ledger_id long, entry_id long, data binary, error string"


class PulsarEntriesDataSource(DataSource):
    """``spark.read.format("pulsar-entries").load(path)``"""

    @classmethod
    def name(cls) -> str:
        return "pulsar-entries"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema) -> DataSourceReader:
        path = self.options.get("path")
        if not path:
            raise ValueError('pulsar-entries needs a path: spark.read.format("pulsar-entries").load(PATH)')
        return PulsarEntriesReader(path)


class PulsarEntriesReader(DataSourceReader):
    """One partition per file or offload object."""

    def __init__(self, path: str) -> None:
        self.path = path

    def partitions(self) -> list[InputPartition]:
        # One partition per file or offload object; its value is the list_inputs tuple.
        return [InputPartition(item) for item in list_inputs(self.path)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_file(*partition.value)


def register(spark: Any) -> None:
    """Registers ``spark.read.format("pulsar-entries")`` on a session."""
    spark.dataSource.register(PulsarEntriesDataSource)


def read_entries(spark: Any, path: str) -> DataFrame:
    """Entries under ``path`` (files or directories of Parquet / Arrow entry tables)."""
    register(spark)
    return spark.read.format("pulsar-entries").load(path)
