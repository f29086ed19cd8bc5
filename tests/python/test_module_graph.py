"""No import cycles in the Python package.

Every module under ``python/pulsar_entries`` is parsed with ``ast``; each
import (at the top of a module or inside a function, ``TYPE_CHECKING`` blocks
included) is an edge to the package module it names: ``from .x import y`` to
``x`` (and to ``x.y`` when that is a module), ``from . import x`` to ``x``,
``import pulsar_entries.x`` to ``x``. A package's ``__init__`` is the package's
node. Importing a submodule also runs its parent package's ``__init__``; that
is no edge here, or every package would form a cycle with its own modules.
Needs no Spark, and no build: it reads the sources.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "python" / "pulsar_entries"


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` under ``root`` (a package)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_nodes(tree: ast.AST, at_import_time: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module; with ``at_import_time``, only those
    that run when it is imported (not in functions, not under ``if TYPE_CHECKING``)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        if at_import_time:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for child in node.orelse:
                    visit(child)
                return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path, at_import_time: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in import_nodes(ast.parse(path.read_text(), str(path)), at_import_time):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
            for target in targets:
                # `from . import x` names the package itself too; only a real module counts.
                if (
                    target in modules
                    and target != name
                    and not (isinstance(node, ast.ImportFrom) and target == package and node.module is None)
                ):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycles():
    graph = import_graph(PACKAGE_ROOT)
    # The graph is the real one: the modules are found and their imports read.
    assert {"pulsar_entries", "pulsar_entries.spark", "pulsar_entries.cli._engines"} <= set(graph)
    assert "pulsar_entries._compaction" in graph["pulsar_entries"]
    assert "pulsar_entries.spark._strategic" in graph["pulsar_entries.spark._compaction"]
    assert "pulsar_entries.spark" in graph["pulsar_entries.cli._engines"]  # a function-level import
    assert cycles(graph) == []


def test_the_package_and_the_cli_import_no_spark_when_imported():
    """What ``import pulsar_entries`` and ``pulsar_entries.cli`` run at import
    time reaches no Spark module and imports neither pyspark nor pandas: the
    local engine works without them (``scripts/smoke-no-pyspark`` runs it)."""
    graph = import_graph(PACKAGE_ROOT, at_import_time=True)
    files = module_files(PACKAGE_ROOT)
    reached: set[str] = set()
    todo = ["pulsar_entries", "pulsar_entries.cli"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert "pulsar_entries.cli._engines" in reached and "pulsar_entries._inputs" in reached
    assert not [name for name in reached if name.startswith("pulsar_entries.spark")]
    for name in sorted(reached):
        nodes = import_nodes(ast.parse(files[name].read_text()), at_import_time=True)
        roots = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
        roots |= {(n.module or "").split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom) and not n.level}
        assert not roots & {"pyspark", "pandas"}, f"{name} imports {roots & {'pyspark', 'pandas'}}"


def test_a_planted_cycle_is_found(tmp_path):
    pkg = tmp_path / "pulsar_entries"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b\n")
    (pkg / "b.py").write_text("def g():\n    from .sub.c import h  # a function-level import\n    return h\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("import pulsar_entries.a\n\nh = 1\n")
    graph = import_graph(pkg)
    assert graph["pulsar_entries.b"] == {"pulsar_entries.sub.c"}
    assert cycles(graph) == [["pulsar_entries.a", "pulsar_entries.b", "pulsar_entries.sub.c"]]
    (pkg / "sub" / "c.py").write_text("h = 1\n")
    assert cycles(import_graph(pkg)) == []
