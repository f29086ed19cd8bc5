"""A user's own local Spark session, in a script run by a venv's interpreter that is not first on PATH
(the venv not activated): its workers would start ``python3`` from PATH, a Python without
pulsar_entries. The package points them at the running interpreter; a choice the user made is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pulsar_entries._sample import generate_topic

pytestmark = pytest.mark.spark

SCRIPT = """
import sys
from pyspark.sql import SparkSession

before = sys.argv[2] == "before"
if before:  # the session first, then the package
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
import pulsar_entries.spark as ps
if not before:
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
entries = ps.read_entries(spark, sys.argv[1])
rows = ps.decode(entries).count()
batches = entries.select(ps.num_messages("data")).where("num_messages > 1").count()
print(rows, batches, spark.sparkContext.pythonExec == sys.executable)
spark.stop()
"""


def _bare_python_first_on_path(tmp_path: Path) -> dict[str, str]:
    bare = "/usr/bin/python3"
    check = subprocess.run([bare, "-c", "import pulsar_entries"], capture_output=True)
    assert check.returncode != 0, "this test needs a Python without pulsar_entries at /usr/bin/python3"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(bare)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("order", ["before", "after"])
def test_a_users_local_session_runs_this_interpreter_on_its_workers(tmp_path: Path, order: str) -> None:
    topic = generate_topic(60, seed=9)
    import pyarrow.parquet as pq

    pq.write_table(topic.entries, tmp_path / "entries.parquet")
    env = _bare_python_first_on_path(tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "entries.parquet"), order],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    import pulsar_entries as pe

    rows, batches, here = run.stdout.split()
    assert int(rows) == pe.decode(topic.entries).num_rows and here == "True"
    assert 0 < int(batches) < topic.entries.num_rows


def test_a_python_the_user_chose_is_kept(tmp_path: Path) -> None:
    """PYSPARK_PYTHON set by the user wins, even when it cannot run the package: the error is then the
    workers' own (the CLI turns it into one line with a hint, test_cli_outputs)."""
    pq_path = tmp_path / "entries.parquet"
    import pyarrow.parquet as pq

    pq.write_table(generate_topic(20, seed=9).entries, pq_path)
    env = {**_bare_python_first_on_path(tmp_path), "PYSPARK_PYTHON": "/usr/bin/python3"}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(pq_path), "after"], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode != 0 and "ModuleNotFoundError" in run.stderr
