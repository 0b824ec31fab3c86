"""Statuses take their colours from the Textual theme, and the operator's theme choice survives a restart
(saved in $XDG_CONFIG_HOME/eagle-console/settings.json)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.color import Color

PLAN = '[plan]\nid = "th"\ntitle = "themes"\n\n[[phase]]\nid = "p"\ntitle = "P"\n' \
       '  [[phase.step]]\n  id = "p.1"\n  title = "done"\n' \
       '  [[phase.step]]\n  id = "p.2"\n  title = "broken"\n'


@pytest.fixture
def plan(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    for step, status in (("p.1", "completed"), ("p.2", "failed")):
        out = subprocess.run([sys.executable, "-m", "eagle_console", "mark", str(path), step, status],
                             capture_output=True, text=True, timeout=60, env=os.environ)
        assert out.returncode == 0, out.stderr
    return path


def open_app(path: Path):
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(path)
    return make_app(plan, Journal.for_plan(plan))


def glyph_colour(app, step_id: str) -> str:
    """The colour of the status glyph in the step's tree label (what the tree renders)."""
    from rich.style import Style

    from eagle_console.tui.panes.plan_tree import PlanPane

    label = app.query_one(PlanPane)._item_nodes[step_id].label
    span = next(s for s in label.spans if s.start == 0)
    style = span.style if isinstance(span.style, Style) else Style.parse(span.style)
    return style.color.get_truecolor().hex


def hexof(colour: str) -> str:
    return Color.parse(colour).get_truecolor().hex


def test_switching_theme_recolours_the_statuses_in_the_tree(plan: Path) -> None:
    app = open_app(plan)
    seen: dict[str, tuple[str, str]] = {}

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for name in ("textual-dark", "nord"):
                app.theme = name
                await pilot.pause()
                await pilot.pause()
                seen[name] = (glyph_colour(app, "p.1"), glyph_colour(app, "p.2"))
                css = app.get_css_variables()  # $success and $error of this theme
                assert seen[name] == (hexof(css["success"]), hexof(css["error"])), name

    asyncio.run(main())
    assert seen["textual-dark"] != seen["nord"]


def test_the_theme_choice_survives_a_restart(plan: Path, tmp_path: Path) -> None:
    first = open_app(plan)

    async def choose() -> None:
        async with first.run_test() as pilot:
            assert first.theme == "textual-dark"
            first.theme = "gruvbox"  # what the palette's "Change theme" sets
            await pilot.pause()
            await pilot.pause()

    asyncio.run(choose())
    saved = json.loads((tmp_path / "config" / "eagle-console" / "settings.json").read_text())
    assert saved["theme"] == "gruvbox"
    second = open_app(plan)

    async def reopen() -> None:
        async with second.run_test() as pilot:
            await pilot.pause()
            assert second.theme == "gruvbox"
            assert glyph_colour(second, "p.1") == hexof(second.get_css_variables()["success"])

    asyncio.run(reopen())


def test_an_unknown_or_broken_saved_theme_opens_the_default(plan: Path, tmp_path: Path) -> None:
    settings = tmp_path / "config" / "eagle-console" / "settings.json"
    settings.parent.mkdir(parents=True)
    for text in ('{"theme": "no-such-theme"}', "{not json"):
        settings.write_text(text)
        app = open_app(plan)

        async def main(app=app) -> None:
            async with app.run_test() as pilot:
                await pilot.pause()
                assert app.theme == "textual-dark"

        asyncio.run(main())
