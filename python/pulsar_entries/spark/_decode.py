"""Decoding entries on Spark, in ``mapInArrow``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from .. import _native
from .._carry import carried_columns, decode_carrying
from .._crypto import load_key_files as load_keys
from ._arrow import EMPTY_ENTRIES, conform, entry_frame, is_large, spark_schema


def message_schema() -> StructType:
    """Spark schema of :func:`decode`'s output."""
    return spark_schema(_native.decode(EMPTY_ENTRIES).schema)


def decode(
    df: DataFrame,
    *,
    verify_checksum: bool | None = None,
    keep_markers: bool | None = None,
    max_uncompressed_size: int | None = None,
    processors: Any = None,
    columns: Sequence[str] | None = None,
    utf8_errors: str | None = None,
    max_output_bytes: int | None = None,
    crypto_key_files: Mapping[str, str] | None = None,
) -> DataFrame:
    """Decodes a DataFrame of entries (``ledger_id``, ``entry_id``, ``data``,
    optional ``partition``) into one row per message, as :func:`pulsar_entries.decode`.

    The DataFrame's other columns are carried to each message row, after the
    message columns; where ``data`` is null, a non-null ``error`` column (a
    storage reader's diagnostic) becomes the row's ``error``.

    ``processors`` (PIP-96) are shipped to the executors with the function, so
    user processors written in Python must be picklable.

    ``columns`` keeps only those output columns, and the decoder builds only
    those (Spark cannot prune a ``mapInArrow`` output, and moving the rows
    back to the JVM costs in proportion to their bytes; keep ``error`` to see
    bad entries).

    ``utf8_errors`` and ``max_output_bytes`` are as in
    :func:`pulsar_entries.decode`; the budget applies to each slice of at most
    1,024 entries / 4 MiB a task decodes at once.

    ``crypto_key_files`` (key name, or ``"*"``, -> path of a PEM private key)
    decrypts end-to-end encrypted messages as :func:`pulsar_entries.decode`'s
    ``crypto_keys`` does. The keys are read and checked on the driver; only
    the paths go to the executors, which read the files themselves."""
    schema = message_schema()
    entries = entry_frame(df, carry=True)
    extras = carried_columns(entries.columns, schema.names)
    schema = StructType(schema.fields + [entries.schema[c] for c in extras])
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ValueError(f"unknown decode columns {unknown}; the columns are {schema.names}")
        schema = StructType([schema[c] for c in columns])
    names = list(columns) if columns is not None else None
    # Checked once on the driver, not in every task: building the options is the check.
    options = _native.DecodeOptions(
        verify_checksum=verify_checksum,
        keep_markers=keep_markers,
        max_uncompressed_size=max_uncompressed_size,
        utf8_errors=utf8_errors,
        max_output_bytes=max_output_bytes,
    )
    files = tuple(sorted((crypto_key_files or {}).items()))
    load_keys(files)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            large = is_large(batch)
            # Slices keep a task's memory flat: Spark hands over up to
            # maxRecordsPerBatch entries, whose messages can be many times that.
            for part in slices(batch):
                decoded = decode_carrying(
                    from_spark_entries(part),
                    names,
                    options=options,
                    processors=processors,
                    crypto_keys=load_keys(files),
                )
                if names is not None:
                    decoded = decoded.select(names)
                for out in decoded.to_batches():
                    yield conform(out, large)

    return entries.mapInArrow(run, schema)


SLICE_ENTRIES = 1024
SLICE_BYTES = 4 << 20


def slices(
    batch: pa.RecordBatch, max_rows: int = SLICE_ENTRIES, max_bytes: int = SLICE_BYTES
) -> Iterator[pa.RecordBatch]:
    """Zero-copy slices of an entry batch of at most ``max_rows`` entries and
    about ``max_bytes`` of entry data (at least one entry each)."""
    n = batch.num_rows
    if n <= max_rows and batch.column("data").nbytes <= max_bytes:
        yield batch
        return
    sizes = pc.fill_null(pc.binary_length(batch.column("data")), 0).cast(pa.int64())
    ends = pc.cumulative_sum(sizes).to_numpy()
    start = 0
    while start < n:
        base = ends[start - 1] if start else 0
        # The last row whose cumulative size stays within the budget, at least one row.
        stop = int(ends[start : min(n, start + max_rows)].searchsorted(base + max_bytes, side="right")) + start
        stop = max(stop, start + 1)
        yield batch.slice(start, stop - start)
        start = stop


def from_spark_entries(batch: pa.RecordBatch) -> pa.RecordBatch:
    """An entry batch as Spark hands it over; only ``error`` needs our type for the decoder's rows."""
    if "error" in batch.schema.names and pa.types.is_large_string(batch.schema.field("error").type):
        i = batch.schema.get_field_index("error")
        return batch.set_column(i, "error", batch.column(i).cast(pa.string()))
    return batch
