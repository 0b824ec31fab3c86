"""K on a simulated node with real orphaned workers: preselected, Enter kills them, memory freed, journaled."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import psutil
import pytest
from enginekit import engine_for, wait_for, write_plan
from test_tui_panes_gpus import make_ctx, stop_pids, until

from eagle_console.node.kill import LIVE_JOB, MAYBE_LIVE_JOB
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans

pytest.importorskip("textual")
from textual.app import App  # noqa: E402

from eagle_console.ops.orphans import KillRecord  # noqa: E402
from eagle_console.tui.context import ConsoleContext  # noqa: E402
from eagle_console.tui.panes.gpus import GpuPane  # noqa: E402
from eagle_console.tui.screens.kill import KillScreen  # noqa: E402

HOLD = ("import sys, signal\nfrom eagle_console.sim import gpustate\n"
        "gpustate.hold({sim!r}, {{{gpu}: {mib}}})\nprint('up', flush=True)\nsignal.pause()")


def session_reason() -> str:
    """Under `docker exec` without a tty (CI) or `unshare --pid`, this session's leader is outside the PID
    namespace: every such session reads as 0 and a holder in it can only be "maybe" the console's."""
    return (MAYBE_LIVE_JOB if os.getsid(0) == 0 else LIVE_JOB).format(ppid=os.getpid())


class KillApp(App):
    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx

    def compose(self):
        yield GpuPane(self.ctx)


@pytest.fixture
def node(tmp_path, monkeypatch, request):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    orphans = leave_orphans(sim, 2)
    # a live holder that is not an orphan (its parent is this test): listed, not preselected; in a session
    # of its own, as someone's notebook would be (one in the console's session is never signalled)
    other = subprocess.Popen([sys.executable, "-c", HOLD.format(sim=str(sim), gpu=1, mib=2048)],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert other.stdout.readline().strip() == "up"
    request.addfinalizer(lambda: (stop_pids(orphans + [other.pid]), other.wait()))
    return sim, orphans, other.pid


def test_orphans_preselected_enter_kills_frees_memory_and_journals(tmp_path, node):
    sim, orphans, other = node
    ctx = make_ctx(tmp_path, sim)
    app = KillApp(ctx)
    results: list = []

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(GpuPane)
            await until(pilot, lambda: pane.last is not None and len(pane.last.holders) == 3, what="3 holders")
            screen = KillScreen(ctx)
            app.push_screen(screen, results.append)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert screen.selected == {str(p) for p in orphans}
            assert {h.pid for h in screen.holders} >= set(orphans) | {other}
            plan = str(screen.query_one("#kill-plan").render())
            assert "SIGTERM" in plan and "GPU 3 6120 MiB" in plan and "GPU 5 6120 MiB" in plan
            # space on the non-orphan toggles it in and out again
            rows = [h.pid for h in screen.holders]
            screen.query_one("DataTable").move_cursor(row=rows.index(other))
            await pilot.press("space")
            assert str(other) in screen.selected
            await pilot.press("space")
            assert screen.selected == {str(p) for p in orphans}
            await pilot.press("enter")
            await until(pilot, lambda: screen.state == "done", timeout=30, what="kill done")
            report = screen.report
            assert sorted(report.killed) == sorted(orphans) and report.survivors == []
            assert report.freed_mib == {"3": 6120.0, "5": 6120.0}
            assert "freed 12240 MiB" in str(screen.query_one("#kill-progress").render())
            # the summary is counted again after the kill: the other holder is what is left (it said
            # "3 GPU holders · GPU 1: 2048 MiB, GPU 3: 6120 MiB, GPU 5: 6120 MiB", as before the kill)
            summary = str(screen.query_one("#kill-summary").render())
            assert summary == ("after the kill: 2 killed · 12240 MiB freed · 1 GPU holder left (0 orphans) · "
                               "GPU 1: 2048 MiB"), summary
            await pilot.press("enter")  # closes
            await until(pilot, lambda: results, what="dismissed")
            # the GPU pane shows the memory freed; the other holder is untouched
            await until(pilot, lambda: {h.pid for h in pane.last.holders} == {other}, what="pane refreshed")
            # the driver lets go of the memory a little after the list (sim: release_lag_s)
            await until(pilot, lambda: {g.index: g.memory_used_mib for g in pane.last.sample.gpus if
                                        g.memory_used_mib} == {1: 2048}, what="memory freed on the pane")
            assert psutil.pid_exists(other)

    asyncio.run(main())
    kills = [e for e in ctx.journal.events() if e.kind == "kill"]
    assert len(kills) == 1 and sorted(kills[0].data["killed"]) == sorted(orphans)
    assert results == [KillRecord.from_event(kills[0])]
    assert (results[0].face, results[0].scope) == ("console", "orphans")


def test_the_console_is_not_listed_and_enter_with_nothing_selected_does_nothing(tmp_path, monkeypatch):
    """This process (the console) holds a GPU itself: it is not offered; nothing selected, so nothing happens."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    gpustate.hold(sim, {0: 100})  # opens SIM/dev/nvidia0 in this very process (scan skips self: parent instead)
    ctx = make_ctx(tmp_path, sim)
    app = KillApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert os.getpid() not in {h.pid for h in screen.holders} and not screen.selected
            await pilot.press("enter")
            assert screen.state == "choosing"
            assert "select at least one" in str(screen.query_one("#kill-progress").render())

    asyncio.run(main())
    assert [e for e in ctx.journal.events() if e.kind == "kill"] == []


def test_a_negative_grace_is_shown_and_nothing_is_killed(tmp_path, node, monkeypatch):
    """EAGLE_CONSOLE_KILL_GRACE=-5 used to become a grace of 0 (SIGKILL at once): now K says why it won't kill."""
    sim, orphans, _other = node
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "-5")
    ctx = make_ctx(tmp_path, sim)
    app = KillApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert "EAGLE_CONSOLE_KILL_GRACE" in str(screen.query_one("#kill-plan").render())
            await pilot.press("enter")
            assert screen.state == "choosing"
            assert "negative" in str(screen.query_one("#kill-progress").render())

    asyncio.run(main())
    assert all(psutil.pid_exists(p) for p in orphans)
    assert [e for e in ctx.journal.events() if e.kind == "kill"] == []


def test_a_tracked_server_needs_a_second_yes_naming_its_step(tmp_path, monkeypatch, request):
    """A live run's server (step 0.3) selected by hand: Enter asks again, naming the step; Enter alone (the
    default answer, no) keeps it running; `y` kills it. It used to die on the first Enter."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    code = HOLD.format(sim=str(sim), gpu=2, mib=3000.0)
    path = write_plan(tmp_path, f'[[phase]]\nid = "0"\ntitle = "P"\n\n[[phase.step]]\nid = "0.3"\n'
                                f'title = "Server"\nrun = {json.dumps([sys.executable, "-c", code])}\n')
    eng = engine_for(path)
    run_id = eng.start("0.3")
    server = wait_for(lambda: next((h.pid for h in gpustate.holders(sim)), None), timeout=30)
    request.addfinalizer(lambda: (stop_pids([server]), eng.wait(run_id, timeout=30)))
    ctx = ConsoleContext(plan_path=path, plan=eng.plan, journal=eng.journal, sim_dir=sim)
    app = KillApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            (row,) = [i for i, h in enumerate(screen.holders) if h.pid == server]
            assert screen.holders[row].cls == "tracked" and not screen.selected
            screen.query_one("DataTable").move_cursor(row=row)
            await pilot.press("space")
            await pilot.press("enter")
            assert screen.state == "confirming"
            question = str(screen.query_one("#kill-progress").render())
            assert f"pid {server} belongs to step 0.3 (running): kill it anyway? y/N" in question
            await pilot.press("enter")  # no
            assert screen.state == "choosing" and psutil.pid_exists(server)
            await pilot.press("enter")
            await pilot.press("y")
            await until(pilot, lambda: screen.state == "done", timeout=30, what="kill done")
            assert screen.report.killed == [server]

    asyncio.run(main())
    kills = [e for e in ctx.journal.events() if e.kind == "kill"]
    assert len(kills) == 1 and kills[0].data["killed"] == [server]


def test_a_holder_in_the_consoles_session_is_shown_refused(tmp_path, monkeypatch, request):
    """A GPU holder this console's session started (its terminal's job) cannot be selected."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    helper = subprocess.Popen([sys.executable, "-c", HOLD.format(sim=str(sim), gpu=1, mib=512)],
                              stdout=subprocess.PIPE, text=True)
    request.addfinalizer(lambda: (helper.kill(), helper.wait()))
    assert helper.stdout.readline().strip() == "up"
    ctx = make_ctx(tmp_path, sim)
    app = KillApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert screen.refused == {helper.pid: session_reason()}
            await pilot.press("space")
            assert not screen.selected
            assert "a live job of the console's terminal" in str(screen.query_one("#kill-progress").render())

    asyncio.run(main())
    assert helper.poll() is None
