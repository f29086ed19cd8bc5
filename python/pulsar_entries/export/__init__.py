"""A topic kept as a lakehouse table: Delta Lake (``deltalake``) or Iceberg (``pyiceberg``),
exactly once, straight from the cluster's storage.

``export_topic(topic, "delta:/lake/orders", metadata_url=...)`` reads what the table does not yet
hold and commits it; run it again (or with ``follow=True``) and it goes on from where the table
says it stopped. Each commit records, in the table itself, how far each topic partition has been
exported (Delta: the commit's metadata and an application transaction; Iceberg: the snapshot's
summary), so a run killed at any point resumes with no duplicate and no gap, and two exporters on
one table cannot both commit the same messages.

Modes:

* ``append``: every message a row;
* ``upsert``: the latest value per key, as the broker's compaction keeps it (per partition, the
  message at the highest position wins; a tombstone, an empty or null value, deletes the key;
  messages without a key are not kept), or as a PIP-215 ``strategy`` decides. Delta through ``MERGE``; Iceberg through a row-level
  delete and an append in one commit (copy-on-write).

Columns: the message's (``partition``, ``ledger_id``, ``entry_id``, ``batch_index``, ``key``,
``publish_time``, ``event_time``, ``producer_name``, ``sequence_id``, ``properties``), then the
topic's schema as typed columns (``read_topic(typed=True)``'s). When a new schema version adds a
field, the table gets the column. A topic without a schema keeps ``value`` as bytes.

Messages the schema cannot read go to a dead-letter table beside the main one
(``<table>_dead_letters``) with their bytes, position and error; so do status rows (a
transaction given up, data that retention deleted when ``fail_on_data_loss=False``). Transactions
are read-committed: a message is written once its transaction commits; aborted ones never are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._crypto import CryptoKeysLike
from ..auth import AdminTls, Authentication, BookieTls, ZooKeeperAccess
from ._run import DEAD_LETTER_SCHEMA, MESSAGE_COLUMNS, Exporter, ExportStats
from ._tables import ConcurrentExportError, ExportError, TableTarget

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "MESSAGE_COLUMNS",
    "ConcurrentExportError",
    "ExportError",
    "ExportStats",
    "Exporter",
    "TableTarget",
    "export_topic",
]


def export_topic(
    topic: str,
    table: str,
    *,
    metadata_url: str | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
    admin_auth: Authentication | None = None,
    admin_tls: AdminTls | None = None,
    metadata_access: ZooKeeperAccess | None = None,
    bookie_tls: BookieTls | None = None,
    mode: str = "append",
    follow: bool = False,
    poll_interval: float = 1.0,
    bookie_addresses: Mapping[str, str] | None = None,
    ledger_password: bytes = b"",
    offload_filesystem: Any = None,
    offload_prefix: str = "",
    timeout: float = 30.0,
    max_entries_per_commit: int = 100_000,
    max_bytes_per_commit: int = 32 << 20,
    transaction_timeout: float = 3 * 3600.0,
    on_entry_error: str = "stop",
    fail_on_data_loss: bool = True,
    storage_options: Mapping[str, str] | None = None,
    catalog_uri: str | None = None,
    warehouse: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    schema: Any = None,
    crypto_keys: CryptoKeysLike | None = None,
    strategy: Any = None,
    on_commit: Callable[[ExportStats], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ExportStats:
    """Exports ``topic`` into ``table`` (``delta:<path or URI>`` or
    ``iceberg:<catalog>.<namespace>.<table>``) and returns what it did.

    The topic is read as :func:`pulsar_entries.read_topic` reads it (``metadata_url`` or
    ``admin_url`` for the layout, the bookies and ``offload_filesystem`` for the entries), at most
    ``max_entries_per_commit`` new entries and about ``max_bytes_per_commit`` bytes of them per commit
    (what a commit holds in memory, so memory stays flat whatever the topic's size). Without ``follow`` it stops once the table
    holds everything readable; with it, it polls every ``poll_interval`` seconds until
    ``should_stop()`` is true (or Ctrl-C: the commit under way either lands whole or not at all).

    Delta tables take ``storage_options`` (delta-rs's, for object stores). Iceberg tables live in
    a SQL catalog on SQLite under ``warehouse`` (``./warehouse`` by default) unless
    ``catalog_uri`` names one (``http(s)://`` a REST catalog, ``sqlite:///``/``postgresql://`` a
    SQL catalog) or ``catalog_properties`` configure it as pyiceberg does.

    An entry that cannot be read stops the export before its round commits (nothing is lost; a
    later run retries), unless ``on_entry_error="dead-letter"``. Ledgers deleted by retention
    before they were exported stop it too, unless ``fail_on_data_loss=False``. A transaction
    undecided for longer than ``transaction_timeout`` seconds is given up (a dead-letter status
    row). ``crypto_keys`` decrypts end-to-end encrypted messages (see :func:`pulsar_entries.decode`);
    one that cannot be decrypted is an entry error. ``on_commit`` is called with each commit's counts.

    ``strategy`` (upsert mode only) is a PIP-215 compaction strategy (:mod:`pulsar_entries.strategies`:
    ``FirstWins()``, ``VersionedState(...)``, your own ``should_keep_left``/``merge``): each key's
    value in the table, then the new messages in position order, are folded as
    ``compact(strategy=...)`` folds them. The table then keeps each key's ``value`` bytes too (what
    the strategy sees next time); a table kept without a strategy cannot take one later.
    """
    exporter = Exporter(
        topic,
        table,
        mode=mode,
        metadata_url=metadata_url,
        admin_url=admin_url,
        admin_token=admin_token,
        admin_auth=admin_auth,
        admin_tls=admin_tls,
        metadata_access=metadata_access,
        bookie_tls=bookie_tls,
        bookie_addresses=bookie_addresses,
        ledger_password=ledger_password,
        offload_filesystem=offload_filesystem,
        offload_prefix=offload_prefix,
        timeout=timeout,
        max_entries_per_commit=max_entries_per_commit,
        max_bytes_per_commit=max_bytes_per_commit,
        transaction_timeout=transaction_timeout,
        on_entry_error=on_entry_error,
        fail_on_data_loss=fail_on_data_loss,
        storage_options=storage_options,
        catalog_uri=catalog_uri,
        warehouse=warehouse,
        catalog_properties=catalog_properties,
        schema=schema,
        crypto_keys=crypto_keys,
        strategy=strategy,
    )
    return exporter.run(follow=follow, poll_interval=poll_interval, on_commit=on_commit, should_stop=should_stop)
