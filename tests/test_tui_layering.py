"""The console is a thin face: its widgets and App reach operations only through `eagle_console.ops`.

Read from the source (every import, at module level or in a function; TYPE_CHECKING imports are only
names for type hints): no module of `eagle_console/tui` imports the engine's runner, rollback, supervisor
or process control, the journal's writers, or node.kill's killing functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import eagle_console.tui

TUI = Path(eagle_console.tui.__file__).parent
# Modules that perform operations: the console calls them through eagle_console.ops only.
FORBIDDEN_MODULES = ("eagle_console.engine.runner", "eagle_console.engine.rollback", "eagle_console.processes",
                     "eagle_console.engine.supervisor", "eagle_console.engine.action", "eagle_console.journal.store")
# node.kill also holds read-only helpers (the grace parser); these are the ones that signal.
FORBIDDEN_NAMES = {"eagle_console.node.kill": {"kill_holders", "select_targets", "_signal"}}


def _runtime_imports(tree: ast.AST) -> list[tuple[str, list[str], int]]:
    """(module, names, line) of every import not under `if TYPE_CHECKING:`."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((a.name, [], node.lineno) for a in node.names)
    return out


def layering_violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for module, names, line in _runtime_imports(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(root.parent)}:{line}"
            if module.startswith(FORBIDDEN_MODULES):
                found.append(f"{where} imports {module}")
            for name in set(names) & FORBIDDEN_NAMES.get(module, set()):
                found.append(f"{where} imports {module}.{name}")
    return found


def test_the_console_calls_operations_only_through_ops():
    assert layering_violations(TUI) == []


def test_the_layering_check_sees_a_forbidden_import(tmp_path):
    """The check above can fail: a widget starting a run itself, or killing by itself, is caught."""
    (tmp_path / "pane.py").write_text("def go(plan, journal):\n"
                                      "    from eagle_console.engine.runner import Engine\n"
                                      "    from eagle_console.node.kill import kill_holders, resolve_grace\n")
    (tmp_path / "hints.py").write_text("from typing import TYPE_CHECKING\n"
                                       "if TYPE_CHECKING:\n    from eagle_console.engine.runner import Engine\n")
    assert layering_violations(tmp_path) == [
        f"{tmp_path.name}/pane.py:2 imports eagle_console.engine.runner",
        f"{tmp_path.name}/pane.py:3 imports eagle_console.node.kill.kill_holders",
    ]


def test_no_mixin_and_no_attribute_broadcast():
    """The App's keys live on the App and talk by messages: no SteeringKeys mixin, no hasattr/getattr probe."""
    assert not (TUI / "steering_keys.py").exists()
    probes = [f"{p.relative_to(TUI)}:{n}" for p in TUI.rglob("*.py")
              for n, line in enumerate(p.read_text().splitlines(), 1) if "hasattr(" in line]
    assert probes == []
    app = (TUI / "app.py").read_text()
    assert "SteeringKeys" not in app and "screen_stack" not in app


def test_no_builtin_named_in_the_console():
    """What the console shows for a built-in follows its declared traits (drafter_findings), not its name."""
    from eagle_console.engine.builtins import REGISTRY

    named = [f"{p.relative_to(TUI)}: {name}" for p in TUI.rglob("*.py") for name in REGISTRY
             if f'"{name}"' in p.read_text()]
    assert named == []


def test_modules_stay_small():
    sizes = {str(p.relative_to(TUI)): len(p.read_text().splitlines()) for p in TUI.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 450} == {}
