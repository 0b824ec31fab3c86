"""The log panes inside the whole console (App.run_test): what issue 26 saw on the demo — a run's Output tab
blank once the log brought in the scrollbar — and log lines of wide characters kept inside their pane."""

from __future__ import annotations

import pytest
from tuikit import drive, open_app, screen_text, until


@pytest.fixture
def demo(tmp_path, monkeypatch):
    from eagle_console.demo.build import build_demo, stop_leftovers

    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    plan_path = build_demo(tmp_path)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(tmp_path / "sim"))
    yield plan_path, tmp_path / "sim"
    stop_leftovers(tmp_path)


def output_rows(app) -> list[str]:
    """The Output pane's rows as the screen shows them."""
    from eagle_console.tui.panes.output import OutputPane

    region = app.query_one(OutputPane).view.body.region
    lines = screen_text(app).splitlines()
    return [lines[y][region.x:region.right] if y < len(lines) else "" for y in range(region.y, region.bottom)]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_the_output_tab_shows_the_log_of_a_step_just_run(demo, size):
    plan_path, sim = demo
    app, journal = open_app(plan_path, sim_dir=sim)

    async def scenario(pilot):
        await pilot.press("n")
        await until(pilot, lambda: "Enter confirm" in screen_text(app), what="the confirmation")
        await pilot.press("enter")
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", timeout=40, what="0.1 completed")
        await until(pilot, lambda: "the action completed" in "".join(app.query_one("OutputPane").view.shown_lines[-1:]),
                    timeout=10, what="the whole log read")
        await pilot.pause(0.5)
        rows = "".join(output_rows(app))  # joined: a narrow pane wraps the lines
        assert "::result killed=2" in rows and "the action completed" in rows, "\n".join(output_rows(app))

    drive(app, scenario, size=size)
