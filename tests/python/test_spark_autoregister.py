"""Spark 4 registers ``format("pulsar")`` and ``format("pulsar-entries")`` by
itself, from the wheel's top-level ``pyspark_pulsar*`` modules, in a session
that never called ``pulsar_entries.spark.register``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark


def test_the_hook_modules_name_our_sources() -> None:
    import pyspark_pulsar
    import pyspark_pulsar_entries

    from pulsar_entries.spark import PulsarEntriesDataSource, PulsarTopicDataSource

    assert pyspark_pulsar.DefaultSource is PulsarTopicDataSource
    assert pyspark_pulsar_entries.DefaultSource is PulsarEntriesDataSource
    assert (PulsarTopicDataSource.name(), PulsarEntriesDataSource.name()) == ("pulsar", "pulsar-entries")


def test_a_fresh_session_finds_both_formats_without_register(tmp_path) -> None:
    """A new Spark (its own JVM, nothing registered) resolves both names to our
    sources: the errors are our own option checks, not DATA_SOURCE_NOT_FOUND."""
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        for fmt, opts in (("pulsar", {"topic": "persistent://t/ns/a"}), ("pulsar-entries", {})):
            try:
                spark.read.format(fmt).options(**opts).load().schema
                print(fmt, "LOADED")
            except Exception as e:
                text = str(e)
                print(fmt, "NOT_FOUND" if "DATA_SOURCE_NOT_FOUND" in text or "Failed to find the data source" in text
                      else "ERROR " + " | ".join(l.strip() for l in text.splitlines() if "ValueError:" in l))
        spark.stop()
        """
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.startswith("pulsar"))
    assert lines["pulsar"].startswith("ERROR ValueError: pulsar: give one of the options metadataUrl"), run.stdout
    assert lines["pulsar-entries"].startswith("ERROR ValueError: pulsar-entries needs a path"), run.stdout
