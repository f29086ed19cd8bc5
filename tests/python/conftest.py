import collections

import pytest

import pulsar_entries as pe


def pytest_collection_modifyitems(items):
    """A test that asks for the Spark session must carry the ``spark`` marker,
    so that ``-m "not spark"`` never starts Spark."""
    unmarked = [i.nodeid for i in items if "spark" in i.fixturenames and i.get_closest_marker("spark") is None]
    if unmarked:
        raise pytest.UsageError(f"tests using the spark fixture lack @pytest.mark.spark: {unmarked}")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """With ``--durations`` (scripts/test gives it), the files the time went to as well: each test's setup, call
    and teardown summed by file (a module's fixture counts where it starts)."""
    if not config.getoption("durations", None):
        return
    per_file: collections.Counter[str] = collections.Counter()
    for reports in terminalreporter.stats.values():
        for r in reports:
            if isinstance(r, pytest.TestReport):
                per_file[r.nodeid.split("::")[0]] += r.duration
    terminalreporter.write_sep("=", "slowest 5 files")
    for path, seconds in per_file.most_common(5):
        terminalreporter.write_line(f"{seconds:8.2f}s {path}")


@pytest.fixture
def far_from_utc(monkeypatch):
    """The process's local time zone set to UTC+05:30, so that a naive datetime
    read as local time would be off by hours; restored afterwards."""
    import datetime as dt
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    naive = dt.datetime(2024, 5, 1, 12, 0)
    assert naive.timestamp() != naive.replace(tzinfo=dt.timezone.utc).timestamp(), "TZ did not take effect"
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def table_of():
    """Builds an entry table from entry bytes."""

    def build(data, **kw):
        return pe.entries_table(list(data), **kw)

    return build


@pytest.fixture(scope="session")
def spark():
    """One local[2] Spark session for the whole run, on this interpreter."""
    import os
    import sys

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pulsar-entries-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
