"""The exception hierarchy every function of the package raises from.

Every kind of core error (input schema, options, order, data, I/O) has one class under
``PulsarEntriesError``, and each also subclasses the matching built-in, so
``except ValueError`` / ``except OSError`` keep working::

    PulsarEntriesError(Exception)
    ├── InputSchemaError(PulsarEntriesError, ValueError)
    ├── OptionsError(PulsarEntriesError, ValueError)
    ├── OrderError(PulsarEntriesError, ValueError)
    ├── DataError(PulsarEntriesError, ValueError)
    │   ├── EntryFormatError   (stored entries, message ids)
    │   └── OffloadFormatError (tiered-storage objects)
    └── StorageError(PulsarEntriesError, OSError)

The extension (``rust/python/src/errors.rs``) maps each core error kind to one of these
classes and exports them from ``pulsar_entries._native`` too. Their ``__module__`` is
``pulsar_entries``, which exports them, so they pickle under that name (Spark ships them
from executors).
"""

from __future__ import annotations


class PulsarEntriesError(Exception):
    """Any error pulsar-entries raises."""


class InputSchemaError(PulsarEntriesError, ValueError):
    """The input table lacks a column, or a column or argument has the wrong shape."""


class OptionsError(PulsarEntriesError, ValueError):
    """An option's value is out of range or contradicts another option."""


class OrderError(PulsarEntriesError, ValueError):
    """Input rows are not in the order the operation needs."""


class DataError(PulsarEntriesError, ValueError):
    """Stored bytes are malformed: framing, checksum, protobuf, codec, batch."""


class EntryFormatError(DataError):
    """An entry's bytes are not a valid Pulsar stored entry."""


class OffloadFormatError(DataError):
    """An offload object's bytes are not a valid Pulsar tiered-storage object."""


class StorageError(PulsarEntriesError, OSError):
    """Reading or writing storage failed: a file, an object, a connection."""


for _class in (
    PulsarEntriesError,
    InputSchemaError,
    OptionsError,
    OrderError,
    DataError,
    EntryFormatError,
    OffloadFormatError,
    StorageError,
):
    _class.__module__ = "pulsar_entries"
