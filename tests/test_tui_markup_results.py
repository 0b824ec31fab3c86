"""Nothing from a step, a log, the journal or the plan is read as Rich markup (issue #18: a step printing
`::result r=[/]` crashed every console opened on that plan, forever)."""

from __future__ import annotations

import clikit
from enginekit import write_plan
from tuikit import drive, open_app, screen_text, select, until

HOSTILE = "[/]", "[bold red]loud", "[@click=app.quit]x[/]"

PLAN = """
[[phase]]
id = "0"
title = "P [/] phase"

  [[phase.step]]
  id = "0.1"
  title = "prints [/] results"
  description = "a [bold]description[/bold] with [/] in it"
  run = "echo '::result r=[/]'; echo '::result s=[bold red]loud'; echo '::result t=[@click=app.quit]x[/]'; echo '[/] out'"

  [[phase.step]]
  id = "0.2"
  title = "[/] manual step"
"""


def test_console_opens_on_a_journal_holding_markup_results(tmp_path):
    plan = write_plan(tmp_path, PLAN)
    ran = clikit.run(["run", plan, "0.1", "--wait"], timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    app, journal = open_app(plan)
    seen: list[str] = []

    async def scenario(pilot):
        await until(pilot, lambda: "0.1" in screen_text(app), what="the tree")
        await select(pilot, "0.1")
        await pilot.press("5")  # the Results tab
        await pilot.pause(1.0)
        await pilot.press("3")  # the Output tab
        await pilot.pause(1.0)
        seen.append(screen_text(app))
        await pilot.press("n")  # the next step is manual: a toast quoting its title
        await until(pilot, lambda: any("manual" in str(n.message) for n in app._notifications), what="toast")
        await pilot.pause(0.3)
        seen.append(screen_text(app))

    drive(app, scenario)
    journal.close()
    assert app.return_code in (None, 0), app.return_code
    assert "prints [/] results" in seen[0] and "[/] out" in seen[0]
    assert "[/] manual step" in seen[1] or "0.2 is manual" in seen[1]
