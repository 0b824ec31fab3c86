"""Nothing from a step, log, journal or plan is parsed as Rich markup: results, notes, titles and log lines
holding `[/]`, `[bold`, `[@click=quit]` show literally, and a console opened on a journal holding
`::result r=[/]` does not crash. A console that does crash exits non-zero with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from enginekit import write_plan
from tuikit import drive, notices, open_app, screen_text, select, until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

NASTY = ("[/]", "[bold", "[@click=quit]")

PLAN = """
[[phase]]
id = "0"
title = "Probe [/] phase"

[[phase.step]]
id = "0.1"
title = "print [bold a result"
run = "echo '::result r=[/]'; echo 'log [@click=quit] line [/]'"
watch = { extraction = { log = "x [/].log", output = "out", total = 3 } }
"""


@pytest.fixture(autouse=True)
def _no_gpus(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")


def test_results_notes_and_log_lines_with_brackets_are_shown_literally(tmp_path: Path):
    path = write_plan(tmp_path, PLAN)
    plan = load_plan(path)
    j = Journal.for_plan(plan)  # what a step printing these left behind: the journal keeps it forever
    j.record_result("0.1", None, "r", "[/]")
    j.record_result("0.1", None, "s", "[bold")
    j.note("0.1", "see [@click=quit] and [/]")
    j.close()
    app, journal = open_app(path)

    async def scenario(pilot):
        from eagle_console.tui.panes.results import ResultsPane

        await select(pilot, "0.1")
        await until(pilot, lambda: "see [@click=quit] and [/]" in app.query_one("#detail").render().plain,
                    what="the note in the detail line")
        await pilot.press("5")
        await until(pilot, lambda: len(app.query(ResultsPane)) and app.query_one(ResultsPane).results,
                    what="results read")
        await until(pilot, lambda: "[/]" in screen_text(app) and "[bold" in screen_text(app), what="results shown")
        await pilot.press("r")  # the run prints ::result r=[/] and a log line full of brackets
        await until(pilot, lambda: journal.latest_run("0.1") and journal.latest_run("0.1").finished, what="run end")
        await pilot.press("3")
        await until(pilot, lambda: "log [@click=quit] line [/]" in screen_text(app), what="the log line")
        await pilot.press("4")
        await until(pilot, lambda: "print [bold a result" in screen_text(app), what="the extraction title")
        journal.note("0.1", "a [/] note from elsewhere")
        app.notify("[/] from a notice [bold")  # notices quote step output: never markup
        await until(pilot, lambda: "[/] from a notice [bold" in notices(app), what="a notice")
        await pilot.pause(0.3)
        assert app.is_running and app.return_code is None

    drive(app, scenario)


def test_the_console_opened_on_a_bracketed_result_starts_and_quits_cleanly(tmp_path: Path):
    """The reporters' crash: every console opened on that plan died at start, with exit status 0."""
    path = write_plan(tmp_path, PLAN)
    plan = load_plan(path)
    j = Journal.for_plan(plan)
    j.record_result("0.1", None, "r", "[/]")
    j.close()
    app, _ = open_app(path)

    async def scenario(pilot):
        await pilot.press("5")
        await until(pilot, lambda: "[/]" in screen_text(app), what="the result on screen")
        await pilot.pause(0.5)
        assert app.is_running

    drive(app, scenario)
    assert app._exception is None


def test_a_console_that_crashes_exits_non_zero_with_the_reason(tmp_path: Path):
    """An exception inside the App used to end `eagle-console` with status 0; now 1, and the reason."""
    path = write_plan(tmp_path, PLAN)
    code = (
        "import sys\n"
        "from eagle_console.tui import app as tui_app\n"
        "def boom(self): raise RuntimeError('boom in on_mount')\n"
        "tui_app.ConsoleApp.on_mount = boom\n"
        "from eagle_console.cli.tui_cmds import open_console\n"
        f"sys.exit(open_console({str(path)!r}))\n"
    )
    env = dict(os.environ, EAGLE_CONSOLE_GPU_BACKEND="none", EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT="1")  # headless
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "boom in on_mount" in proc.stdout + proc.stderr
