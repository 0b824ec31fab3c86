"""Statuses take their colours from the Textual theme, and the operator's theme choice survives a restart
(saved in $XDG_CONFIG_HOME/eagle-console/settings.json)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import clikit
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
        out = clikit.run(["mark", path, step, status], timeout=60)
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


def plant(settings: Path, kind: str) -> None:
    """What another user or a stray tool may leave where the settings file goes."""
    settings.parent.mkdir(parents=True, exist_ok=True)
    if kind == "deep":
        settings.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "dev-zero":
        settings.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(settings)
    elif kind == "huge":
        settings.write_text(json.dumps({"theme": "nord", "pad": "x" * (2 * 1024 * 1024)}))
    else:
        settings.write_text("[1, 2]")


def _limit_memory() -> None:  # a console reading /dev/zero fails at 1 GiB here, not at the machine's end
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("kind", ["deep", "dev-zero", "fifo", "huge", "array"])
def test_a_hostile_settings_file_still_opens_the_console(plan: Path, tmp_path: Path, kind: str) -> None:
    """The real console, to its first frame: before, a deep file ended it with `internal error:
    RecursionError`, /dev/zero with MemoryError, and a FIFO hung it (TimeoutExpired here)."""
    from eagle_console.tui.startup import EXIT_AFTER_FIRST_PAINT

    plant(tmp_path / "config" / "eagle-console" / "settings.json", kind)
    out = subprocess.run([sys.executable, "-m", "eagle_console", "tui", str(plan)], capture_output=True, text=True,
                         timeout=60, env={**os.environ, EXIT_AFTER_FIRST_PAINT: "1"}, preexec_fn=_limit_memory,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "internal error" not in out.stderr


SAY_NOTICES = """
import asyncio, json, sys
from pathlib import Path
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.app import make_app

plan = load_plan(Path(sys.argv[1]))
app = make_app(plan, Journal.for_plan(plan))

async def main():
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        print(json.dumps({"theme": app.theme, "notices": [str(n.message) for n in app._notifications]}))
        app.theme = "gruvbox"  # what the palette's "Change theme" sets: saved, unless the file was refused
        await pilot.pause()

asyncio.run(main())
"""


@pytest.mark.parametrize(("kind", "why"), [
    ("deep", "JSON nested too deeply to read: refused"),
    ("dev-zero", "is a character device, not a regular file: refused"),
    ("fifo", "is a FIFO (named pipe), not a regular file: refused"),
    ("huge", "is 2.0 MiB (2097180 bytes), over the 1.0 MiB this file may be: refused"),
    ("array", "not a JSON object"),
])
def test_a_hostile_settings_file_is_said_and_kept(plan: Path, tmp_path: Path, kind: str, why: str) -> None:
    """The console opens with the default theme, says why in a notice, and a theme change does not overwrite
    the file (the operator may want what is in it). In a child process under a memory limit and a deadline:
    on a broken build a FIFO hangs and /dev/zero eats memory."""
    settings = tmp_path / "config" / "eagle-console" / "settings.json"
    plant(settings, kind)
    before = os.lstat(settings)
    out = subprocess.run([sys.executable, "-c", SAY_NOTICES, str(plan)], capture_output=True, text=True, timeout=60,
                         preexec_fn=_limit_memory, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-2000:]
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown["theme"] == "textual-dark"
    (said,) = [n for n in shown["notices"] if str(settings) in n]
    assert said == f"{settings}: {why}; the default settings are used"
    after = os.lstat(settings)  # not replaced by a settings file holding only the new theme
    assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode, before.st_size)
