"""Every code block of README.md after its quickstart runs as written, as a user would run it: each in a
fresh interpreter (a ``bash`` block in bash), from one directory holding the quickstart's ``sample-topic/``
(``pulsar-entries generate sample-topic --entries 2000``, the demo's own first step), with
``PULSAR_METADATA_URL`` naming a real Pulsar 4.2.4 standalone that holds ``persistent://public/default/orders``
(written by the demo's producer: AVRO, keyed by customer). The quickstart's two commands are the install and
this suite itself (the demo runs in test_cli_demo.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries.cli import main
from pulsar_entries.cli._real_pulsar import _produce

README = Path(__file__).resolve().parents[3] / "README.md"
ORDERS = "persistent://public/default/orders"
COUNT = 1_200
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(line, language, code) of each fenced block after the quickstart section."""
    start = text.index("\n## What it does")
    found = []
    for m in FENCE.finditer(text, start):
        found.append((text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)))
    return found


BLOCKS = blocks(README.read_text())


@pytest.fixture(scope="module")
def where(real_pulsar_zk: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The directory the examples run in, and their environment."""
    rp = real_pulsar_zk
    url = f"zk:127.0.0.1:{rp.standalone.zookeeper_port}"
    _produce(rp.standalone.service_url, ORDERS, COUNT)
    # The open ledger's last entries are readable once the bookie's last-add-confirmed covers them.
    deadline = time.monotonic() + 60
    while pe.read_topic(ORDERS, metadata_url=url).num_rows < COUNT // 100 and time.monotonic() < deadline:
        time.sleep(0.5)
    while pe.read_topic(ORDERS, metadata_url=url, typed=True).num_rows < COUNT:
        assert time.monotonic() < deadline, "the orders topic's last entries never became readable"
        time.sleep(0.5)
    cwd = tmp_path_factory.mktemp("readme")
    assert main(["generate", str(cwd / "sample-topic"), "--entries", "2000"]) == 0
    env = {
        **os.environ,
        "PULSAR_METADATA_URL": url,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return cwd, env


def test_the_readme_has_its_examples() -> None:
    languages = [lang for _, lang, _ in BLOCKS]
    assert languages.count("python") >= 7 and languages.count("bash") >= 1, languages


@pytest.mark.parametrize(("line", "language", "code"), BLOCKS, ids=[f"README.md:{b[0]}" for b in BLOCKS])
def test_readme_example_runs(where: tuple[Path, dict[str, str]], line: int, language: str, code: str) -> None:
    cwd, env = where
    assert language in ("python", "bash"), f"README.md:{line}: a {language} block the suite cannot run"
    command = [sys.executable, "-c", code] if language == "python" else ["bash", "-euo", "pipefail", "-c", code]
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"README.md:{line} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    out = run.stdout
    # What the examples print is what the topic holds.
    if "pe.read_topic(" in code:
        assert out.split()[0] == str(COUNT), out
    if "readStream" in code:
        assert out.split()[-1] == str(COUNT), out
    if "export_topic(" in code:
        assert out.startswith("ExportStats(commits=") and "entries=0," not in out, out
