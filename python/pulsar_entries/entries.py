"""Deprecated alias of ``pulsar_entries._entries``: import from pulsar_entries.
This alias module goes away in the next release."""

import warnings

from ._entries import ENTRY_SCHEMA, entries_table

warnings.warn(
    "pulsar_entries.entries is deprecated: import from pulsar_entries",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "ENTRY_SCHEMA",
    "entries_table",
]
