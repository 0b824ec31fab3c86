"""A followed log draws a row once: rows kept on screen by a repaint or a scroll are not styled and cut
again (Toolong's model: an LRU of drawn lines, only the lines on screen drawn), and what is kept never shows
stale text or colours."""

from __future__ import annotations

import asyncio

from rich.style import Style
from textual.app import App
from tuikit import screen_text


class Counting:
    """A styler that counts the lines it is asked about and colours errors by the current theme."""

    def __init__(self) -> None:
        self.calls = 0
        self.app: App | None = None

    def __call__(self, line: str) -> Style | None:
        self.calls += 1
        if "ERROR" in line and self.app is not None:
            return Style(color="red" if self.app.theme == "textual-dark" else "blue")
        return None


def _app(styler: Counting):
    from eagle_console.tui.panes.logview import LogView

    class One(App):
        def compose(self):
            yield LogView(max_lines=500, styler=styler)

    app = One()
    styler.app = app
    return app


def test_a_repaint_and_a_scroll_restyle_no_row_still_on_screen() -> None:
    from eagle_console.tui.panes.logview import LogView

    styler = Counting()
    app = _app(styler)

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.add_lines([f"line {i}" for i in range(300)])
            await pilot.pause()
            rows = view.body.scrollable_content_region.height
            first = styler.calls
            assert rows <= first <= 2 * rows  # the rows on screen, not the 300 lines
            for _ in range(3):  # three full repaints of the same rows
                view.body.refresh()
                await pilot.pause()
            assert styler.calls == first
            view.body.action_scroll_up()  # one row up: one new row to draw
            await pilot.pause()
            assert styler.calls == first + 1
            assert f"line {299 - rows}" in screen_text(app)

    asyncio.run(main())


def test_kept_rows_follow_the_lines_and_the_theme() -> None:
    """Rows are kept by line number: lines falling off a full buffer, a filter and a theme switch still
    show the right text in the right colour."""
    from eagle_console.tui.panes.logview import LogView

    styler = Counting()
    app = _app(styler)

    def colour_of(text: str) -> str | None:
        body = app.query_one(LogView).body
        for y in range(body.size.height):
            strip = body.render_line(y)
            if text in strip.text:
                return next(s.style.color.name for s in strip if s.style and s.style.color)
        return None

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            app.theme = "textual-dark"
            view = app.query_one(LogView)
            view.add_lines([f"old {i}" for i in range(500)])
            await pilot.pause()
            view.add_lines([f"new {i}" for i in range(400)] + ["ERROR at the end"])  # 401 old lines fall off
            await pilot.pause()
            text = screen_text(app)
            assert "ERROR at the end" in text and "new 399" in text and "old 499" not in text
            assert colour_of("ERROR at the end") == "red"
            app.theme = "textual-light"
            await pilot.pause()
            assert colour_of("ERROR at the end") == "blue"
            view.set_filter("^old")
            await pilot.pause()
            text = screen_text(app)
            assert "old 499" in text and "ERROR" not in text

    asyncio.run(main())
