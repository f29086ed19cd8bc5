"""The fenced code blocks of the README and the docs pages, and how the suite runs one: as a user would, in a
fresh interpreter (a ``bash`` block in bash), from a given directory and environment."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
FENCE = re.compile(r"^( *)```(\w+)[^\n]*\n(.*?)^\1```", re.S | re.M)


def blocks(path: Path) -> list[tuple[str, str, str]]:
    """(page:line, language, code) of each fenced block, after the quickstart section in the README."""
    text = path.read_text()
    start = text.index("\n## What it does") if path == README else 0
    found = []
    for m in FENCE.finditer(text, start):
        code = "".join(line[len(m.group(1)) :] for line in m.group(3).splitlines(keepends=True))
        where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        found.append((where, m.group(2), code))
    return found


def run_block(where: str, language: str, code: str, cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    """Runs one block; fails the test with its output when it fails. Returns what it printed: (stdout, stderr)."""
    assert language in ("python", "bash"), f"{where}: a {language} block the suite cannot run"
    command = [sys.executable, "-c", code] if language == "python" else ["bash", "-euo", "pipefail", "-c", code]
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{where} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run.stdout, run.stderr


def page_blocks(page: str) -> list[tuple[str, str, str]]:
    """The runnable (``python`` and ``bash``) blocks of ``page`` (relative to the repository's root)."""
    return [b for b in blocks(ROOT / page) if b[1] != "text"]
