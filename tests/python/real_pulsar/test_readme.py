"""Every ``python`` and ``bash`` block of README.md (after its quickstart) and of the docs pages runs as
written, as a user would run it: each in a fresh interpreter (a ``bash`` block in bash), from one directory
holding the quickstart's ``sample-topic/`` (``pulsar-entries generate sample-topic --entries 2000``, the demo's own
first step), with ``PULSAR_METADATA_URL`` naming a real Pulsar 4.2.4 standalone that holds
``persistent://public/default/orders`` (written by the demo's producer: AVRO, keyed by customer).

Not run here, each for the reason :data:`NOT_RUN` gives: the quickstart's two commands (the install, and this
suite itself; the demo runs in test_cli_demo.py), and the spark-submit recipe. The pages whose blocks need what
this standalone does not have run beside the fixture they name, in the tests :data:`ELSEWHERE` names.
``text`` blocks are synopses and trees, not code."""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries.cli import main
from pulsar_entries.cli._real_pulsar import _produce

from support.delta_jars import delta_jars
from support.docblocks import README, ROOT, blocks, run_block

ORDERS = "persistent://public/default/orders"
COUNT = 1_200
#: Blocks not run anywhere (by a phrase of the block), and why.
NOT_RUN = {
    "spark-submit": "packs a virtual environment and submits a job to a Spark cluster",
}
#: Pages whose blocks run in another module, beside the fixture they need: (module, test).
ELSEWHERE = {
    "docs/security.md": ("test_secured_admin_real", "test_the_security_page_runs_against_the_secured_standalone"),
    "docs/encryption.md": ("test_encrypted_real", "test_the_encryption_page_runs_against_the_encrypted_topic"),
}


def why_not_run(where: str, code: str) -> str | None:
    for page, (module, test) in ELSEWHERE.items():
        if where.startswith(page + ":"):
            return f"runs in {module}.py::{test}"
    for key, why in NOT_RUN.items():
        if key in code:
            return why
    return None


ALL = [b for path in [README, *sorted((ROOT / "docs").glob("*.md"))] for b in blocks(path)]
BLOCKS = [b for b in ALL if b[1] != "text" and why_not_run(b[0], b[2]) is None]


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
        "PULSAR_ADMIN_URL": rp.standalone.web_url,
        # docs/tables.md's Spark export: Delta's jars as Maven resolved them (Spark's own resolution fails
        # here on a local Maven cache holding a pom without its jar).
        "DELTA_JARS": ",".join(delta_jars()),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return cwd, env


def test_every_block_runs_or_says_why_not() -> None:
    """The README's examples are here, and every block left out is one of :data:`NOT_RUN`'s (so a new page or a
    new block cannot be left out unnoticed)."""
    readme = [lang for where, lang, _ in BLOCKS if where.startswith("README.md")]
    assert readme.count("python") >= 7 and readme.count("bash") >= 1, readme
    left = [
        (where, why_not_run(where, code))
        for where, lang, code in ALL
        if lang != "text" and (where, lang, code) not in BLOCKS
    ]
    assert all(why for _, why in left) and len(left) == 4, left
    # The tests that run the other pages' blocks exist.
    for module, test in ELSEWHERE.values():
        assert callable(getattr(importlib.import_module(f"{__package__}.{module}"), test)), (module, test)


@pytest.mark.parametrize(("line", "language", "code"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_readme_example_runs(where: tuple[Path, dict[str, str]], line: str, language: str, code: str) -> None:
    cwd, env = where
    out, _ = run_block(line, language, code, cwd, env)
    if not line.startswith("README.md"):
        return
    # What the README's examples print is what the topic holds.
    if "pe.read_topic(" in code:
        assert out.split()[0] == str(COUNT), out
    if "readStream" in code:
        assert out.split()[-1] == str(COUNT), out
    if "export_topic(" in code:
        assert out.startswith("ExportStats(commits=") and "entries=0," not in out, out
