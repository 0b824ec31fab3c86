"""Every import points one way (issue 30): the import graph of eagle_console, read by grimp (import-linter's
graph library), has no cycle among its packages, and the contracts of pyproject.toml's [tool.importlinter]
(layers with no exception, no Textual in the core, Ray in cluster/ only, the console through ops) hold.

grimp reads every import statement: at module level, inside functions and under TYPE_CHECKING, so an import
put in a function to dodge a cycle is still an edge here. The checks can fail: a copy of the package with
upward and forbidden imports planted in it breaks them (the tests at the end).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

import eagle_console

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(eagle_console.__file__).parent


def package_graph(graph: grimp.ImportGraph, root: str = "eagle_console") -> dict[str, set[str]]:
    """Each direct child of `root` (a package or a top-level module) -> the children it imports."""
    depth = root.count(".") + 2

    def child(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    edges: dict[str, set[str]] = {child(m): set() for m in graph.modules if m != root}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = child(module), child(imported)
            if a != b and root not in (a, b):
                edges[a].add(b)
    return edges


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan): each is at least one cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def sites(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    """`a -> b: module:line, ...`: where package `importer` imports package `imported`."""
    found = [i for pattern in (f"{importer}.** -> {imported}.**", f"{importer}.** -> {imported}",
                               f"{importer} -> {imported}.**", f"{importer} -> {imported}")
             for i in graph.find_matching_direct_imports(import_expression=pattern)]
    lines = sorted(f"{i['importer']}:{d['line_number']}" for i in found
                   for d in graph.get_import_details(importer=i["importer"], imported=i["imported"]))
    return f"{importer} -> {imported}: {', '.join(lines)}"


def build() -> grimp.ImportGraph:
    return grimp.build_graph("eagle_console", include_external_packages=False, cache_dir=None)


def test_no_cycle_among_the_packages():
    graph = build()
    edges = package_graph(graph)
    assert {"eagle_console.engine", "eagle_console.ops", "eagle_console.tui"} <= set(edges)
    found = cycles(edges)
    assert found == [], "\n".join(sites(graph, a, b) for comp in found for a in comp for b in comp
                                   if b in edges[a])


def test_imports_inside_functions_are_edges_too():
    """The cycle check sees an import no test runs: the sglang.server built-in asks the cluster for the Ray
    runner inside a function, and that is an edge of the graph."""
    graph = build()
    details = graph.get_import_details(importer="eagle_console.engine.builtins.sglang_ranks",
                                       imported="eagle_console.cluster.noderunner")
    assert details and all(d["line_contents"].startswith("from eagle_console.cluster") for d in details)
    assert "eagle_console.cluster" in package_graph(graph)["eagle_console.engine"]


def test_the_cycle_check_finds_a_cycle():
    """An import back up (the plan reading the engine's built-ins, as it did) makes a cycle the check names."""
    graph = build()
    graph.add_import(importer="eagle_console.plan.steps", imported="eagle_console.engine.builtins",
                     line_number=1, line_contents="from eagle_console.engine.builtins import REGISTRY")
    found = cycles(package_graph(graph))
    assert any({"eagle_console.engine", "eagle_console.plan"} <= set(c) for c in found), found


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package found in `cwd`, with `cwd`'s pyproject.toml, no cache."""
    argv = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--no-cache"]  # the `lint-imports` command of .ci/run (it reads `cwd`'s pyproject.toml)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "NO_COLOR": "1", "COLUMNS": "200"})


def test_the_import_contracts_hold():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


# Each planted import and the contract it must break (by the contract's name in pyproject.toml).
PLANTED = {
    # an upward import inside a function: the plan layer reaching the engine
    "plan/durations.py": ("def _up():\n    from eagle_console.engine.runner import Engine\n", "Every import points down"),
    # the core importing Textual
    "node/tail.py": ("def _draw():\n    import textual\n", "The core never imports Textual"),
    # Ray outside the cluster's driver, agent and local cluster
    "cluster/connect.py": ("def _ray():\n    import ray\n", "Only the cluster's driver child"),
    # the console starting a run itself, and killing by itself
    "tui/cells.py": ("def _go():\n    from eagle_console.engine.runner import Engine\n"
                     "    from eagle_console.node.kill import kill_holders\n", "The console reaches operations only"),
    # a CLI command reaching into the console
    "cli/plan_cmds.py": ("def _console():\n    from eagle_console.tui import app\n", "The CLI's commands never reach"),
}


def test_the_contracts_catch_planted_imports(tmp_path):
    """A copy of the package with one forbidden import planted per contract: each contract names its break."""
    shutil.copytree(PACKAGE, tmp_path / "eagle_console", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, (code, _contract) in PLANTED.items():
        with open(tmp_path / "eagle_console" / path, "a") as f:
            f.write("\n\n" + code)
    r = lint_imports(tmp_path)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    broken = r.stdout.split("Broken contracts", 1)[-1]
    for path, (_code, contract) in PLANTED.items():
        assert contract in broken, f"{path}: {contract!r} not reported broken\n{r.stdout[-4000:]}"
    assert "KEPT" in r.stdout  # only what was planted breaks: the CLI still draws nothing itself


def test_a_new_top_level_module_must_be_given_a_layer(tmp_path):
    """The layers contract is exhaustive: a module of eagle_console in no layer fails it, until it has one."""
    shutil.copytree(PACKAGE, tmp_path / "eagle_console", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "eagle_console" / "newthing.py").write_text('"""Somewhere, but where?"""\n')
    r = lint_imports(tmp_path)
    assert r.returncode == 1 and "newthing" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_the_ops_front_door_opens():
    """Every name `eagle_console.ops` lists is there (each lives in one ops module, imported on first use)."""
    import eagle_console.ops as ops

    assert sorted(ops.__all__) == sorted(ops._HOME)
    for name in ops.__all__:
        assert getattr(ops, name) is not None
    with pytest.raises(AttributeError):
        ops.no_such_operation  # noqa: B018


def test_the_built_ins_of_the_plan_format_are_the_engines():
    """plan/uses.py (what the loader accepts and applies) and the engine's REGISTRY name the same built-ins,
    in the same order, and each class carries the traits the plan layer declares."""
    from eagle_console.engine.builtins import REGISTRY, builtin_class
    from eagle_console.plan.uses import BUILTINS

    assert list(REGISTRY) == list(BUILTINS)
    for name, traits in BUILTINS.items():
        cls = builtin_class(name)
        assert (cls.name, cls.service, cls.confirm) == (name, traits.service, traits.confirm)
