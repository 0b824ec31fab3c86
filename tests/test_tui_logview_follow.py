"""A following log pane shows its last rows however its lines arrive: issue 26's Output tab at 80x24 (a CI
run of tests/e2e/test_tmux_logpanes.py showed it) — the tab shown by the run and the step's whole log in the
same moment — stayed on the log's first rows, its status saying "following · 5 lines"."""

from __future__ import annotations

import asyncio

import pytest
from test_tui_logview_app import CJK
from textual.app import App
from textual.containers import Vertical

LINES = [f"[eagle-console] run 1 of step 0.1 (id 1) started at 2026-12-05 13:01:51: /bin/bash -c echo '{CJK * 3}'",
         CJK * 3, f"mixed {CJK}", "ascii after", "[eagle-console] the action completed"]


class OnePane(App):
    CSS = "Vertical { width: 36; height: 14; }"  # the Output pane's size at 80x24

    def compose(self):
        from eagle_console.tui.panes.logview import LogView

        with Vertical():
            yield LogView(max_lines=500)


@pytest.mark.parametrize("hidden", [True, False], ids=["shown-with-its-lines", "shown-before"])
@pytest.mark.parametrize("first", [0, 2], ids=["one-batch", "two-batches"])
def test_a_following_pane_ends_on_its_last_rows(hidden: bool, first: int) -> None:
    from eagle_console.tui.panes.logview import LogView

    app = OnePane()

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.display = not hidden
            await pilot.pause()
            view.add_lines(LINES[:first])
            await pilot.pause()
            view.display = True  # the run shows its Output tab as the lines come
            view.add_lines(LINES[first:])
            await pilot.pause()
            await pilot.pause(0.2)
            body = view.body
            rows = [body.render_line(y).text for y in range(body.size.height)]
            assert view.following and body.max_scroll_y > 0
            assert body.scroll_offset.y == body.max_scroll_y, rows  # old: 0, the log's first rows
            assert any("ascii after" in row for row in rows), rows

    asyncio.run(main())
