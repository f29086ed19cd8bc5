"""Table helpers shared by the tests: timestamps as integers, rows in Spark's
units, entry DataFrames spread over Spark partitions."""

from __future__ import annotations

import pyarrow as pa


def int_times(table: pa.Table) -> pa.Table:
    """The decode output with timestamp columns as int64 milliseconds."""
    cols = []
    for field, col in zip(table.schema, table.columns):
        cols.append(col.cast(pa.int64()) if pa.types.is_timestamp(field.type) else col)
    return pa.table(cols, names=table.column_names)


def spark_entries(spark, table: pa.Table, partitions: int = 3):
    """An entry DataFrame with the table's rows spread over ``partitions``."""
    return spark.createDataFrame(table.to_pandas()).repartition(partitions, "entry_id")


def spark_units(table: pa.Table) -> pa.Table:
    """The table with timestamps as int64 microseconds (Spark's unit) and regular var types."""
    cols = []
    for field, col in zip(table.schema, table.columns):
        if pa.types.is_timestamp(field.type):
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        elif pa.types.is_large_binary(field.type):
            col = col.cast(pa.binary())
        elif pa.types.is_large_string(field.type):
            col = col.cast(pa.string())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def sorted_rows(table: pa.Table, keys=("ledger_id", "entry_id", "batch_index")) -> list[dict]:
    """Rows in a canonical order, in Spark's units."""
    return spark_units(table).sort_by([(k, "ascending") for k in keys]).to_pylist()
