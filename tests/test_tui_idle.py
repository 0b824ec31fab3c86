"""What keeps an idle console idle: hidden tabs poll slowly and catch up when shown; unchanged lines are not
redrawn. (The CPU figure itself is benchmarks/idle_cpu.py's, not a test's.)"""

from __future__ import annotations

import asyncio

from enginekit import write_plan
from tuikit import until


def one_step_console(tmp_path, monkeypatch):
    """The real console on a one-step plan, no GPU backend: its panes and pollers, nothing to read."""
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    plan = load_plan(write_plan(tmp_path, '[[phase]]\nid = "0"\ntitle = "P"\n\n'
                                          '[[phase.step]]\nid = "0.1"\ntitle = "x"\nrun = "true"\n'))
    return make_app(plan, Journal.for_plan(plan))


def test_a_hidden_tab_sleeps_and_catches_up_when_shown(tmp_path, monkeypatch):
    """A hidden tab's pane does not poll at all (issue 31: at one poll in 2 s, four of them still woke an
    idle screen twice a second); shown, it polls at once and then at the full rate."""
    from eagle_console.tui.panes._logview import FOLLOW_S, HIDDEN_S
    from eagle_console.tui.panes.nccl import NcclPane

    app = one_step_console(tmp_path, monkeypatch)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            nccl = await until(pilot, lambda: next(iter(app.query(NcclPane)), None), what="NCCL pane built")
            await until(pilot, lambda: nccl.poller._next_interval() is HIDDEN_S is None, what="hidden: asleep")
            polls = []
            real_poll = nccl.poller.work
            monkeypatch.setattr(nccl.poller, "work", lambda: polls.append(1) or real_poll())
            await pilot.press("2")
            await until(pilot, lambda: polls, timeout=1.0, what="a poll as soon as the tab is shown")
            await until(pilot, lambda: nccl.poller._next_interval() == FOLLOW_S, what="shown: full rate")
        app.ctx.journal.close()

    asyncio.run(main())


def test_the_hidden_metrics_tab_keeps_watch(tmp_path, monkeypatch):
    """Unlike the log tabs, the Metrics pane reads /metrics while hidden, every WATCH_S: its alarms raise a
    toast whichever tab is shown (issue 33). Issue 31's tabs that sleep while hidden must not take it along."""
    from eagle_console.tui.panes._logview import WATCH_S
    from eagle_console.tui.panes.metrics import MetricsPane

    app = one_step_console(tmp_path, monkeypatch)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = await until(pilot, lambda: next(iter(app.query(MetricsPane)), None), what="Metrics pane built")
            polls = []
            real_poll = pane.poller.work
            monkeypatch.setattr(pane.poller, "work", lambda: polls.append(1) or real_poll())
            await until(pilot, lambda: len(polls) >= 2, what="two polls of the hidden Metrics pane")
            assert not pane.is_on_screen and pane.poller._next_interval() == WATCH_S
        app.ctx.journal.close()

    asyncio.run(main())


def test_a_quiet_static_redraws_only_what_changed():
    from rich.text import Text
    from textual.app import App

    from eagle_console.tui.panes._logview import QuietStatic

    class One(App):
        def compose(self):
            yield QuietStatic("")

    app = One()

    async def main() -> None:
        async with app.run_test() as pilot:
            line = app.query_one(QuietStatic)
            refreshes = []
            real = line.refresh
            line.refresh = lambda *a, **k: refreshes.append(k) or real(*a, **k)
            for _ in range(3):
                line.update(Text("no service log", style="dim"))
            assert len(refreshes) == 1
            line.update(Text("no service log", style="bold"))  # same words, other style: redrawn
            line.update("starting: Load weight begin")
            assert len(refreshes) == 3
            assert str(line.render()) == "starting: Load weight begin"
            await pilot.pause()

    asyncio.run(main())


def test_the_log_status_line_says_its_state_before_the_path_at_80_columns(tmp_path):
    """A long log path must not push the follow/filter state off the line (issue #17): state first, path last."""
    from textual.app import App

    from eagle_console.tui.panes.logview import LogView

    path = str(tmp_path / ("very-long-folder-name/" * 6) / "0.3-launch-sglang-k25-eagle3.log")

    class One(App):
        def compose(self):
            yield LogView()

    app = One()

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.clear(path)
            view.add_lines(["a", "b"])
            await pilot.pause()
            line = str(view.status.render())
            assert line.index("following") < line.index(path[:20])
            view.pause()
            view.add_lines(["c"])
            line = str(view.status.render())
            cut = line[:80]
            assert "PAUSED: 1 new line ·" in cut and "3 lines" in cut

    asyncio.run(main())
