"""The same kill through the three faces — `K`, `orphans --kill --yes`, a `gpu.kill` step — journals one
record shape: same keys, same types, `who` / `scope` / `face` filled (they used to differ face by face)."""

from __future__ import annotations

import asyncio

import clikit
import psutil
import pytest
from enginekit import engine_for, write_plan
from test_tui_panes_gpus import stop_pids, until

from eagle_console.journal import Journal
from eagle_console.journal.operator import current_operator
from eagle_console.ops.orphans import KillRecord
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans

pytest.importorskip("textual")
from textual.app import App  # noqa: E402

from eagle_console.tui.context import ConsoleContext  # noqa: E402
from eagle_console.tui.screens.kill import KillScreen  # noqa: E402

PLAN = """
    [[phase]]
    id = "0"
    title = "P"
      [[phase.step]]
      id = "0.1"
      title = "Kill orphans"
      uses = "gpu.kill"
      with = { scope = "orphans", grace = "1s" }
      confirm = false
"""
COLUMNS = {"who", "step_id", "run_id"}


class KillApp(App):
    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx


def kill_with_k(ctx: ConsoleContext) -> None:
    app = KillApp(ctx)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert screen.selected
            await pilot.press("enter")
            await until(pilot, lambda: screen.state == "done", timeout=30, what="kill done")

    asyncio.run(main())


def test_console_cli_and_step_journal_the_same_record_shape(tmp_path, monkeypatch, request):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1s")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(sim))
    path = write_plan(tmp_path, PLAN)
    eng = engine_for(path)
    left: list[int] = []
    request.addfinalizer(lambda: stop_pids(left))

    left += leave_orphans(sim, 1)
    kill_with_k(ConsoleContext(plan_path=path, plan=eng.plan, journal=eng.journal, sim_dir=sim))

    left += leave_orphans(sim, 1)
    out = clikit.run(["orphans", path, "--kill", "--yes", "--sim", sim], timeout=120)
    assert out.returncode == 0, out.stderr

    left += leave_orphans(sim, 1)
    run = eng.wait(eng.start("0.1"), timeout=60)
    assert run.exit_code == 0, open(run.log).read()

    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in left)
    journal = Journal.for_plan(eng.plan)  # read back through a fresh connection, as another console would
    events = [e for e in journal.events() if e.kind == "kill"]
    journal.close()
    assert len(events) == 3
    assert len({frozenset(e.data) for e in events}) == 1  # one shape of data
    assert set(events[0].data) == set(KillRecord._fields) - COLUMNS
    records = [KillRecord.from_event(e) for e in events]
    assert [r.face for r in records] == ["console", "cli", "step"]
    for record, pid in zip(records, left, strict=True):
        assert record.who == current_operator() and record.scope == "orphans"
        assert record.killed == [pid] and record.survivors == [] and record.gone == [] and record.refused == []
        assert list(record.freed_mib) == ["3"] and record.freed_mib["3"] == 6120.0
        assert {k: type(v) for k, v in record._asdict().items() if k not in ("step_id", "run_id")} == \
               {k: type(v) for k, v in records[0]._asdict().items() if k not in ("step_id", "run_id")}
    assert [(r.step_id, r.run_id) for r in records] == [(None, None), (None, None), ("0.1", run.id)]
