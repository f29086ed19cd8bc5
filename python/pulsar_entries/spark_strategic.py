"""Deprecated alias of ``pulsar_entries.spark``: import from pulsar_entries.spark.
This alias module goes away in the next release."""

import warnings

from .spark import compact_with_strategy

warnings.warn(
    "pulsar_entries.spark_strategic is deprecated: import from pulsar_entries.spark",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "compact_with_strategy",
]
