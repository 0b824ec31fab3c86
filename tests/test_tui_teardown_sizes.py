"""The console's size fitting while its screen is being torn down. A CI run (the floors suite: Python 3.10,
Textual 6.0.0, test_demo_hangup's SIGTERM with the console up) saw the console die on `NoMatches: No nodes
match '#left'` as it quit, and exit 1 instead of 128+15: a Resize or a toast's placing came after the Plan
column was gone, and `fit.columns` and `toasts.width` both asked for it with `query_one`. Here the column is
removed by hand (the state teardown leaves), then a resize and a toast come: nothing raises."""

from __future__ import annotations

from enginekit import write_plan
from tuikit import drive, open_app

from eagle_console.tui import fit, toasts

PLAN = """
[[phase]]
id = "0"
title = "P"

[[phase.step]]
id = "0.1"
title = "s"
run = "true"
"""


def test_a_resize_and_a_toast_after_the_plan_column_is_gone(tmp_path):
    app, journal = open_app(write_plan(tmp_path, PLAN))
    journal.close()
    seen: list[object] = []

    async def scenario(pilot) -> None:
        await app.query_one("#left").remove()
        await pilot.pause()
        fit.columns(app, 100)  # raised NoMatches
        # raised NoMatches; the left column away, a toast gets its zoomed-away width
        seen.append((toasts.width(app), max(20, int(app.size.width * toasts.ZOOMED_WIDTH))))
        await pilot.resize_terminal(100, 30)
        await pilot.pause()

    drive(app, scenario)
    (got, zoomed_away), = seen
    assert got == zoomed_away, seen  # the width a toast gets with the left column away
    assert app.return_code in (None, 0), app._exception
