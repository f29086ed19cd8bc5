"""Each option's default, read from the core, checked against the stub and docs/options.md.

The core holds every default once (each options struct's ``Default``). The extension exposes the structs as
``pulsar_entries._native.*Options`` classes; building one with no arguments gives the core's defaults. This
script lists them and checks the two other places a user reads them:

- the stub (``python/pulsar_entries/_native.pyi``): each options class's docstring documents every field as
  ``- ``field`` (default X): what it means``;
- docs/options.md's table under "Options and their defaults": one row per field, ``| `Class` | `field` | `default` |``.

    python scripts/option_defaults.py           # print the defaults, check stub and docs/options.md; exit 1 on a mismatch
    python scripts/option_defaults.py --table   # print the table of docs/options.md from the core
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pulsar_entries._native as native

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "python" / "pulsar_entries" / "_native.pyi"
OPTIONS_DOC = ROOT / "docs" / "options.md"
DOCUMENTED = re.compile(r"^- ``(\w+)`` \(default ([^)]*)\)", re.M)
ROW = re.compile(r"^\| `(\w+Options)` \| `(\w+)` \| `([^`]*)` \|")


def options_classes() -> dict[str, type]:
    """The extension's options classes, by name."""
    return {n: c for n, c in vars(native).items() if n.endswith("Options") and isinstance(c, type)}


def stub_defaults() -> dict[str, dict[str, Any]]:
    """Each stub options class's documented defaults: its docstring's ``- ``field`` (default X): ...`` lines."""
    out: dict[str, dict[str, Any]] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Options"):
            doc = ast.get_docstring(node) or ""
            out[node.name] = {m[1]: ast.literal_eval(m[2]) for m in DOCUMENTED.finditer(doc)}
    return out


def readme_defaults() -> dict[str, dict[str, str]]:
    """The rows of docs/options.md's table: class → field → the default as written."""
    out: dict[str, dict[str, str]] = {}
    for line in OPTIONS_DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            out.setdefault(m[1], {})[m[2]] = m[3]
    return out


def core_defaults() -> dict[str, dict[str, Any]]:
    """Each options class's fields (as the stub documents them) with the core's default."""
    stub = stub_defaults()
    out = {}
    for name, cls in sorted(options_classes().items()):
        built = cls()
        out[name] = {f: getattr(built, f) for f in stub.get(name, {})}
    return out


def table(core: dict[str, dict[str, Any]]) -> str:
    rows = ["| options | field | default |", "|---|---|---|"]
    for name, fields in core.items():
        rows += [f"| `{name}` | `{f}` | `{v!r}` |" for f, v in fields.items()]
    return "\n".join(rows)


def check() -> list[str]:
    """Every mismatch between the core, the stub and docs/options.md, as one line each."""
    problems = []
    classes, stub, readme = options_classes(), stub_defaults(), readme_defaults()
    if not classes:
        problems.append("the extension exports no options class")
    for name in sorted(set(classes) | set(stub) | set(readme)):
        if name not in classes:
            problems.append(f"{name}: in the stub or docs/options.md, not in the extension")
            continue
        if name not in stub:
            problems.append(f"{name}: not in the stub")
            continue
        built = classes[name]()
        attributes = {a for a in dir(built) if not a.startswith("_") and not callable(getattr(built, a))}
        if missing := attributes - set(stub[name]):
            problems.append(f"{name}: fields {sorted(missing)} not documented in the stub")
        for field, shown in stub[name].items():
            core = getattr(built, field, ("absent",))
            if core != shown or type(core) is not type(shown):
                problems.append(f"{name}.{field}: the core's default is {core!r}, the stub shows {shown!r}")
            written = readme.get(name, {}).get(field)
            if written is None:
                problems.append(f"{name}.{field}: no row in docs/options.md's table")
            elif written != repr(core):
                problems.append(f"{name}.{field}: the core's default is {core!r}, docs/options.md says {written}")
        for field in set(readme.get(name, {})) - set(stub[name]):
            problems.append(f"{name}.{field}: in docs/options.md, not an option")
    return problems


def main(argv: list[str]) -> int:
    if argv[1:] == ["--table"]:
        print(table(core_defaults()))
        return 0
    for name, fields in core_defaults().items():
        print(name + ": " + ", ".join(f"{f}={v!r}" for f, v in fields.items()))
    problems = check()
    for p in problems:
        print("MISMATCH " + p, file=sys.stderr)
    print(
        "option defaults: "
        + ("stub and docs/options.md agree with the core" if not problems else f"{len(problems)} mismatch(es)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
