"""The console through App.run_test: keys, modals, palette, live journal and plan-file changes, real runs.

Every run here is a real detached supervisor writing a real SQLite journal; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import clikit
import pytest
from enginekit import engine_for, wait_for, write_plan
from tuikit import drive, label, notices, open_app, select, until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

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


CHANGING = ("run", "next", "mark", "note", "rollback", "kill_orphans")


@pytest.fixture(autouse=True)
def _grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


def make(tmp_path: Path, body: str = TWO_STEPS, readonly: bool = False):
    path = write_plan(tmp_path, body)
    app, journal = open_app(path, readonly=readonly)
    return app, path, journal


def shown_actions(app) -> set[str]:
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled and b.binding.show}


def detail(app) -> str:
    return app.query_one("#detail").render().plain


# -- mark, note -----------------------------------------------------------------------------------------

def test_mark_from_the_ui_lands_in_the_journal(plan_file: Path):
    app, journal = open_app(plan_file)

    async def scenario(pilot):
        from eagle_console.tui.screens.mark import MarkScreen

        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, MarkScreen), what="mark modal")
        await pilot.press("down", "enter")  # from the default (completed) down to failed
        await pilot.press(*"drafter crashed", "enter")
        await until(pilot, lambda: journal.statuses().get("0.1") == "failed", what="journal mark")
        await until(pilot, lambda: label(app, "0.1").startswith("✖"), what="tree shows ✖")
        await until(pilot, lambda: "drafter crashed" in detail(app), what="note in the Detail line")
        assert [n.text for n in journal.notes("0.1")] == ["drafter crashed"]

    drive(app, scenario)


def test_escape_cancels_the_mark(plan_file: Path):
    app, journal = open_app(plan_file)

    async def scenario(pilot):
        from eagle_console.tui.screens.mark import MarkScreen

        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, MarkScreen), what="mark modal")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MarkScreen), what="mark modal closed")
        await pilot.pause(0.3)
        assert journal.states() == {}

    drive(app, scenario)


def test_note_from_the_ui(plan_file: Path):
    app, journal = open_app(plan_file)

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("e", *"keep AQ-MedAI d2t", "enter")
        await until(pilot, lambda: "keep AQ-MedAI d2t" in detail(app), what="note shown")
        assert [n.text for n in journal.notes("0.1")] == ["keep AQ-MedAI d2t"]

    drive(app, scenario)


# -- live journal and plan file -------------------------------------------------------------------------

def test_a_mark_from_another_process_shows_in_the_tree(plan_file: Path):
    app, _ = open_app(plan_file)

    async def scenario(pilot):
        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None, what="ready")
        assert label(app, "0.2").startswith("○") and "⇠" in label(app, "0.2")  # needs 0.1, not done
        out = await asyncio.to_thread(clikit.run, ["mark", plan_file, "0.1", "completed"], timeout=60)
        assert out.returncode == 0, out.stderr
        await until(pilot, lambda: label(app, "0.1").startswith("✔"), what="other process's mark shown")
        assert "⇠" not in label(app, "0.2")  # its need is met now
        assert label(app, "0").startswith("◐")  # the phase follows its steps

    drive(app, scenario)


def test_a_running_step_shows_its_elapsed_time(plan_file: Path):
    other = Journal.for_plan(load_plan(plan_file))
    other.begin_run("0.1", command="true", log=None)
    other.close()
    app, _ = open_app(plan_file)

    async def scenario(pilot):
        await until(pilot, lambda: "⟳" in label(app, "0.1"), what="elapsed shown")
        assert label(app, "0.1").startswith("◐")

    drive(app, scenario)


def test_live_plan_edit_rename_break_fix(plan_file: Path):
    app, journal = open_app(plan_file)

    async def scenario(pilot):
        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None, what="ready")
        await asyncio.to_thread(journal.mark, "1.1", "skipped")
        await until(pilot, lambda: label(app, "1.1").startswith("⊘"), what="skipped shown")
        await select(pilot, "1.1")
        banner = app.query_one("#banner")

        plan_file.write_text(PLAN.replace("Extract hidden states", "Extract hidden states v2"))
        await until(pilot, lambda: "v2" in label(app, "1.1"), what="rename shown")
        assert label(app, "1.1").startswith("⊘")  # the id kept its state
        assert app.ctx.selected_step_id == "1.1"  # and the selection stayed
        assert not banner.display

        plan_file.write_text(PLAN.replace('priority = "low"', 'priority = "urgent"'))  # a plan error
        await until(pilot, lambda: banner.display, what="banner")
        line = PLAN.splitlines().index('priority = "low"') + 1
        assert f"plan.toml:{line}:" in banner.render().plain, banner.render().plain
        assert "v2" in label(app, "1.1")  # the last good plan stays on screen

        invalid = banner.render().plain
        plan_file.write_text(PLAN + '\n  [[phase.step]]\n  id = "1.3"\n  title = \n')  # a TOML syntax error
        await until(pilot, lambda: banner.render().plain != invalid, what="syntax error in the banner")
        loc = banner.render().plain.split("plan.toml:", 1)[1].split(":")
        assert loc[0].isdigit() and loc[1].isdigit(), loc  # file:line:column

        plan_file.write_text(PLAN)
        await until(pilot, lambda: not banner.display, what="banner gone")
        await until(pilot, lambda: "v2" not in label(app, "1.1"), what="fixed plan shown")

    drive(app, scenario)


def test_adding_a_step_rebuilds_and_keeps_selection(plan_file: Path):
    app, _ = open_app(plan_file)

    async def scenario(pilot):
        from eagle_console.tui.panes.plan_tree import PlanPane

        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None, what="ready")
        await select(pilot, "0.2")
        plan_file.write_text(PLAN + '\n  [[phase.step]]\n  id = "1.2"\n  title = "Train"\n  run = "true"\n')
        await until(pilot, lambda: "1.2" in app.query_one(PlanPane)._item_nodes, what="new step shown")
        await pilot.pause()
        assert app.ctx.selected_step_id == "0.2"

    drive(app, scenario)


# -- readonly, help, tabs, layout, palette --------------------------------------------------------------

def test_readonly_hides_and_refuses_every_changing_key(tmp_path):
    app, _, journal = make(tmp_path, readonly=True)

    async def scenario(pilot):
        await select(pilot, "0.1")
        shown = shown_actions(app)
        assert {"help", "quit", "follow", "filter"} <= shown
        for action in CHANGING:
            assert app.check_action(action, ()) is False
            assert action not in shown
        for key in ("m", "e", "r", "u", "K", "n"):
            await pilot.press(key)
        await pilot.pause(0.3)
        assert app.screen is app.screen_stack[0]  # no modal opened
        assert journal.runs() == [] and journal.statuses() == {}
        assert "read-only" in app.query_one("#header").render().plain

    drive(app, scenario)


def test_help_lists_every_key(tmp_path):
    app, _, _ = make(tmp_path)

    async def scenario(pilot):
        from eagle_console.tui.screens.help import HelpScreen

        assert set(CHANGING) <= shown_actions(app)  # what a read-only console hides is shown here
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        firsts = {line.split("  ")[0].strip() for line in app.screen.query_one("#help-keys").render().plain.splitlines()}
        assert {"r", "n", "m", "u", "K", "e", "f", "/", "?", "q", "1…6", "ctrl+p"} <= firsts, firsts
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")

    drive(app, scenario)


def test_number_keys_switch_tabs(plan_file: Path):
    app, _ = open_app(plan_file)

    async def scenario(pilot):
        tabs = app.query_one("#logs")
        for key, tab in (("3", "output"), ("5", "results"), ("1", "server")):
            await pilot.press(key)
            assert tabs.active == tab

    drive(app, scenario)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_layout_fits_small_and_large_terminals(plan_file: Path, size: tuple[int, int]):
    app, _ = open_app(plan_file)

    async def scenario(pilot):
        from eagle_console.tui.panes.plan_tree import PlanPane

        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None, what="ready")
        await pilot.pause()
        tree = app.query_one(PlanPane)
        long_label = label(app, "0.2")
        # a step line: its guide (guide_depth cells), the label, two border cells and the scrollbar
        assert len(long_label) + tree.guide_depth + 3 <= tree.size.width
        if size[0] == 80:
            assert "… ⇠" in long_label  # the title gives way, the unmet-needs mark stays
            assert tree.size.width >= 40  # the tree takes the larger share on a narrow terminal
        else:
            assert "will not fi" in long_label  # far more of the title than at 80 columns

    drive(app, scenario, size=size)


def test_export_from_the_palette_writes_beside_the_state_dir(plan_file: Path):
    app, _ = open_app(plan_file)
    target = app.ctx.plan.state_dir.parent / "tuitest.md"

    async def scenario(pilot):
        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id is not None, what="ready")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Export plan (markdown)")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, target.exists, what="export written")
        await until(pilot, lambda: any(n.startswith("exported (markdown) to ") for n in notices(app)),
                    what="export notification")

    drive(app, scenario)
    text = target.read_text()
    assert "# Console test plan" in text and "0.2" in text


def test_titles_are_shown_as_written_not_as_markup(tmp_path: Path):
    """A title is text, not Rich markup: brackets and :codes: show as typed (a "[/]" used to crash the tree)."""
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\nid = "markup"\ntitle = "t"\nnode = "2x [PCIe] box"\n\n[[phase]]\nid = "0"\n'
                    'title = "Probe [/] [bold]x"\n\n'
                    '[[phase.step]]\nid = "0.1"\ntitle = "Check [red]vocab[/red] :rocket:"\nrun = "true"\n')
    app, _ = open_app(path)

    async def scenario(pilot):
        await until(pilot, lambda: app.snapshot is not None and app.ctx.selected_step_id == "0.1", what="ready")
        assert "Probe [/] [bold]x" in label(app, "0")
        assert "Check [red]vocab[/red] :rocket:" in label(app, "0.1")
        assert "2x [PCIe] box" in str(app.query_one("#header").render())

    drive(app, scenario)


# -- r, n, u, q, K: real runs ---------------------------------------------------------------------------

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
        await until(pilot, lambda: "0.1 is manual: do it by hand and mark it (m)" in notices(app), what="manual")
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
    from eagle_console.tui.screens import kill

    app, _, _ = make(tmp_path)

    async def scenario(pilot):
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, kill.KillScreen), what="kill modal")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, kill.KillScreen), what="kill modal closed")

    drive(app, scenario)
