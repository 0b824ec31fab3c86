"""The Output pane follows the selected step's real run log: batches, follow/pause with a waiting count, filter."""

from __future__ import annotations

import asyncio
import re
import time

from enginekit import write_plan
from textual.app import App
from tuikit import until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.tui.context import ConsoleContext
from eagle_console.tui.messages import StepSelected
from eagle_console.tui.panes.output import OutputPane

PLAN = """
[[phase]]
id = "0"
title = "p"

[[phase.step]]
id = "0.1"
title = "writer"
run = "echo started"

[[phase.step]]
id = "0.2"
title = "other"
run = "echo other"
"""


class OutApp(App):
    def __init__(self, ctx, max_lines: int = 10_000) -> None:
        super().__init__()
        self.ctx, self.max_lines = ctx, max_lines

    def compose(self):
        yield OutputPane(self.ctx, max_lines=self.max_lines)


def ctx_with_logs(tmp_path):
    path = write_plan(tmp_path, PLAN)
    plan = load_plan(path)
    journal = Journal.for_plan(plan)
    logs = {}
    for sid in ("0.1", "0.2"):
        log = tmp_path / f"{sid}.log"
        log.write_text(f"first line of {sid}\n")
        journal.begin_run(sid, command="x", log=str(log))
        logs[sid] = log
    return ConsoleContext(plan_path=path, plan=plan, journal=journal, selected_step_id="0.1"), logs


def append(path, lines):
    with open(path, "a") as f:
        f.write("".join(f"{s}\n" for s in lines))


def test_follow_pause_filter_and_switching_steps(tmp_path):
    ctx, logs = ctx_with_logs(tmp_path)
    app = OutApp(ctx, max_lines=500)

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            pane = app.query_one(OutputPane)
            view = pane
            await until(pilot, lambda: view.shown_lines == ["first line of 0.1"], what="existing line")
            append(logs["0.1"], [f"line {i}" for i in range(1000)])
            await until(pilot, lambda: view.received == 1001, what="1000 new lines")
            assert len(view.buffer) == 500 and view.shown_lines[-1] == "line 999"  # bounded
            await until(pilot, lambda: view.body.scroll_offset.y == view.body.max_scroll_y > 0,
                        what="following: at the bottom")
            # scrolling up pauses; new lines are counted, the view stays where it is
            view.body.focus()
            await pilot.press("pageup")
            await until(pilot, lambda: not view.following, what="paused by scrolling up")
            top = view.body.scroll_offset.y
            append(logs["0.1"], ["late 1", "late 2", "error: late 3"])
            await until(pilot, lambda: view.waiting == 3, what="3 waiting lines")
            assert "PAUSED: 3 new lines" in str(view.status.render())
            assert view.body.scroll_offset.y <= top
            pane.toggle_follow()
            assert view.following
            await until(pilot, lambda: view.body.scroll_offset.y == view.body.max_scroll_y, what="back at bottom")
            # filter: regex, then inverted
            pane.open_filter()
            await until(pilot, lambda: view.filter_input.has_focus, what="filter input focused")
            for ch in "^late":
                await pilot.press(ch)
            await pilot.press("enter")
            assert view.shown_lines == ["late 1", "late 2"]
            view.set_filter("!^line")
            assert view.shown_lines == ["late 1", "late 2", "error: late 3"]
            append(logs["0.1"], ["line 1000", "late 4"])
            await until(pilot, lambda: view.shown_lines[-1] == "late 4", what="filtered follow")
            assert "line 1000" not in view.shown_lines
            pane.open_filter()
            await until(pilot, lambda: view.filter_input.has_focus, what="filter input focused again")
            view.filter_input.value = "("
            await pilot.press("enter")
            assert "bad filter" in str(view.status.render())
            view.set_filter("")
            # another step: its own log
            pane.post_message(StepSelected("0.2"))
            await until(pilot, lambda: view.shown_lines == ["first line of 0.2"], what="switched log")
            pane.post_message(StepSelected(None))
            await until(pilot, lambda: view.shown_lines == [] and "no step" in str(view.status.render()),
                        what="no step")

    asyncio.run(main())


def test_a_flood_is_delivered_in_few_batches(tmp_path):
    """50k lines written at once reach the view whole, in a handful of widget updates, not 50k."""
    ctx, logs = ctx_with_logs(tmp_path)
    app = OutApp(ctx)
    batches: list[int] = []

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.query_one(OutputPane)
            await until(pilot, lambda: view.received == 1, what="start")
            real = view.add_lines

            def counting(lines, received=None):
                batches.append(len(lines))
                real(lines, received)

            view.add_lines = counting
            t0 = time.monotonic()
            append(logs["0.1"], [f"flood {i:06d} " + "x" * 80 for i in range(50_000)])
            await until(pilot, lambda: view.received == 50_001, timeout=30, what="flood delivered")
            assert view.shown_lines[-1].startswith("flood 049999")
            assert len(view.buffer) == 10_000
            assert 1 <= len([b for b in batches if b]) <= 50, (batches, time.monotonic() - t0)

    asyncio.run(main())


def test_the_status_line_puts_the_state_first_and_the_path_last_at_80_columns(tmp_path):
    """It began with the whole log path, so at 80 columns (and even 120) "following"/"PAUSED", the filter and
    the counts were cut off the end (issue #17)."""
    from tuikit import drive, open_app, screen_text

    deep = tmp_path / "a-state-dir-as-long-as-real-ones-are" / "runs" / "0.1"
    deep.mkdir(parents=True)
    log = deep / "0.1-run-1.log"
    log.write_text("first line\nlate 1\n")
    app, journal = open_app(write_plan(tmp_path, PLAN))
    journal.begin_run("0.1", command="x", log=str(log))
    journal.close()

    def status_row() -> str:
        rows = [r for r in screen_text(app).splitlines() if re.search(r"\d lines( ·|…)", r)]
        return rows[0] if rows else ""

    async def scenario(pilot):
        await until(pilot, lambda: app.ctx.selected_step_id == "0.1", what="ready")
        await pilot.press("3")  # the Output tab: the selected step's log
        await until(pilot, lambda: "following · 2 lines · f pauses · /" in status_row(), what="following, 2 lines")
        assert status_row().rstrip().endswith("…"), status_row()  # the path is what gets cut
        await pilot.press("f")
        append(log, ["late 2", "other"])
        await until(pilot, lambda: "PAUSED: 2 new lines · 4 lines" in status_row(), what="paused")
        await pilot.press("f", "slash")
        for ch in "^late":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: "following · /^late/ 2/4 lines · f" in status_row(),
                    what="the filter and its counts")

    drive(app, scenario, size=(80, 24))


def test_long_lines_wrap_and_w_turns_it_off(tmp_path):
    """A line wider than the pane is shown whole on several rows (it was cut at the pane's edge); the view
    still follows the last row; `w` goes back to one row per line."""
    ctx, logs = ctx_with_logs(tmp_path)
    app = OutApp(ctx)
    long_line = "traceback: " + " ".join(f"frame{i:03d}" for i in range(30))  # ~330 characters

    async def main() -> None:
        async with app.run_test(size=(60, 20)) as pilot:
            view = app.query_one(OutputPane)
            await until(pilot, lambda: view.received == 1, what="start")
            append(logs["0.1"], [long_line, "after it"])
            await until(pilot, lambda: view.received == 3, what="long line")
            await pilot.pause()
            screen = "".join(str(view.body.render_line(y).text) for y in range(view.body.size.height))
            assert "frame029" in screen and "after it" in screen, screen  # the end of the long line is shown
            assert view.body.virtual_size.height > 3  # the long line takes several rows
            assert view.body.scroll_offset.y == view.body.max_scroll_y  # still following
            view.body.focus()
            await pilot.press("w")
            await pilot.pause()
            assert view.body.virtual_size.height == 3
            rows = [str(view.body.render_line(y).text).rstrip() for y in range(3)]
            assert rows[1].startswith("traceback: frame000") and "frame029" not in rows[1], rows

    asyncio.run(main())
