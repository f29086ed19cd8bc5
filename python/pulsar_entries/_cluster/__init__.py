"""Reading a topic straight from a cluster's storage: the metadata store for the
layout, the bookies (or tiered storage) for the entries, no broker in the path.

Store addresses follow Pulsar's conventions:

* ``zk:host:2181[,host2:2181][/chroot]`` - ZooKeeper (kazoo, read only);
* ``rocksdb:/path/to/data/metadata`` - the RocksDB store of a *stopped*
  standalone (rocksdict, opened read only);
* ``http://broker:8080`` / ``https://...`` - the broker's admin REST API, for
  the layout only (:class:`AdminRest`): the entries still come from the
  bookies or tiered storage, never through the broker.

Nothing here writes to the store, fences a ledger, or reads past the
last-add-confirmed of an open ledger: the bookie reads are
:class:`pulsar_entries._native.BookieReader`'s, which never send a fencing
flag or a master key.

The package's modules: ``stores`` (the metadata stores), ``layout`` (a topic's
layout from the store), ``admin`` (the layout from the admin REST API), ``files``
(a bookie's files as a ledger source), ``read`` (reading the entries) and
``schemas`` (a topic's schema versions from the registry or the REST API).
"""

from __future__ import annotations

# The names used elsewhere (the CLI, the tests and the benches import them from here).
from .admin import AdminRest as AdminRest
from .admin import is_admin_url as is_admin_url
from .admin import resolve_topic_admin as resolve_topic_admin
from .files import BookieFiles as BookieFiles
from .layout import COMPACTION_CURSOR as COMPACTION_CURSOR
from .layout import Ledger as Ledger
from .layout import Partition as Partition
from .layout import TopicLayout as TopicLayout
from .layout import resolve_topic as resolve_topic
from .read import ENTRY_SCHEMA as ENTRY_SCHEMA
from .read import NO_METADATA as NO_METADATA
from .read import iter_layout as iter_layout
from .read import iter_topic as iter_topic
from .read import offloaded_uuid as offloaded_uuid
from .read import read_layout as read_layout
from .read import read_ledger as read_ledger
from .read import read_topic as read_topic
from .read import topic_layout as topic_layout
from .stores import MetadataStore as MetadataStore
from .stores import RocksDBStore as RocksDBStore
from .stores import ZooKeeperStore as ZooKeeperStore
from .stores import open_store as open_store
