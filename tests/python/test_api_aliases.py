"""The import paths that moved are gone after their one release of warnings; the names stay where they moved."""

import importlib
import subprocess
import sys

import pytest

import pulsar_entries as pe

REMOVED = [
    "pulsar_entries.compaction",
    "pulsar_entries.datasource",
    "pulsar_entries.entries",
    "pulsar_entries.report",
    "pulsar_entries.sample",
    "pulsar_entries.spark_strategic",
    "pulsar_entries.table_view",
]


@pytest.mark.parametrize("name", REMOVED)
def test_the_deprecated_alias_modules_are_gone(name):
    """They warned for one release that they would go (see the README's API changes)."""
    sys.modules.pop(name, None)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)


def test_the_names_they_aliased_stay_where_they_moved():
    import pulsar_entries.spark as ps

    assert {"compact", "Compactor", "MessagePosition", "entries_table", "TableView"} <= set(pe.__all__)
    assert callable(ps.compact_with_strategy) and ps.PulsarEntriesDataSource.name() == "pulsar-entries"


def test_a_module_import_keeps_the_package_function_of_the_same_name():
    """``pulsar_entries.message_ids`` is a module and a function: importing the
    module must not replace the function (the module keeps its name for that)."""
    function = pe.message_ids
    importlib.import_module("pulsar_entries.message_ids")
    assert pe.message_ids is function and callable(pe.message_ids)


def test_importing_the_package_warns_nothing():
    code = "import warnings; warnings.simplefilter('error'); import pulsar_entries, pulsar_entries.cli"
    run = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
