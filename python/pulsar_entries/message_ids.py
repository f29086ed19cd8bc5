"""Deprecated alias of ``pulsar_entries._message_ids``: import from pulsar_entries.
This alias module goes away in the next release."""

import warnings

from ._message_ids import AnyMessageId, message_ids, seek

warnings.warn(
    "pulsar_entries.message_ids is deprecated: import from pulsar_entries",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "AnyMessageId",
    "message_ids",
    "seek",
]
