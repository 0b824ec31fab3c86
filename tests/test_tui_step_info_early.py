"""The Step pane takes a selection that comes before its children are mounted: the tree's first highlight can
reach the app while the pane is still composing, on a loaded machine (seen in a full suite run at load 8 on 2
cores: `NoMatches: No nodes match '#step-info-text'` from StepInfo.show, and the console died). Old: show()
queried its Static, which did not exist yet."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import Static

from eagle_console.plan.loader import load_plan
from eagle_console.tui.panes.step_info import StepInfo

PLAN = '[plan]\nid = "p"\ntitle = "t"\n\n[[phase]]\nid = "0"\ntitle = "P"\n\n[[phase.step]]\nid = "0.1"\n' \
       'title = "first step"\nrun = "true"\n'


def test_a_selection_before_the_pane_is_mounted_is_shown_once_it_is(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    plan = load_plan(path)

    async def main() -> str:
        async with App().run_test() as pilot:
            pane = StepInfo()
            waiting = pilot.app.mount(pane)  # not awaited yet: the pane is not composed when the selection comes
            pane.show(plan, "0.1")
            await waiting
            await pilot.pause()
            return str(pilot.app.query_one("#step-info-text", Static).render())

    assert "first step" in asyncio.run(main())
