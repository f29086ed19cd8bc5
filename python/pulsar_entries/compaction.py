"""Deprecated alias of ``pulsar_entries._compaction``: import from pulsar_entries.
This alias module goes away in the next release."""

import warnings

from ._compaction import (
    DEFAULT_MAX_UNCOMPRESSED_SIZE,
    Compactor,
    MessagePosition,
    compact,
    find_position_by_publish_time,
    from_ledger_records,
    last_message_position,
    to_ledger_records,
)

warnings.warn(
    "pulsar_entries.compaction is deprecated: import from pulsar_entries",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_SIZE",
    "Compactor",
    "MessagePosition",
    "compact",
    "find_position_by_publish_time",
    "from_ledger_records",
    "last_message_position",
    "to_ledger_records",
]
