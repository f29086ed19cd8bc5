"""Deprecated: the data source moved to :mod:`pulsar_entries.spark`
(``PulsarEntriesDataSource``, ``register``, ``read_entries``); input discovery
(``list_inputs``, ``read_file``) to the Spark-free :mod:`pulsar_entries._inputs`.
This alias module goes away in the next release."""

import warnings

from ._inputs import ARROW_IPC, ARROW_SCHEMA, PARQUET, list_inputs, read_file
from .spark._datasource import SCHEMA, PulsarEntriesDataSource, PulsarEntriesReader

warnings.warn(
    "pulsar_entries.datasource is deprecated: use pulsar_entries.spark.PulsarEntriesDataSource "
    "(or pulsar_entries.spark.register)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "ARROW_IPC",
    "ARROW_SCHEMA",
    "PARQUET",
    "SCHEMA",
    "PulsarEntriesDataSource",
    "PulsarEntriesReader",
    "list_inputs",
    "read_file",
]
