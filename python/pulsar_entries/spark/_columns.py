"""Column functions: Arrow-vectorized pandas UDFs. Spark hands each one a
pandas Series of entry bytes per Arrow batch; the Rust core reads every
entry's metadata in one call. Each column comes out named after its function
(``num_messages``, not ``udf(data)``); ``.alias`` renames it as usual."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from .. import _native
from ._arrow import spark_arrow_schema, spark_schema
from ._workers import use_this_python


def _metadata_of(series: Any) -> pa.Table:
    return _native.entry_metadata(pa.array(series, type=pa.binary()))


def _column_udf(column: str, return_type: Any, doc: str):
    from pyspark.sql.functions import pandas_udf

    use_this_python()  # before Spark gets the function

    @pandas_udf(return_type)  # type: ignore[call-overload]
    def udf(data):  # pandas Series of bytes -> pandas Series
        col = _metadata_of(data).column(column)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz="UTC"))
        return col.to_pandas()

    udf.__doc__ = doc
    return udf


def _metadata_struct_schema() -> StructType:
    empty = _native.entry_metadata(pa.array([], pa.binary()))
    return spark_schema(empty.schema)


def entry_metadata(col: Any):
    """A struct of every MessageMetadata field of each entry (null when absent),
    plus broker entry metadata, checksum and ``error``."""
    from pyspark.sql.functions import pandas_udf

    use_this_python()  # before Spark gets the function

    schema = _metadata_struct_schema()

    @pandas_udf(schema)  # type: ignore[call-overload]
    def udf(data):
        table = _metadata_of(data)
        target = spark_arrow_schema(table.schema, large=False)
        return table.cast(target).to_pandas(maps_as_pydicts="lossy")

    return udf(col).alias("entry_metadata")


def entry_timestamp(col: Any):
    """The broker timestamp of each entry, else its publish time."""
    from pyspark.sql.types import TimestampType

    return _column_udf("entry_timestamp", TimestampType(), entry_timestamp.__doc__ or "")(col).alias("entry_timestamp")


def is_batch(col: Any):
    """Whether each entry uses batch framing (``num_messages_in_batch`` present)."""
    from pyspark.sql.types import BooleanType

    return _column_udf("is_batch", BooleanType(), is_batch.__doc__ or "")(col).alias("is_batch")


def num_messages(col: Any):
    """Messages in each entry: ``num_messages_in_batch``, else 1."""
    from pyspark.sql.types import IntegerType

    return _column_udf("num_messages", IntegerType(), num_messages.__doc__ or "")(col).alias("num_messages")


def verify_checksum(col: Any):
    """True when the stored CRC32C matches, False when not, null without a checksum."""
    from pyspark.sql.types import BooleanType

    return _column_udf("checksum_valid", BooleanType(), verify_checksum.__doc__ or "")(col).alias("verify_checksum")


def last_batch_index(col: Any):
    """The last message's batch index of each compacted entry, by PIP-429's
    rules: the last of ``compacted_batch_indexes`` without touching the payload,
    ``num_messages_in_batch − 1`` for an encrypted batch, else a scan of the
    decompressed records for the last one not compacted out; −1 for a
    non-batched entry. Null when it cannot be found (unreadable entry, every
    slot compacted out); :func:`pulsar_entries.last_message_position` gives the
    reason."""
    from pyspark.sql.functions import pandas_udf

    use_this_python()  # before Spark gets the function
    from pyspark.sql.types import IntegerType

    @pandas_udf(IntegerType())  # type: ignore[call-overload]
    def udf(data):
        import pandas as pd

        from pulsar_entries import _native as native

        col = native.last_batch_indexes(pa.array(data, type=pa.binary())).column("last_batch_index")
        return col.to_pandas(types_mapper={pa.int32(): pd.Int32Dtype()}.get)

    return udf(col).alias("last_batch_index")
