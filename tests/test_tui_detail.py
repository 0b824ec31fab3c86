"""The Detail line's drafter verdict follows the files and the journal, not the cursor (issue #17): after a real
run of the demo's 0.2 (json.set fixes max_position_embeddings, drafter.check passes) it says "ok", after the
rollback restores 131072 it says "NOT ok" again, both without the cursor moving."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tuikit import drive, open_app, select, until


@pytest.fixture
def demo(tmp_path, monkeypatch):
    from eagle_console.demo.build import build_demo, stop_leftovers

    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    plan_path = build_demo(tmp_path, orphans=0)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(tmp_path / "sim"))
    yield plan_path, tmp_path / "sim"
    stop_leftovers(tmp_path)


def drafter_line(app) -> str:
    lines = [x for x in app.query_one("#detail").render().plain.splitlines() if x.startswith("drafter check")]
    return lines[-1] if lines else ""


def test_drafter_verdict_follows_the_run_and_its_rollback_without_moving_the_cursor(demo):
    plan_path, sim = demo
    app, journal = open_app(plan_path, sim_dir=sim)
    config = Path(app.ctx.plan.step("0.2").action.with_["path"])

    async def scenario(pilot):
        await select(pilot, "0.2")
        await until(pilot, lambda: "NOT ok" in drafter_line(app) and "CONTEXT_LENGTH" in drafter_line(app),
                    what="the broken drafter's verdict")
        await pilot.press("r")
        await until(pilot, lambda: journal.statuses().get("0.2") == "completed", timeout=40, what="0.2 completed")
        assert json.loads(config.read_text())["max_position_embeddings"] == 262144
        await until(pilot, lambda: drafter_line(app).startswith("drafter check ok"), timeout=10,
                    what="the verdict after the fix")
        assert app.ctx.selected_step_id == "0.2"
        await pilot.press("u")  # the rollback restores 131072
        await until(pilot, lambda: "Enter roll back" in str(app.screen.query("#dialog-keys").first().render())
                    if app.screen.query("#dialog-keys") else False, what="the rollback dialog")
        await pilot.press("enter")
        await until(pilot, lambda: journal.statuses().get("0.2") == "rolled_back", timeout=40, what="rolled back")
        assert json.loads(config.read_text())["max_position_embeddings"] == 131072
        await until(pilot, lambda: "NOT ok" in drafter_line(app), timeout=10, what="the verdict after the rollback")
        assert app.ctx.selected_step_id == "0.2"

    drive(app, scenario)


def test_drafter_verdict_follows_an_edit_made_outside_the_console(demo):
    """No journal event at all: the checked file's mtime alone brings the verdict up to date."""
    plan_path, sim = demo
    app, _ = open_app(plan_path, sim_dir=sim)
    config = Path(app.ctx.plan.step("0.2").action.with_["path"])

    async def scenario(pilot):
        await select(pilot, "0.2")
        await until(pilot, lambda: "NOT ok" in drafter_line(app), what="the broken drafter's verdict")
        doc = json.loads(config.read_text())
        doc["max_position_embeddings"] = 262144
        config.write_text(json.dumps(doc, indent=2))
        await until(pilot, lambda: drafter_line(app).startswith("drafter check ok"), timeout=10,
                    what="the verdict after the edit")

    drive(app, scenario)


def test_the_detail_line_says_what_u_does_and_toasts_stay_off_it_when_findings_grow_it(demo):
    """The Detail line named "built-in undo" for built-ins whose undo is a mark; and its drafter findings,
    read after the selection moved, made it taller under toasts placed for its old height (issue #17)."""
    plan_path, sim = demo
    app, _ = open_app(plan_path, sim_dir=sim)

    def detail() -> str:
        return app.query_one("#detail").render().plain

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        assert "rollback: marks rolled back" in detail() and "built-in undo" not in detail(), detail()
        before = app.query_one("#detail").outer_size.height
        await select(pilot, "0.2")
        await until(pilot, lambda: "NOT ok" in drafter_line(app), what="the drafter findings")
        await until(pilot, lambda: app.query_one("#detail").outer_size.height > before, what="the line grown")
        await pilot.pause(0.2)
        app.notify("a notice long enough to take a few lines of a toast at eighty columns", timeout=30)
        toasts = await until(pilot, lambda: list(app.screen.query("Toast")), what="a toast")
        await pilot.pause(0.3)
        for toast in toasts:
            assert not toast.region.overlaps(app.query_one("#detail").region), (toast.region, detail())

    drive(app, scenario, size=(80, 24))


def test_the_log_path_is_shown_relative_to_the_plan_folder_at_80x24(tmp_path):
    """The whole absolute path took a third Detail row at 80x24 (issue #17): under the plan's folder it is
    relative to it, under the home folder it starts with ~, elsewhere it stays whole."""
    from enginekit import write_plan

    from eagle_console.tui.panes.detail import shown_path

    assert shown_path(str(tmp_path / "logs" / "a.log"), tmp_path) == "logs/a.log"
    assert shown_path(str(Path.home() / "x" / "b.log"), tmp_path) == "~/x/b.log"
    assert shown_path("/var/log/c.log", tmp_path) == "/var/log/c.log"
    plan = write_plan(tmp_path, '[[phase]]\nid = "0"\ntitle = "p"\n[[phase.step]]\nid = "0.1"\ntitle = "t"\n'
                                'run = "true"\n')
    log = tmp_path / "a-long-state-folder-name-as-real-ones-have" / "logs" / "0.1-run-1.log"
    log.parent.mkdir(parents=True)
    log.write_text("x\n")
    app, journal = open_app(plan)
    journal.begin_run("0.1", command="true", log=str(log))

    async def scenario(pilot):
        await select(pilot, "0.1")
        await until(pilot, lambda: "log a-long-state-folder-name-as-real-ones-have/logs/0.1-run-1.log"
                    in app.query_one("#detail").render().plain, what="the relative path")
        assert str(tmp_path) not in app.query_one("#detail").render().plain

    drive(app, scenario, size=(80, 24))


def test_a_long_command_takes_one_row_of_the_detail_line_at_80x24(tmp_path):
    """The first line (the step's command and rollback) wrapped onto four rows at 80x24 and pushed the log
    tabs down to a few rows; it is one row, cut with …, and the Step pane shows the command whole."""
    from enginekit import write_plan

    long_run = "python -m some.module --out " + "/data/hidden_states/" * 6 + " --samples 300 --rate 15"
    plan = write_plan(tmp_path, f'[[phase]]\nid = "0"\ntitle = "p"\n[[phase.step]]\nid = "0.1"\ntitle = "t"\n'
                                f'run = "{long_run}"\nrollback = "rm -rf /data/hidden_states"\n')
    app, _journal = open_app(plan)

    async def scenario(pilot):
        await select(pilot, "0.1")
        detail = app.query_one("#detail")
        await until(pilot, lambda: detail.render().plain.startswith("0.1 · python -m some.module"),
                    what="the detail line")
        first = detail.render().plain.splitlines()[0]
        assert first.endswith("…") and len(first) <= detail.content_size.width, first
        assert "--rate 15" in app.query_one("#step-info-text").render().plain  # whole in the Step pane

    drive(app, scenario, size=(80, 24))
