"""On a full disk a run that exited 0 does not become `lost` (issue #18): the supervisor keeps the exit in
the slot reserved beside the run spec and records it when space returns; if it dies first, the readers take
the exit from the slot. A real supervisor, a real step, a real 4 MiB tmpfs filled up."""

from __future__ import annotations

import json
import os
import signal

import clikit
import pytest
from diskkit import fill
from enginekit import wait_for, write_plan

from eagle_console.journal import Journal

PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "waits for go, prints nothing"
    run = "while [ ! -e go ]; do sleep 0.05; done"
"""


def status(plan, state) -> dict:
    out = clikit.run(["status", plan, "--json"], timeout=60, env={**os.environ, "EAGLE_CONSOLE_STATE": str(state)})
    assert out.returncode == 0, out.stderr
    (step,) = [s for p in json.loads(out.stdout)["phases"] for s in p["steps"]]
    return step


def start(plan, state) -> int:
    out = clikit.run(["run", plan, "0.1"], timeout=60, env={**os.environ, "EAGLE_CONSOLE_STATE": str(state)})
    assert out.returncode == 0, out.stderr
    journal = Journal(state / "journal.db", readonly=True)
    try:
        run = wait_for(lambda: (r := journal.latest_run("0.1")) and r.supervisor_pid and r, timeout=30)
    finally:
        journal.close()
    return run


@pytest.mark.parametrize("supervisor_dies", [False, True])
def test_an_exit_0_on_a_full_disk_is_not_lost(tmp_path, small_disk, supervisor_dies):
    plan, state = write_plan(tmp_path, PLAN), small_disk / "state"
    run = start(plan, state)
    fill(small_disk)
    (tmp_path / "go").touch()
    slot = state / "runs" / f"{run.id}.exit"
    wait_for(lambda: slot.read_text().strip(), timeout=30)  # kept: the journal could not take it
    assert json.loads(slot.read_text())["outcome"] == "completed"
    if supervisor_dies:
        os.kill(run.supervisor_pid, signal.SIGKILL)
        wait_for(lambda: status(plan, state)["status"] == "completed", timeout=30)  # from the slot, not lost
    (small_disk / "filler").unlink()  # space returns
    if supervisor_dies:  # a writing reader (the console's 3 s reconcile) records the kept exit
        from eagle_console.engine.runner import Engine
        from eagle_console.plan.loader import load_plan

        engine = Engine(load_plan(plan, state_dir=state), Journal(state / "journal.db"))
        try:
            assert engine.reconcile() == []  # nothing lost
        finally:
            engine.journal.close()
    def ended_run():
        journal = Journal(state / "journal.db", readonly=True)
        try:
            r = journal.run(run.id)
            return r if r is not None and r.ended else None
        finally:
            journal.close()

    ended = wait_for(ended_run, timeout=30)
    assert (ended.outcome, ended.exit_code) == ("completed", 0)
    assert status(plan, state)["status"] == "completed"
