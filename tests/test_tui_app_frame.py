"""The console frame driven through App.run_test: marks, notes, live journal and plan-file changes, readonly, help.

Written by the first console engineer as tests/test_tui_app.py; kept here beside the steering tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.app import ConsoleApp, make_app
from eagle_console.tui.panes.plan_tree import PlanPane

PLAN = """\
[plan]
id = "tuitest"
title = "Console test plan"
node = "2x test GPU, PCIe"

[[phase]]
id = "0"
title = "Quick probe"
priority = "high"

  [[phase.step]]
  id = "0.1"
  title = "Kill any existing server processes"
  priority = "high"
  run = "true"

  [[phase.step]]
  id = "0.2"
  title = "Prepare the drafter directory with a rather long title that will not fit at eighty columns"
  needs = ["0.1"]
  run = "true"

[[phase]]
id = "1"
title = "Finetune"
priority = "low"

  [[phase.step]]
  id = "1.1"
  title = "Extract hidden states"
  run = "true"
"""


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


def _app(plan_file: Path, readonly: bool = False) -> ConsoleApp:
    plan = load_plan(plan_file)
    return make_app(plan, Journal.for_plan(plan), readonly=readonly)


async def _until(pilot, cond, timeout: float = 5.0) -> bool:
    """Let the app run until cond() holds; False if it never does within the timeout."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if cond():
            return True
        await pilot.pause(0.05)
    return cond()


def _label(app: ConsoleApp, item_id: str) -> str:
    return app.query_one(PlanPane)._item_nodes[item_id].label.plain


def _states(plan_file: Path) -> dict:
    journal = Journal.for_plan(load_plan(plan_file))
    try:
        return journal.states()
    finally:
        journal.close()


def test_mark_from_the_ui_lands_in_the_journal(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test(size=(120, 36)) as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1")
            await pilot.press("m")
            assert type(app.screen).__name__ == "MarkScreen"
            await pilot.press("down", "enter")  # from the default (completed) down to failed
            await pilot.press(*"drafter crashed", "enter")
            assert await _until(pilot, lambda: "0.1" in _states(plan_file))
            assert await _until(pilot, lambda: _label(app, "0.1").startswith("✖"))
            assert "drafter crashed" in app.query_one("#detail").render().plain
        app.ctx.journal.close()

    asyncio.run(go())
    st = _states(plan_file)["0.1"]
    assert st.status == "failed"
    journal = Journal.for_plan(load_plan(plan_file))
    assert [n.text for n in journal.notes("0.1")] == ["drafter crashed"]
    journal.close()


def test_escape_cancels_the_mark(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.ctx.selected_step_id == "0.1")
            await pilot.press("m", "escape")
            assert type(app.screen).__name__ != "MarkScreen"
            await pilot.pause(0.3)
        app.ctx.journal.close()

    asyncio.run(go())
    assert _states(plan_file) == {}


def test_note_from_the_ui(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.ctx.selected_step_id == "0.1")
            await pilot.press("e", *"keep AQ-MedAI d2t", "enter")
            assert await _until(pilot, lambda: "keep AQ-MedAI d2t" in app.query_one("#detail").render().plain)
        app.ctx.journal.close()

    asyncio.run(go())


def test_a_mark_from_the_cli_shows_in_the_tree(plan_file: Path, tmp_path: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None)
            assert _label(app, "0.2").startswith("○") and "⇠" in _label(app, "0.2")  # needs 0.1, not done
            out = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "eagle_console", "mark", str(plan_file), "0.1", "completed"],
                capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            # The journal poll runs every 250 ms: well within the second the spec allows.
            assert await _until(pilot, lambda: _label(app, "0.1").startswith("✔"), timeout=3.0)
            assert "⇠" not in _label(app, "0.2")  # its need is met now
            assert _label(app, "0").startswith("◐")  # the phase follows its steps
        app.ctx.journal.close()

    asyncio.run(go())


def test_a_running_step_shows_its_elapsed_time(plan_file: Path):
    plan = load_plan(plan_file)
    other = Journal.for_plan(plan)
    other.begin_run("0.1", command="true", log=None)
    other.close()

    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: "⟳" in _label(app, "0.1"))
            assert _label(app, "0.1").startswith("◐")
        app.ctx.journal.close()

    asyncio.run(go())


def test_live_plan_edit_rename_break_fix(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None)
            await asyncio.to_thread(app.ctx.journal.mark, "1.1", "skipped")
            assert await _until(pilot, lambda: _label(app, "1.1").startswith("⊘"))
            app.query_one(PlanPane).select_id("1.1")
            await pilot.pause()
            banner = app.query_one("#banner")

            plan_file.write_text(PLAN.replace("Extract hidden states", "Extract hidden states v2"))
            assert await _until(pilot, lambda: "v2" in _label(app, "1.1"))
            assert _label(app, "1.1").startswith("⊘")  # the id kept its state
            assert app.ctx.selected_step_id == "1.1"  # and the selection stayed
            assert not banner.display

            plan_file.write_text(PLAN.replace('priority = "low"', 'priority = "urgent"'))
            assert await _until(pilot, lambda: banner.display)
            text = banner.render().plain
            line = PLAN.splitlines().index('priority = "low"') + 1
            assert f"plan.toml:{line}:" in text, text
            assert "v2" in _label(app, "1.1")  # the last good plan stays on screen

            plan_file.write_text(PLAN)
            assert await _until(pilot, lambda: not banner.display)
            assert await _until(pilot, lambda: "v2" not in _label(app, "1.1"))
        app.ctx.journal.close()

    asyncio.run(go())


def test_adding_a_step_rebuilds_and_keeps_selection(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None)
            app.query_one(PlanPane).select_id("0.2")
            await pilot.pause()
            plan_file.write_text(PLAN + '\n  [[phase.step]]\n  id = "1.2"\n  title = "Train"\n  run = "true"\n')
            assert await _until(pilot, lambda: "1.2" in app.query_one(PlanPane)._item_nodes)
            await pilot.pause()
            assert app.ctx.selected_step_id == "0.2"
        app.ctx.journal.close()

    asyncio.run(go())


def test_readonly_hides_and_refuses_mark_and_note(plan_file: Path):
    async def go():
        app = _app(plan_file, readonly=True)
        async with app.run_test() as pilot:
            assert await _until(pilot, lambda: app.ctx.selected_step_id == "0.1")
            shown = {b.binding.key for b in app.active_bindings.values()}
            assert "m" not in shown and "e" not in shown
            assert "q" in shown
            await pilot.press("m")
            await pilot.press("e")
            await pilot.pause()
            assert type(app.screen).__name__ not in ("MarkScreen", "NoteScreen")
            assert "read-only" in app.query_one("#header").render().plain
        app.ctx.journal.close()

    asyncio.run(go())
    assert _states(plan_file) == {}


def test_help_lists_the_keys(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            assert type(app.screen).__name__ == "HelpScreen"
            text = app.screen.query_one("#help-keys").render().plain
            for key in ("m", "e", "?", "q", "1…5", "ctrl+p"):
                assert key in text
            await pilot.press("escape")
            await pilot.pause()
            assert type(app.screen).__name__ != "HelpScreen"
        app.ctx.journal.close()

    asyncio.run(go())


def test_number_keys_switch_tabs(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test() as pilot:
            tabs = app.query_one("#logs")
            await pilot.press("3")
            assert tabs.active == "output"
            await pilot.press("5")
            assert tabs.active == "results"
            await pilot.press("1")
            assert tabs.active == "server"
        app.ctx.journal.close()

    asyncio.run(go())


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_layout_fits_small_and_large_terminals(plan_file: Path, size: tuple[int, int]):
    async def go():
        app = _app(plan_file)
        async with app.run_test(size=size) as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None)
            await pilot.pause()
            tree = app.query_one(PlanPane)
            long_label = _label(app, "0.2")
            # a step line: its guide (guide_depth cells), the label, two border cells and the scrollbar
            assert len(long_label) + tree.guide_depth + 3 <= tree.size.width
            if size[0] == 80:
                assert "… ⇠" in long_label  # the title gives way, the unmet-needs mark stays
                assert tree.size.width >= 40  # the tree takes the larger share on a narrow terminal
            else:
                assert "will not fi" in long_label  # far more of the title than at 80 columns
        app.ctx.journal.close()

    asyncio.run(go())


def test_export_from_the_palette_writes_beside_the_state_dir(plan_file: Path):
    async def go():
        app = _app(plan_file)
        async with app.run_test(size=(120, 36)) as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None)
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"Export plan (markdown)")
            await pilot.pause(0.3)
            await pilot.press("enter")
            target = app.ctx.plan.state_dir.parent / "tuitest.md"
            assert await _until(pilot, target.exists)
        app.ctx.journal.close()
        return target

    target = asyncio.run(go())
    text = target.read_text()
    assert "# Console test plan" in text and "0.2" in text


def test_titles_are_shown_as_written_not_as_markup(tmp_path: Path):
    """A title is text, not Rich markup: brackets and :codes: show as typed (a "[/]" used to crash the tree)."""
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\nid = "markup"\ntitle = "t"\nnode = "2x [PCIe] box"\n\n[[phase]]\nid = "0"\ntitle = "Probe [/] [bold]x"\n\n'
                    '[[phase.step]]\nid = "0.1"\ntitle = "Check [red]vocab[/red] :rocket:"\nrun = "true"\n')

    async def go():
        app = _app(path)
        async with app.run_test(size=(120, 36)) as pilot:
            assert await _until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1")
            assert "Probe [/] [bold]x" in _label(app, "0")
            assert "Check [red]vocab[/red] :rocket:" in _label(app, "0.1")
            assert "2x [PCIe] box" in str(app.query_one("#header").render())
        app.ctx.journal.close()

    asyncio.run(go())
