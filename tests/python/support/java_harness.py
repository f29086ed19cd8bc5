"""The Java interop harness (``tests/interop/java/run.sh``): Apache Pulsar's own
classes, driven with JSON on stdin and stdout. Its absence fails a test, never skips it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RUN_SH = REPO / "tests" / "interop" / "java" / "run.sh"
# A cold build downloads Pulsar's jars from Maven Central; allow for a slow network.
HARNESS_TIMEOUT_S = 900


def run_harness(command: str, stdin: str | None = None) -> list:
    """Run `run.sh <command>` (building the harness if needed) and return its JSON output."""
    missing = [tool for tool in ("java", "mvn", "bash") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"Java interop harness needs {', '.join(missing)} on PATH (Java 17+, Maven 3.8+)")
    try:
        proc = subprocess.run(
            ["bash", str(RUN_SH), command],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=HARNESS_TIMEOUT_S,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"run.sh {command} timed out after {exc.timeout}s")
    if proc.returncode != 0:
        pytest.fail(f"run.sh {command} failed with exit code {proc.returncode}:\n{proc.stderr[-5000:]}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"run.sh {command} printed invalid JSON ({exc}):\n{proc.stdout[:2000]}")
