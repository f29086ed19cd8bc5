"""resolve_lib: the standalone's jars from the pom shipped in the package, cached per user. These
tests use stand-in ``mvn`` scripts; the real resolution runs in tests/python/real_pulsar/test_cli_demo.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pulsar_entries._standalone import StandaloneError, default_cache_dir, resolve_lib


def fake_mvn(tmp_path: Path, body: str) -> str:
    path = tmp_path / "mvn"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_resolves_into_the_cache_once_then_reuses_it(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    # Writes a broker jar where -DoutputDirectory says, and records its arguments.
    mvn = fake_mvn(
        tmp_path,
        f'echo "$@" >> {log}\nfor a in "$@"; do case "$a" in -DoutputDirectory=*) '
        'd="${a#-DoutputDirectory=}"; touch "$d/pulsar-broker-4.2.4.jar" "$d/other-1.0.jar";; esac; done\n',
    )
    cache = tmp_path / "cache"
    lines: list[str] = []
    lib = resolve_lib(cache, mvn=mvn, progress=lines.append)
    assert lib == cache / "lib"
    assert sorted(p.name for p in lib.iterdir()) == ["other-1.0.jar", "pulsar-broker-4.2.4.jar"]
    args = log.read_text().split()
    assert args[:4] == ["-q", "-B", "-f", str(cache / "pom.xml")]
    assert "maven-dependency-plugin:3.8.1:copy-dependencies" in args[4] and "-DincludeScope=runtime" in args
    pom = (cache / "pom.xml").read_text()
    assert "<artifactId>pulsar-broker</artifactId>" in pom and "<pulsar.version>4.2.4</pulsar.version>" in pom
    assert "tiered-storage" not in pom
    assert lines[0].startswith("resolving Apache Pulsar 4.2.4") and lines[-1] == "resolved 2 jars in 0s"
    # Present: reused without calling Maven (even a failing one).
    assert resolve_lib(cache, mvn=fake_mvn(tmp_path, "exit 1\n")) == lib
    assert len(log.read_text().splitlines()) == 1
    # No staging directory left behind.
    assert sorted(p.name for p in cache.iterdir()) == ["lib", "pom.xml"]


def test_a_failing_maven_is_one_error_and_leaves_no_lib(tmp_path: Path) -> None:
    mvn = fake_mvn(tmp_path, 'echo "[ERROR] Could not resolve dependencies for project"\nexit 1\n')
    cache = tmp_path / "cache"
    with pytest.raises(StandaloneError, match=r"(?s)exit 1.*Could not resolve dependencies"):
        resolve_lib(cache, mvn=mvn)
    assert not (cache / "lib").exists()
    assert sorted(p.name for p in cache.iterdir()) == ["pom.xml"]
    with pytest.raises(StandaloneError, match="not found on PATH"):
        resolve_lib(tmp_path / "other", mvn=str(tmp_path / "no-such-mvn"))


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "pulsar-entries" / "pulsar-4.2.4"


def test_a_nearly_full_disk_is_one_clear_error_before_the_jvm_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import subprocess

    from pulsar_entries import _standalone

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pulsar-broker-4.2.4.jar").touch()
    started: list[object] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    full = shutil._ntuple_diskusage(250 * 2**30, 249 * 2**30, 1 * 2**30)  # type: ignore[attr-defined]
    monkeypatch.setattr(_standalone.shutil, "disk_usage", lambda path: full)
    sa = _standalone.Standalone(lib, tmp_path / "work")
    with pytest.raises(StandaloneError, match=r"1\.0 GiB free \(99\.6% full\): a standalone needs 2 GiB"):
        sa._start_once()
    assert started == []


def test_a_large_disk_over_95_percent_full_still_starts_and_the_bookie_is_told_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """9 GiB free on a 250 GiB disk is 96.4 % use: BookKeeper's default threshold (0.95) would
    make the bookie read-only, so broker.conf (which the standalone's bookie also reads) raises it."""
    import shutil
    import subprocess

    from pulsar_entries import _standalone

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pulsar-broker-4.2.4.jar").touch()
    started: list[object] = []

    class Started(Exception):
        pass

    def popen(*a: object, **k: object) -> None:
        started.append(a)
        raise Started

    monkeypatch.setattr(subprocess, "Popen", popen)
    busy = shutil._ntuple_diskusage(250 * 2**30, 241 * 2**30, 9 * 2**30)  # type: ignore[attr-defined]
    monkeypatch.setattr(_standalone.shutil, "disk_usage", lambda path: busy)
    sa = _standalone.Standalone(lib, tmp_path / "work")
    with pytest.raises(Started):
        sa._start_once()
    assert len(started) == 1
    conf = dict(line.split("=", 1) for line in sa.config_path.read_text().splitlines())
    assert float(conf["diskUsageThreshold"]) > 0.964
    assert float(conf["diskUsageWarnThreshold"]) <= float(conf["diskUsageThreshold"]) < 1
    assert float(conf["diskUsageLwmThreshold"]) <= float(conf["diskUsageThreshold"])
