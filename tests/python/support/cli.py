"""The ``pulsar-entries`` command line run in a subprocess, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

from pulsar_entries._standalone import S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY


def s3_env() -> dict[str, str]:
    """This environment with the loopback S3's credentials, as a user's CLI run gets them."""
    return dict(
        os.environ,
        AWS_ACCESS_KEY_ID=S3_ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=S3_SECRET_KEY,
        AWS_DEFAULT_REGION=S3_REGION,
    )


def run_cli(*args: str, engine: str = "local", ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m pulsar_entries --quiet --engine ENGINE ARGS`` (Spark on ``local[1]``), with the loopback
    S3's credentials in the environment; asserts that it succeeded, or failed when ``ok`` is false."""
    env = s3_env()
    extra = ["--master", "local[1]"] if engine == "spark" else []
    run = subprocess.run(
        [sys.executable, "-m", "pulsar_entries", "--quiet", "--engine", engine, *extra, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert (run.returncode == 0) == ok, run.stderr[-3000:]
    return run
