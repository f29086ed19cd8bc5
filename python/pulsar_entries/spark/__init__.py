"""pulsar-entries on Spark.

Pipelines run the Rust core on Arrow record batches inside ``mapInArrow``, so
entries go from the JVM to the core and back without pandas in between.

The modules of this package, by concept: ``_decode`` (messages), ``_columns``
(column functions on raw entries), ``_compaction`` (PIP-215 / PIP-429 and the
compacted outputs, ``_strategic`` for strategies), ``_chunks`` (PIP-107),
``_seek`` (PIP-70), ``_datasource`` (``spark.read.format("pulsar-entries")``),
``_topic`` (``spark.read.format("pulsar")``, topics straight from storage);
``_arrow`` and ``_ranges`` are what they share.
"""

from __future__ import annotations

from ._arrow import ENTRY_COLUMNS, conform, from_spark, from_spark_schema, run_pass, spark_schema
from ._chunks import reassemble_chunks
from ._columns import entry_metadata, entry_timestamp, is_batch, last_batch_index, num_messages, verify_checksum
from ._compaction import compact, compacted_view, last_message_position, to_ledger_records
from ._datasource import PulsarEntriesDataSource, read_entries, register
from ._decode import SLICE_BYTES, SLICE_ENTRIES, decode, message_schema, slices
from ._export import DELTA_CONF, DELTA_PACKAGE, export_topic
from ._seek import find_position_by_time
from ._strategic import compact_with_strategy
from ._topic import PulsarTopicDataSource
from ._workers import use_this_python

use_this_python()  # a local session made before this import: its workers run this interpreter

__all__ = [
    "DELTA_CONF",
    "DELTA_PACKAGE",
    "ENTRY_COLUMNS",
    "SLICE_BYTES",
    "SLICE_ENTRIES",
    "PulsarEntriesDataSource",
    "PulsarTopicDataSource",
    "compact",
    "compact_with_strategy",
    "compacted_view",
    "conform",
    "decode",
    "entry_metadata",
    "entry_timestamp",
    "export_topic",
    "find_position_by_time",
    "from_spark",
    "from_spark_schema",
    "is_batch",
    "last_batch_index",
    "last_message_position",
    "message_schema",
    "num_messages",
    "read_entries",
    "reassemble_chunks",
    "register",
    "run_pass",
    "slices",
    "spark_schema",
    "to_ledger_records",
    "verify_checksum",
]
