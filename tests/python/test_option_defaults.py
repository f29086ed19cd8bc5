"""Each option's default is written once in the core; the stub and docs/options.md are checked against it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "option_defaults.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("option_defaults", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["option_defaults"] = module
    spec.loader.exec_module(module)
    return module


def test_stub_and_docs_agree_with_the_core(script: ModuleType) -> None:
    core = script.core_defaults()
    assert {"DecodeOptions", "ReassemblyOptions", "CompactionOptions", "BookieClientOptions", "OffloadOptions"} <= set(
        core
    )
    assert all(core.values()), core
    assert script.check() == []


def test_the_check_finds_a_wrong_default(script: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    doc = tmp_path / "options.md"
    text = script.OPTIONS_DOC.read_text()
    row = next(line for line in text.splitlines() if script.ROW.match(line))
    doc.write_text(text.replace(row, row.rsplit("|", 2)[0] + "| `-12345` |"))
    monkeypatch.setattr(script, "OPTIONS_DOC", doc)
    problems = script.check()
    assert len(problems) == 1 and "docs/options.md says -12345" in problems[0], problems

    stub = tmp_path / "_native.pyi"
    stub.write_text(script.STUB.read_text().replace("``max_pending`` (default 100)", "``max_pending`` (default 7)"))
    monkeypatch.setattr(script, "OPTIONS_DOC", script.ROOT / "docs" / "options.md")
    monkeypatch.setattr(script, "STUB", stub)
    assert any("stub shows 7" in p for p in script.check())
