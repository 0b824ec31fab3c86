"""The console through App.run_test: keys, modals, live journal and plan-file changes, real runs.

Every run here is a real detached supervisor writing a real SQLite journal; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from enginekit import engine_for, wait_for, write_plan
from tuikit import until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

pytest.importorskip("textual")

TWO_STEPS = """
[[phase]]
id = "0"
title = "Probe"

[[phase.step]]
id = "0.1"
title = "echo one"
run = "echo one"
rollback = "echo undo one"

[[phase.step]]
id = "0.2"
title = "echo two"
needs = ["0.1"]
run = "echo two"
rollback = "echo undo two"
"""


@pytest.fixture(autouse=True)
def _grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")


def make(tmp_path: Path, body: str = TWO_STEPS, readonly: bool = False):
    from eagle_console.tui.app import make_app

    path = write_plan(tmp_path, body)
    plan = load_plan(path)
    journal = Journal.for_plan(plan)
    return make_app(plan, journal, readonly=readonly), path, journal


def drive(app, scenario, size=(120, 36)) -> None:
    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())


def tree(app):
    from eagle_console.tui.panes.plan_tree import PlanPane

    return app.query_one(PlanPane)


def label(app, node_id: str) -> str:
    return str(tree(app)._item_nodes[node_id].label)


async def select(pilot, node_id: str) -> None:
    tree(pilot.app).select_id(node_id)
    await until(pilot, lambda: pilot.app.ctx.selected_step_id == node_id, what=f"{node_id} selected")


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def test_mark_from_the_ui_lands_in_the_journal(tmp_path):
    app, _, journal = make(tmp_path)

    async def scenario(pilot):
        await select(pilot, "0.1")
        await pilot.press("m")
        from eagle_console.tui.screens.mark import MarkScreen

        await until(pilot, lambda: isinstance(app.screen, MarkScreen), what="mark modal")
        await pilot.press("enter")  # the highlighted status (completed) …
        await pilot.press(*"by hand", "enter")  # … with a note
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", what="journal mark")
        assert [n.text for n in journal.notes("0.1")] == ["by hand"]
        await until(pilot, lambda: label(app, "0.1").startswith("✔"), what="tree shows ✔")

    drive(app, scenario)


def test_a_mark_from_another_process_appears_in_the_tree(tmp_path):
    app, path, _ = make(tmp_path)

    async def scenario(pilot):
        assert label(app, "0.2").startswith("○")
        proc = subprocess.run([sys.executable, "-m", "eagle_console", "mark", str(path), "0.2", "skipped"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        await until(pilot, lambda: label(app, "0.2").startswith("⊘"), what="other process's mark shown")

    drive(app, scenario)


def test_live_plan_edit_rename_break_fix(tmp_path):
    app, path, _ = make(tmp_path)
    good = path.read_text()

    async def scenario(pilot):
        from textual.widgets import Static

        banner = app.query_one("#banner", Static)
        path.write_text(good.replace('title = "echo two"', 'title = "renamed live"'))
        await until(pilot, lambda: "renamed live" in label(app, "0.2"), what="rename shown")
        path.write_text(good + '\n[[phase.step]]\nid = "0.3"\ntitle = \n')  # a TOML syntax error
        await until(pilot, lambda: banner.display and "plan.toml:" in str(banner.content), what="banner")
        text = str(banner.content)
        loc = text.split("plan.toml:", 1)[1].split(":")
        assert loc[0].isdigit() and loc[1].isdigit(), text  # file:line:column
        assert "renamed live" in label(app, "0.2")  # the last good plan stays on screen
        path.write_text(good)
        await until(pilot, lambda: not banner.display, what="banner gone")
        await until(pilot, lambda: "echo two" in label(app, "0.2"), what="fixed plan shown")

    drive(app, scenario)


def test_readonly_hides_and_refuses_every_changing_key(tmp_path):
    app, _, journal = make(tmp_path, readonly=True)

    async def scenario(pilot):
        await select(pilot, "0.1")
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        for action in ("run", "next", "mark", "note", "rollback", "kill_orphans"):
            assert app.check_action(action, ()) is False
            assert action not in shown
        for key in ("m", "e", "r", "u", "K", "n"):
            await pilot.press(key)
        await pilot.pause(0.3)
        assert app.screen is app.screen_stack[0]  # no modal opened
        assert journal.runs() == [] and journal.statuses() == {}
        assert "read-only" in str(app.query_one("#header").content)

    drive(app, scenario)


def test_help_lists_every_key(tmp_path):
    app, _, _ = make(tmp_path)

    async def scenario(pilot):
        from eagle_console.tui.screens.help import HelpScreen

        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = str(app.screen.query_one("#help-keys").content)
        for key in ("r", "n", "m", "u", "K", "e", "f", "/", "?", "q", "1…5", "ctrl+p"):
            assert any(line.split("  ")[0].strip() == key or line.startswith(key) for line in text.splitlines()), key
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")

    drive(app, scenario)


def test_r_runs_a_shell_step_to_completion(tmp_path):
    app, _, journal = make(tmp_path)

    async def scenario(pilot):
        await select(pilot, "0.1")
        await pilot.press("r")
        await until(pilot, lambda: journal.latest_run("0.1") and journal.latest_run("0.1").finished, what="run end")
        run = journal.latest_run("0.1")
        assert run.outcome == "completed" and run.exit_code == 0
        await until(pilot, lambda: label(app, "0.1").startswith("✔"), what="tree ✔")
        await until(pilot, lambda: "0.1 completed" in notices(app), what="completed notification")
        assert "echo one" in Path(run.log).read_text()

    drive(app, scenario)


def test_n_steps_through_a_two_step_plan(tmp_path):
    app, _, journal = make(tmp_path)

    async def scenario(pilot):
        for step_id in ("0.1", "0.2"):
            await pilot.press("n")
            await until(pilot, lambda s=step_id: journal.statuses().get(s) == "completed", what=f"{step_id} done")
            assert app.ctx.selected_step_id == step_id
        await pilot.press("n")
        await until(pilot, lambda: any("the plan is done" in n for n in notices(app)), what="nothing left")

    drive(app, scenario)


def test_n_on_a_manual_step_says_do_it_by_hand(tmp_path):
    body = '[[phase]]\nid = "0"\ntitle = "P"\n\n[[phase.step]]\nid = "0.1"\ntitle = "look at it"\n'
    app, _, journal = make(tmp_path, body)

    async def scenario(pilot):
        await pilot.press("n")
        await until(pilot, lambda: "0.1 is manual: do it by hand and mark it" in notices(app), what="manual")
        assert journal.runs() == []

    drive(app, scenario)


def test_r_on_a_confirm_step_asks_first(tmp_path):
    body = TWO_STEPS.replace('run = "echo one"', 'run = "echo one"\nconfirm = true')
    app, _, journal = make(tmp_path, body)

    async def scenario(pilot):
        from eagle_console.tui.screens.confirm import ConfirmScreen

        await select(pilot, "0.1")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert journal.runs() == []
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation again")
        await pilot.press("enter")
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", what="ran after yes")

    drive(app, scenario)


def test_u_lists_the_undo_order_and_cascades(tmp_path):
    app, path, journal = make(tmp_path)
    engine = engine_for(path)
    for step_id in ("0.1", "0.2"):
        run_id = engine.start(step_id)
        engine.wait(run_id, timeout=30)
    assert engine.statuses()["0.2"] == "completed"

    async def scenario(pilot):
        from eagle_console.tui.screens.rollback import RollbackScreen

        await select(pilot, "0.1")  # 0.2 needs it: refused alone, offered with --cascade
        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, RollbackScreen), what="rollback modal")
        screen = app.screen
        assert screen.cascade is True
        lines = screen.order_plain.splitlines()
        assert lines[0].startswith("1. 0.2") and lines[1].startswith("2. 0.1"), lines
        await pilot.press("c")  # without cascade: the refusal is shown, Enter does nothing
        assert screen.order_plain.startswith("refused:") and "0.2" in screen.order_plain
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.screen is screen
        await pilot.press("c", "enter")
        await until(pilot, lambda: journal.statuses().get("0.1") == "rolled_back"
                    and journal.statuses().get("0.2") == "rolled_back", what="both rolled back")
        await until(pilot, lambda: label(app, "0.1").startswith("↺"), what="tree ↺")
        await until(pilot, lambda: "rollback of 0.1 completed" in notices(app), what="rollback notification")

    drive(app, scenario)


def test_q_says_which_runs_keep_running(tmp_path):
    body = TWO_STEPS.replace('run = "echo one"', 'run = "sleep 30"')
    app, path, journal = make(tmp_path, body)

    async def scenario(pilot):
        await select(pilot, "0.1")
        await pilot.press("r")
        await until(pilot, lambda: journal.latest_run("0.1") and journal.latest_run("0.1").pid, what="running")
        await until(pilot, lambda: "⟳" in label(app, "0.1"), what="elapsed shown")
        await pilot.press("q")
        await until(pilot, lambda: app.quit_message, what="exit message")

    try:
        drive(app, scenario)
        assert app.quit_message.startswith("1 run keeps running: 0.1 pid "), app.quit_message
        run = journal.latest_run("0.1")
        assert not run.finished  # the supervisor is detached: quitting the console leaves it going
    finally:
        run = journal.latest_run("0.1")
        if run and run.sid:
            try:
                os.killpg(run.sid, 15)
            except ProcessLookupError:
                pass
        wait_for(lambda: journal.latest_run("0.1").finished, timeout=20)


def test_K_opens_the_kill_screen(tmp_path):
    kill = pytest.importorskip("eagle_console.tui.screens.kill")
    app, _, _ = make(tmp_path)

    async def scenario(pilot):
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, kill.KillScreen), what="kill modal")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, kill.KillScreen), what="kill modal closed")

    drive(app, scenario)
