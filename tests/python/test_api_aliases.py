"""The import paths that moved keep working for one release, with a DeprecationWarning."""

import importlib
import subprocess
import sys

import pytest

import pulsar_entries as pe

MOVED = {
    "pulsar_entries.compaction": {
        "compact": pe.compact,
        "Compactor": pe.Compactor,
        "MessagePosition": pe.MessagePosition,
    },
    "pulsar_entries.entries": {"entries_table": pe.entries_table},
    "pulsar_entries.table_view": {"TableView": pe.TableView},
    "pulsar_entries.sample": {},
    "pulsar_entries.report": {},
}


def fresh_import(name: str):
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match=name.replace(".", r"\.") + " is deprecated"):
        return importlib.import_module(name)


@pytest.mark.parametrize("name", sorted(MOVED))
def test_moved_modules_warn_and_give_the_same_objects(name):
    module = fresh_import(name)
    for attr, obj in MOVED[name].items():
        assert getattr(module, attr) is obj
    assert module.__all__ and all(hasattr(module, a) for a in module.__all__)


def test_sample_and_report_aliases():
    from pulsar_entries._sample import generate_topic
    from pulsar_entries.cli import _report

    assert fresh_import("pulsar_entries.sample").generate_topic is generate_topic
    assert fresh_import("pulsar_entries.report").render_text is _report.render_text


def test_spark_aliases():
    pytest.importorskip("pyspark")
    import pulsar_entries.spark as ps
    from pulsar_entries import _inputs

    datasource = fresh_import("pulsar_entries.datasource")
    assert datasource.PulsarEntriesDataSource is ps.PulsarEntriesDataSource
    assert datasource.list_inputs is _inputs.list_inputs and datasource.read_file is _inputs.read_file
    assert fresh_import("pulsar_entries.spark_strategic").compact_with_strategy is ps.compact_with_strategy


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
