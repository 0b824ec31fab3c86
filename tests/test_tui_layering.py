"""The console is a thin face: what its code may not do beyond imports (which modules it reaches is the
`console-through-ops` contract of pyproject.toml, checked by tests/test_import_layers.py): no mixin and no
attribute probing, no built-in named, small modules."""

from __future__ import annotations

import re
from pathlib import Path

import eagle_console.tui

TUI = Path(eagle_console.tui.__file__).parent


# hasattr, or getattr of a named attribute: asking a widget what it is instead of telling it by a message.
# Allowed: which Rich this is (cells.py, a module's function), a pane class named in a table (logs.py).
PROBE = re.compile(r"\b(hasattr\(|getattr\((?!rich_cells\b|importlib\.))")


def probes(root: Path) -> list[str]:
    return [f"{p.relative_to(root)}:{n}" for p in sorted(root.rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if PROBE.search(line)]


def test_no_mixin_and_no_attribute_broadcast():
    """The App's keys live on the App and talk by messages: no SteeringKeys mixin, no hasattr/getattr probe
    (issue 30: the log tabs asked each pane `getattr(pane, "poller", None)`; they post TabShown now)."""
    assert not (TUI / "steering_keys.py").exists()
    assert probes(TUI) == []
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


def test_the_probe_check_sees_a_probe(tmp_path):
    (tmp_path / "pane.py").write_text('poller = getattr(pane, "poller", None)\nok = hasattr(x, "y")\n'
                                      'f = getattr(rich_cells, "split_graphemes", None)\n')
    assert probes(tmp_path) == ["pane.py:1", "pane.py:2"]
