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

    region = app.query_one(OutputPane).body.scrollable_content_region  # the text, not the scrollbar
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
        await until(pilot, lambda: "the action completed" in "".join(app.query_one("OutputPane").shown_lines[-1:]),
                    timeout=10, what="the whole log read")
        await pilot.pause(0.5)
        rows = "".join(output_rows(app))  # joined: a narrow pane wraps the lines
        # the pane follows the end (6 rows at 80x24): the log's last lines must be on screen
        assert "::result freed_mib_gpu5=6120.0" in rows and "the action completed" in rows, "\n".join(output_rows(app))

    drive(app, scenario, size=size)


CJK = "模型回答：我们的模型支持中文输出，这是一个很长的句子用于测试换行是否正确。"
WIDE_PLAN = f"""
[[phase]]
id = "0"
title = "wide"

[[phase.step]]
id = "0.1"
title = "print wide lines"
run = "echo 'ascii before'; echo '{CJK * 3}'; echo 'emoji 🔥👍🏽 mixed {CJK}'; echo 'ascii after'"
"""


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_wide_characters_wrap_inside_the_output_pane(tmp_path, size):
    """Each screen row keeps to the terminal's width in cells, the Step pane's right border stays where it
    is on every row of the Output pane, and the CJK line comes out whole across its rows."""
    from enginekit import write_plan
    from rich.cells import cell_len

    from eagle_console.tui.panes.output import OutputPane
    from eagle_console.tui.panes.step_info import StepInfo

    app, journal = open_app(write_plan(tmp_path, WIDE_PLAN))

    async def scenario(pilot):
        await pilot.press("r")
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", timeout=30, what="0.1 completed")
        await until(pilot, lambda: "ascii after" in app.query_one(OutputPane).shown_lines, what="the log read")
        await pilot.pause(0.5)
        body = app.query_one(OutputPane).body
        region = body.region
        width = body.scrollable_content_region.width
        for y in range(region.height):  # what the pane hands the compositor: as wide as it says, within the pane
            strip = body.render_line(y)
            assert cell_len(strip.text) == strip.cell_length <= region.width, (y, strip.text)
        screen = screen_text(app).splitlines()
        border = app.query_one(StepInfo).region.right - 1  # the Step pane's right border, in cells
        for y in range(region.y, region.bottom):
            line = screen[y]
            assert cell_len(line) <= size[0], line
            assert cut_cells(line, border) == "│", (y, line)  # not pushed or overwritten by the log
        rows: dict[int, str] = {}  # every row of the log, a screenful at a time (80x24 shows a few)
        for top in range(0, body.virtual_size.height, region.height):
            body.scroll_to(y=top, animate=False)
            await pilot.pause(0.2)
            screen = screen_text(app).splitlines()
            start = int(body.scroll_offset.y)
            for y in range(region.height):
                rows[start + y] = cells_between(screen[region.y + y], region.x, region.x + width)
        text = "".join(rows[i].rstrip() for i in sorted(rows))
        assert f"ascii before{CJK * 3}emoji 🔥👍🏽 mixed {CJK}ascii after" in text, rows

    drive(app, scenario, size=size)


def cells_between(line: str, start: int, end: int) -> str:
    """The characters drawn from cell `start` to cell `end` of a screen line."""
    from rich.cells import cell_len

    out, used = [], 0
    for char in line:
        if start <= used < end:
            out.append(char)
        used += cell_len(char)
    return "".join(out)


def cut_cells(line: str, at: int) -> str:
    """The character drawn at cell `at` of a screen line."""
    return cells_between(line, at, at + 1)[:1]
