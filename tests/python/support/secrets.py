"""The "no secret in text" check of the secured tests (issue 28): after each test, what it printed (both file
descriptors, so subprocesses and the JVM's children too), every log record, and each text the test hands over (an
error, a ``repr``, a CLI's output, a Spark plan) must hold none of the fixture's secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pem_lines(path: Path) -> list[str]:
    """Up to three lines from inside a PEM key (first, middle, last of its body's long lines; a short last
    line such as ``==`` could match anything): a leaked key holds them."""
    body = [x for x in Path(path).read_text().splitlines() if len(x) >= 16 and not x.startswith("-----")]
    return sorted({body[0], body[len(body) // 2], body[-1]})


def assert_no_secret(secrets: list[str], capfd: Any, caplog: Any, texts: list[str]) -> None:
    assert secrets and all(len(s) >= 8 for s in secrets), "a check needs real secrets"
    out, err = capfd.readouterr()
    named = [("stdout", out), ("stderr", err), ("log records", caplog.text)]
    named += [(f"text {i}", t) for i, t in enumerate(texts)]
    for name, text in named:
        for secret in secrets:
            assert secret not in text, f"a secret ({secret[:3]}...) in {name}"
