"""Issue 32, "Messages that mislead": what the console says after a key is true and reads as English —
a rollback's toasts say "rolled back", not "completed"; counts agree with their nouns; a phase is called a
phase; a run's name has no parentheses inside parentheses; the demo's quit says one true thing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from enginekit import engine_for, write_plan
from tuikit import drive, notices, open_app, select, until

ROLLBACK_PLAN = """
[[phase]]
id = "0"
title = "Probe"

  [[phase.step]]
  id = "0.1"
  title = "First"
  run = "echo one > one.txt"
  rollback = "rm -f one.txt"

  [[phase.step]]
  id = "0.2"
  title = "Second"
  needs = ["0.1"]
  run = "echo two > two.txt"
  rollback = "rm -f two.txt"
"""


def completed_plan(tmp_path: Path) -> Path:
    path = write_plan(tmp_path, ROLLBACK_PLAN)
    engine = engine_for(path)
    for step_id in ("0.1", "0.2"):
        engine.wait(engine.start(step_id), timeout=30)
    assert engine.statuses()["0.1"] == engine.statuses()["0.2"] == "completed"
    engine.journal.close()
    return path


def test_rolling_back_a_phase_says_each_step_rolled_back_not_completed(tmp_path):
    app, journal = open_app(completed_plan(tmp_path))

    async def scenario(pilot):
        from eagle_console.tui.screens.rollback import RollbackScreen

        await select(pilot, "0")
        await pilot.press("u")
        screen = await until(pilot, lambda: isinstance(app.screen, RollbackScreen) and app.screen,
                             what="the rollback dialog")
        title = str(screen.query_one("#dialog-title").render())
        assert title == "Roll back phase 0, in this order:", title  # was "Roll back 0, …" (a phase)
        await pilot.press("enter")
        await until(pilot, lambda: "rollback of 0 completed" in notices(app), what="the rollback's end")
        said = notices(app)
        assert "0.2 rolled back" in said and "0.1 rolled back" in said, said
        assert not [n for n in said if n.endswith(" completed") and not n.startswith("rollback of")], said
        assert any(n.startswith("rolling back phase 0: 2 steps (rollback ") for n in said), said

    drive(app, scenario)
    assert journal.statuses()["0.1"] == journal.statuses()["0.2"] == "rolled_back"
    journal.close()


def test_the_cascade_title_has_one_space_and_a_single_step_is_one_step(tmp_path):
    app, journal = open_app(completed_plan(tmp_path))
    journal.close()

    async def scenario(pilot):
        from eagle_console.tui.screens.rollback import RollbackScreen

        await select(pilot, "0.1")  # 0.2 needs it: the dialog opens on the cascade order
        await pilot.press("u")
        screen = await until(pilot, lambda: isinstance(app.screen, RollbackScreen) and app.screen,
                             what="the rollback dialog")
        title = str(screen.query_one("#dialog-title").render())
        assert title == "Roll back 0.1 with its dependents, in this order:", title  # was "0.1  with"
        await pilot.press("escape")
        await select(pilot, "0.2")
        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, RollbackScreen), what="the dialog for 0.2")
        await pilot.press("enter")
        await until(pilot, lambda: any(n.startswith("rolling back 0.2: 1 step (rollback ") for n in notices(app)),
                    what="one step, not 1 step(s)")

    drive(app, scenario)


def test_starting_a_step_names_its_run_without_nested_parentheses(tmp_path):
    app, journal = open_app(write_plan(tmp_path, ROLLBACK_PLAN))

    async def scenario(pilot):
        await select(pilot, "0.1")
        await pilot.press("r")
        said = await until(pilot, lambda: [n for n in notices(app) if "started" in n], what="the start toast")
        run = journal.latest_run("0.1")
        assert said == [f"started run 1 of step 0.1 (id {run.id})"], said  # was "0.1 started (run 1 of … (id 1))"
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", what="0.1 done")

    drive(app, scenario)
    journal.close()


def test_the_log_status_line_counts_one_line_as_one_line(tmp_path):
    from textual.app import App

    from eagle_console.tui.panes.logview import LogView

    class One(App):
        def compose(self):
            yield LogView()

    app = One()

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.clear(str(tmp_path / "a.log"))
            view.add_lines(["only"])
            await pilot.pause()
            assert str(view.status.render()).startswith("following · 1 line · f pauses"), view.status.render()
            view.add_lines(["two"])
            await pilot.pause()
            assert "· 2 lines ·" in str(view.status.render())

    asyncio.run(main())


def test_the_demos_quit_says_what_it_stopped_and_nothing_keeps_running(tmp_path):
    """The console of the demo does not say "1 run keeps running" (the demo then stops it): `q` leaves the
    line to the demo, which says what it stopped, counted in agreement with its noun."""
    from eagle_console.cli.demo_cmds import stopped_line

    body = ROLLBACK_PLAN.replace('run = "echo one > one.txt"', 'run = "sleep 30"')
    path = write_plan(tmp_path, body)
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(path)
    app = make_app(plan, Journal.for_plan(plan), runs_stop_on_quit=True)
    journal = Journal.for_plan(plan)

    async def scenario(pilot):
        await select(pilot, "0.1")
        await pilot.press("r")
        await until(pilot, lambda: journal.latest_run("0.1") and journal.latest_run("0.1").pid, what="running")
        await pilot.press("q")

    try:
        drive(app, scenario)
        assert app.quit_message is None  # no "1 run keeps running: 0.1 pid N"
        from eagle_console.cli.demo_cmds import stop_demo

        runs, count = stop_demo(path, tmp_path)
        pid = journal.latest_run("0.1").pid
        assert runs == [f"0.1 (pid {pid})"] and count >= 1, (runs, count)
    finally:
        run = journal.latest_run("0.1")
        if run and run.sid and not run.finished:
            import os

            try:
                os.killpg(run.sid, 15)
            except ProcessLookupError:
                pass
        journal.close()
    line = stopped_line(runs, count, tmp_path)
    assert line.startswith(f"stopped the demo's run of 0.1 (pid {pid}): ") and "keeps running" not in line, line
    assert stopped_line([], 1, tmp_path, before="the local Ray cluster").startswith(
        "stopped the local Ray cluster and 1 simulated process;")  # was "1 simulated processes"
