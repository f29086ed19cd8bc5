"""Makes ``spark.read.format("pulsar-entries")`` work without ``pulsar_entries.spark.register(spark)``.

Spark 4 looks, at the first use of any Python data source in a session, for
top-level modules named ``pyspark_*`` that have a ``DefaultSource`` and registers
each under its ``name()``. This module is that hook for the entry-table source
(:class:`pulsar_entries.spark.PulsarEntriesDataSource`); ``pyspark_pulsar``
is the one for the topic source, ``format("pulsar")``.

Spark imports every such module in one worker and does not catch what they
raise, so a failure here would break every Python data source of the session:
an import error becomes a warning and no ``DefaultSource``.
"""

from __future__ import annotations

import warnings

try:
    from pulsar_entries.spark import PulsarEntriesDataSource as DefaultSource
except Exception as e:  # any failure: see the docstring
    warnings.warn(f"pulsar-entries: format('pulsar-entries') is not registered: {e}", stacklevel=1)
else:
    __all__ = ["DefaultSource"]
