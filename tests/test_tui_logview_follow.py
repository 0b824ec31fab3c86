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


def run_deferred_before_layout(app: App, body) -> None:
    """The order the floors suite met, made: the body's after-refresh callbacks reach the screen's queue
    (as its InvokeLater messages do) while its layout request (posted from its idle) has not."""
    from textual.messages import InvokeLater

    queue, kept = body._message_queue, []
    while not queue.empty():
        kept.append(queue.get_nowait())
    for message in kept:
        if isinstance(message, InvokeLater):
            app.screen._invoke_later(message.callback, body)
        else:
            queue.put_nowait(message)


@pytest.mark.parametrize("how", ["add_lines", "resume", "set_filter"])
def test_a_following_pane_ends_at_the_bottom_when_callbacks_run_before_layout(how: str) -> None:
    """The floors suite once saw a following Output pane stay on its first rows after 1,000 lines came in one
    batch. A deferred `scroll_end` runs from the screen's queue of after-refresh callbacks, and the screen
    runs that queue when it goes idle with no layout pending (textual/screen.py `Screen._on_idle`), which
    can come before the body's own idle posts the layout its new size needs: the callback then found no
    scrollbar yet and Textual dropped the scroll (`Widget._scroll_to`: `allow_vertical_scroll or force`).
    Here the screen runs its queue at once after the lines came, as that order does."""
    from eagle_console.tui.panes.logview import LogView

    app = OnePane()

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.add_lines(["one line"])
            await pilot.pause()
            assert not view.body.show_vertical_scrollbar  # what the batch below finds
            lines = [f"line {i}" for i in range(1000)]
            if how == "add_lines":
                view.add_lines(lines)
            elif how == "resume":
                view.pause()
                view.add_lines(lines)
                view.resume()
            else:
                view.set_filter("^nothing")
                view.add_lines(lines)
                view.set_filter("")
            run_deferred_before_layout(app, view.body)
            await app.screen._invoke_and_clear_callbacks()
            await pilot.pause()
            await pilot.pause(0.2)
            body = view.body
            assert view.following and body.max_scroll_y > 0
            assert body.scroll_offset.y == body.max_scroll_y  # old: 0, the first rows, "following"

    asyncio.run(main())
