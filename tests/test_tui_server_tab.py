"""The Server tab in the whole console: it opens on the end of a long service log (it said "following" over
lines 1-18 of 356), `r`/`n` show the started step's output, and the weight-loading bar is in the status."""

from __future__ import annotations

from pathlib import Path

import pytest
from enginekit import write_plan
from tuikit import drive, open_app, screen_text, select, until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

PLAN = """
[[phase]]
id = "0"
title = "p"

[[phase.step]]
id = "0.1"
title = "prepare"
run = "echo prepared-0.1"

[[phase.step]]
id = "0.2"
title = "more"
run = "echo prepared-0.2"

[[phase.step]]
id = "0.3"
title = "server"
service = true
run = "sleep 1000"
ready = { log = "fired up" }
"""
DATA = Path(__file__).resolve().parent / "data" / "sglang"
LOAD_BAR = "Loading safetensors checkpoint shards:  45% Completed | 29/64 [12:03<14:33, 24.95s/it]"


@pytest.fixture(autouse=True)
def _no_gpus(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")


def data(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def with_service_log(tmp_path: Path, lines: list[str]) -> tuple[Path, Path]:
    path = write_plan(tmp_path, PLAN)
    log = tmp_path / "sglang.log"
    log.write_text("".join(f"{s}\n" for s in lines))
    journal = Journal.for_plan(load_plan(path))
    journal.begin_run("0.3", command="python -m sglang.launch_server", log=str(log), service=True)
    journal.close()
    return path, log


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_server_tab_opens_on_the_end_of_a_long_log(tmp_path: Path, size):
    # a real startup, ready, decode and an OOM: the head above the log grows to several lines as it parses
    real = sum((data(n) for n in ("sglang4826_startup_tp0.txt", "kvcache50_ready.txt",
                                  "sglang11948_eagle3_decode_tp0.txt", "sglang4547_cuda_oom_traceback.txt")), [])
    lines = real[:-14] + [f"[2025-10-22 10:27:{n % 60:02d} TP0] server line {n:03d}"
                          for n in range(356 - len(real))] + real[-14:]
    path, log = with_service_log(tmp_path, lines)
    app, _ = open_app(path)

    async def scenario(pilot):
        from eagle_console.tui.panes.server import ServerPane

        pane = app.query_one(ServerPane)
        await until(pilot, lambda: pane.received == 356, what="the whole log read")
        await pilot.pause(0.3)
        at_end(pane)
        await pilot.press("3")  # while another tab is shown, the log grows; then the Server tab again
        with open(log, "a") as f:
            f.write("".join(f"more line {n:03d}\n" for n in range(200)))
        await pilot.pause(0.3)  # hidden, the pane sleeps (issue 31): the lines are read once it is shown
        await pilot.press("1")
        await until(pilot, lambda: pane.received == 556, what="the lines written while hidden read")
        await pilot.pause(0.3)
        at_end(pane)
        assert "more line 199" in screen_text(app)
        await pilot.resize_terminal(size[0] - 20, size[1] - 6)  # tmux resizing the window: still at the end
        await pilot.pause(0.3)
        at_end(pane)

    drive(app, scenario, size=size)


def at_end(pane) -> None:
    body = pane.body
    assert pane.following
    assert body.max_scroll_y > 0 and body.scroll_offset.y == body.max_scroll_y, (body.scroll_offset.y,
                                                                                  body.max_scroll_y)


def test_r_and_n_show_the_started_steps_output(tmp_path: Path):
    path, _ = with_service_log(tmp_path, ["nothing yet"])
    app, journal = open_app(path)

    async def scenario(pilot):
        from eagle_console.tui.panes.logs import LogTabs

        tabs = app.query_one(LogTabs)
        assert tabs.active == "server"
        await select(pilot, "0.1")
        await pilot.press("r")
        await until(pilot, lambda: tabs.active == "output", what="the Output tab after r")
        await until(pilot, lambda: "prepared-0.1" in "\n".join(_output_lines(app)), what="0.1's output")
        await until(pilot, lambda: journal.statuses().get("0.1") == "completed", what="0.1 done")
        await pilot.press("1")  # back to the Server tab; n starts 0.2 and shows its output
        await until(pilot, lambda: tabs.active == "server", what="the Server tab")
        await pilot.press("n")
        await until(pilot, lambda: tabs.active == "output", what="the Output tab after n")
        await until(pilot, lambda: "prepared-0.2" in "\n".join(_output_lines(app)), what="0.2's output")

    drive(app, scenario)


def _output_lines(app) -> list[str]:
    from eagle_console.tui.panes.output import OutputPane

    found = app.query(OutputPane)
    return found.first().shown_lines if found else []


def test_server_status_shows_weight_loading(tmp_path: Path):
    path, log = with_service_log(tmp_path, ["[2025-10-22 10:27:56 TP0] Load weight begin. avail mem=78.00 GB",
                                            LOAD_BAR])
    app, _ = open_app(path)

    async def scenario(pilot):
        from eagle_console.tui.panes.server import ServerPane

        pane = app.query_one(ServerPane)
        await until(pilot, lambda: "weights: 29/64 shards (45.3%)" in pane.head.render().plain,
                    what="the loading bar in the status line")
        assert pane.head.render().plain.splitlines()[0].startswith("starting:")

    drive(app, scenario)


def test_a_log_hidden_by_zoom_is_followed_again_once_shown(tmp_path: Path):
    """Hidden, a log pane does not poll (issue 31); `z` hides the tabs without telling them, so the pane's
    thread looks now and then whether it is back: the lines written meanwhile come when it is."""
    from eagle_console.tui.panes.server import ServerPane

    path, log = with_service_log(tmp_path, ["[2025-10-22 10:27:56 TP0] Load weight begin. avail mem=78.00 GB"])
    app, _ = open_app(path)

    async def scenario(pilot):
        pane = app.query_one(ServerPane)
        await until(pilot, lambda: pane.received == 1, what="the log read")
        await pilot.press("z")  # the GPUs pane alone: the tabs are hidden
        await until(pilot, lambda: pane.poller._next_interval() is None, what="the pane asleep")
        with open(log, "a") as f:
            f.write("[2025-10-22 10:28:30 TP0] while zoomed\n")
        for _ in range(4):  # logs, plan, step, then every pane again
            await pilot.press("z")
        await until(pilot, lambda: "while zoomed" in screen_text(app), what="the line written while zoomed")

    drive(app, scenario, size=(120, 40))
