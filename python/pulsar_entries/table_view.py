"""Deprecated alias of ``pulsar_entries._table_view``: import from pulsar_entries.
This alias module goes away in the next release."""

import warnings

from ._table_view import Listener, TableView

warnings.warn(
    "pulsar_entries.table_view is deprecated: import from pulsar_entries",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "Listener",
    "TableView",
]
