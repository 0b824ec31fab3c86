"""A rollback stops what still runs of the step before it says `rolled_back` (issue #15).

A running built-in (`http.wait` on a URL that never answers) is stopped like a `run = "..."` shell step;
a simulated SGLang server whose supervisor was killed -9 (the run is `lost`) is found by its recorded
session, group and leader start time and stopped with its schedulers, freeing the (simulated) GPU memory.
"""

from __future__ import annotations

import os
import signal
import sys

import clikit
import pytest
from enginekit import engine_for, session_pids, wait_for, write_plan

from eagle_console.engine.rollback import rollback_outcome, start_rollback
from eagle_console.ports import free_port
from eagle_console.processes import alive, stop_session
from eagle_console.sim import gpustate


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "2")



def test_rollback_of_a_running_builtin_stops_it_first(tmp_path):
    path = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "wait for a server that never comes"
          uses = "http.wait"
          with = {{ url = "http://127.0.0.1:{free_port()}/health", timeout = "10m" }}
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    rb_id, _items = start_rollback(eng, "0.1")
    outcome = wait_for(lambda: rollback_outcome(eng, rb_id), timeout=60)
    assert outcome["outcome"] == "completed"
    assert not alive(run.pid, run.pid_ctime) and session_pids(run.sid) == []
    assert eng.journal.statuses()["0.1"] == "rolled_back"
    assert eng.journal.run(run_id).finished


@pytest.fixture
def server_plan(tmp_path):
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    port = free_port()
    python = f"{sys.executable} -m eagle_console.sim.sglang_server"
    path = write_plan(tmp_path, f"""
        [env]
        EAGLE_CONSOLE_SIM = "{sim}"
        EAGLE_SIM_STARTUP_S = "1"

        [[phase]]
        id = "0"
        title = "Quick Probe"
          [[phase.step]]
          id = "0.3"
          title = "Launch SGLang (simulated)"
          uses = "sglang.server"
          timeout = "2m"
            [phase.step.with]
            model = "/data/models/Kimi-K2.5"
            tp = 8
            port = {port}
            python = "{python}"
    """)
    yield path, sim
    for run in engine_for(path).journal.runs():  # a failed assertion must not leave a server behind
        if run.sid:
            stop_session(run.sid, run.pgid, 1.0)


def test_rollback_after_the_service_supervisor_was_killed_stops_the_server(server_plan):
    path, sim = server_plan
    eng = engine_for(path)
    run = eng.wait(eng.start("0.3"), until_ready=True, timeout=90)
    assert run.ready_at and not run.finished
    assert {g for h in gpustate.holders(sim) for g in h.mib} == set(range(8))
    os.kill(run.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: eng.reconcile() or eng.journal.run(run.id).finished)
    assert eng.journal.run(run.id).outcome == "lost"
    assert len(session_pids(run.sid)) >= 10  # the server and its schedulers live on

    out = clikit.run(["rollback", path, "0.3", "--yes"], timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert session_pids(run.sid) == []
    assert gpustate.holders(sim) == []
    assert eng.journal.statuses()["0.3"] == "rolled_back"
