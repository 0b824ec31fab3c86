"""On a full disk the supervisor keeps what it must record — `::result` lines, a service's readiness — and
never dies of a write: it holds them (in memory and in the slot reserved beside the run spec,
`runs/<id>.held`) and records them when space returns; if it dies first, a writing reader records them from
the slot. Before, the first `::result` (or the ready event) on a full disk killed the supervisor: the run
became `lost` and its step `failed` though it exited 0, and a service that became ready ran on untracked.

Real parts: a 4 MiB tmpfs filled up holds the state dir (journal, run specs, slots); the step logs live on a
second tmpfs mounted at `state/logs`, so the step's own output is not what the full disk breaks (a full log
disk is tested apart: the step's `echo` fails there, not the supervisor). A real supervisor, a real step,
the real simulated SGLang server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest
from diskkit import fill, mount_tmpfs
from enginekit import wait_for, write_plan

from eagle_console.journal import Journal
from eagle_console.ports import free_port
from eagle_console.processes import alive, stop_session
from eagle_console.sim import gpustate

RESULTS_PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "prints results once the disk is full"
    run = "while [ ! -e go ]; do sleep 0.05; done; echo '::result tok_s=123.5'; echo '::result label=abc'"
"""


def cli(state, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eagle_console", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "EAGLE_CONSOLE_STATE": str(state)})


def state_with_logs_apart(small_disk, request):
    state = small_disk / "state"
    state.mkdir(mode=0o700)
    mount_tmpfs(state / "logs", request, size="8m", mode="0700")
    return state


def read_run(state, run_id: int | None = None, step_id: str = "0.1"):
    journal = Journal(state / "journal.db", readonly=True)
    try:
        return journal.run(run_id) if run_id else journal.latest_run(step_id)
    finally:
        journal.close()


def results(state, step_id: str = "0.1") -> dict:
    journal = Journal(state / "journal.db", readonly=True)
    try:
        return {r.name: r.value for r in journal.results(step_id)}
    finally:
        journal.close()


def end_supervisor(run) -> None:
    """A failed test must not leave a supervisor retrying a disk that is unmounted."""
    if alive(run.supervisor_pid, run.supervisor_ctime):
        try:
            os.kill(run.supervisor_pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended between the look and the kill (seen in a suite run)
            pass


def held_text(state, run_id: int) -> str:
    try:
        return (state / "runs" / f"{run_id}.held").read_text().strip()
    except OSError:
        return ""


@pytest.mark.parametrize("supervisor_dies", [False, True])
def test_results_printed_on_a_full_disk_are_kept(tmp_path, small_disk, request, supervisor_dies):
    state = state_with_logs_apart(small_disk, request)
    plan = write_plan(tmp_path, RESULTS_PLAN)
    out = cli(state, "run", str(plan), "0.1")
    assert out.returncode == 0, out.stderr
    run = wait_for(lambda: (r := read_run(state)) and r.pid and r, timeout=30)
    request.addfinalizer(lambda: end_supervisor(run))
    fill(small_disk)
    (tmp_path / "go").touch()
    exit_slot = state / "runs" / f"{run.id}.exit"
    # the supervisor holds both results and keeps the exit — or (before) died of the first result
    wait_for(lambda: exit_slot.read_text().strip() or not alive(run.supervisor_pid, run.supervisor_ctime),
             timeout=30)
    assert alive(run.supervisor_pid, run.supervisor_ctime), "the supervisor died of a write on a full disk"
    held = json.loads(held_text(state, run.id))
    assert [(r["name"], r["value"]) for r in held["held"]] == [("tok_s", 123.5), ("label", "abc")]
    assert json.loads(exit_slot.read_text())["outcome"] == "completed"
    step = json.loads(cli(state, "status", str(plan), "--json").stdout)["phases"][0]["steps"][0]
    assert step["status"] == "in_progress"  # still supervised: not lost, not failed
    if supervisor_dies:
        os.kill(run.supervisor_pid, signal.SIGKILL)
        wait_for(lambda: not alive(run.supervisor_pid, run.supervisor_ctime), timeout=10)
    (small_disk / "filler").unlink()  # space returns
    if supervisor_dies:  # a writing reader (the console's reconcile) records what the slot holds
        from eagle_console.engine.runner import Engine
        from eagle_console.plan.loader import load_plan

        engine = Engine(load_plan(plan, state_dir=state), Journal(state / "journal.db"))
        try:
            assert engine.reconcile() == []  # nothing lost
        finally:
            engine.journal.close()
    ended = wait_for(lambda: (r := read_run(state, run.id)) and r.ended and r, timeout=30)
    assert (ended.outcome, ended.exit_code) == ("completed", 0)
    assert results(state) == {"tok_s": 123.5, "label": "abc"}  # each once
    journal = Journal(state / "journal.db", readonly=True)
    try:
        assert len(journal.results("0.1")) == 2
        assert journal.statuses()["0.1"] == "completed"
    finally:
        journal.close()


SERVER_PLAN = """
    [[phase]]
    id = "0"
    title = "Quick Probe"
      [[phase.step]]
      id = "0.3"
      title = "Launch SGLang (simulated)"
      uses = "sglang.server"
      timeout = "2m"
      env = {{ EAGLE_CONSOLE_SIM = "{sim}", EAGLE_SIM_STARTUP_S = "1" }}
        [phase.step.with]
        model = "/data/models/Kimi-K2.5"
        tp = 8
        port = {port}
        python = "{gate} -m eagle_console.sim.sglang_server"
"""


def test_a_service_ready_on_a_full_disk_stays_tracked(tmp_path, small_disk, request):
    state = state_with_logs_apart(small_disk, request)
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    port = free_port()
    gate = tmp_path / "gated-python"  # the server starts once the test has filled the disk
    gate.write_text(f"#!/bin/bash\nwhile [ ! -e {tmp_path}/go ]; do sleep 0.05; done\nexec {sys.executable} \"$@\"\n")
    gate.chmod(0o755)
    plan = write_plan(tmp_path, SERVER_PLAN.format(sim=sim, port=port, gate=gate))
    out = cli(state, "run", str(plan), "0.3")
    assert out.returncode == 0, out.stderr
    run = wait_for(lambda: (r := read_run(state, step_id="0.3")) and r.pid and r, timeout=30)
    request.addfinalizer(lambda: stop_session(run.sid, run.pgid, 2.0))
    request.addfinalizer(lambda: end_supervisor(run))
    # the built-in has done its own writes (what the GPUs held before) and exec'd the gate
    wait_for(lambda: psutil.Process(run.pid).cmdline()[:2] == ["/bin/bash", str(gate)], timeout=30)
    fill(small_disk)
    (tmp_path / "go").touch()
    # ready: held by a live supervisor — or (before) the supervisor died of the write
    wait_for(lambda: "ready" in held_text(state, run.id) or not alive(run.supervisor_pid, run.supervisor_ctime),
             timeout=60)
    assert alive(run.supervisor_pid, run.supervisor_ctime), "the supervisor died of a write on a full disk"
    assert [r["kind"] for r in json.loads(held_text(state, run.id))["held"]] == ["ready"]
    assert read_run(state, run.id).ready_at is None  # not in the journal yet: nothing was invented
    (small_disk / "filler").unlink()  # space returns
    ready = wait_for(lambda: (r := read_run(state, run.id)) and r.ready_at and r, timeout=30)
    assert not ready.finished and alive(ready.supervisor_pid, ready.supervisor_ctime)
    step = json.loads(cli(state, "status", str(plan), "--json").stdout)["phases"][0]["steps"][0]
    assert step["status"] == "completed" and step["run"]["ended"] is None
    out = cli(state, "rollback", str(plan), "0.3", "--yes")  # tracked: the rollback stops it
    assert out.returncode == 0, out.stdout + out.stderr
    assert read_run(state, run.id).outcome == "stopped"


MANY_PLAN = RESULTS_PLAN.replace(
    "echo '::result tok_s=123.5'; echo '::result label=abc'",
    'for i in $(seq 1 1500); do echo ::result a_result_with_a_rather_long_name_$i=$i; done')


def test_what_the_slot_cannot_hold_is_said_exactly(tmp_path, request):
    """1500 results on a full disk: a live supervisor would write them all once space returns; killed, those
    its slot held are recorded by the reader and the run's reason says exactly how many (and which) were not.
    16 MiB: hundreds of one-event transactions grow the WAL to ~4 MiB before SQLite checkpoints it."""
    small_disk = mount_tmpfs(tmp_path / "mnt", request, size="16m")
    state = state_with_logs_apart(small_disk, request)
    plan = write_plan(tmp_path, MANY_PLAN)
    assert cli(state, "run", str(plan), "0.1").returncode == 0
    run = wait_for(lambda: (r := read_run(state)) and r.pid and r, timeout=30)
    request.addfinalizer(lambda: end_supervisor(run))
    fill(small_disk)
    (tmp_path / "go").touch()
    exit_slot = state / "runs" / f"{run.id}.exit"
    wait_for(lambda: exit_slot.read_text().strip() or not alive(run.supervisor_pid, run.supervisor_ctime),
             timeout=60)
    assert alive(run.supervisor_pid, run.supervisor_ctime), "the supervisor died of a write on a full disk"
    held = json.loads(held_text(state, run.id))
    kept, unkept = len(held["held"]), held["unkept"]["count"]
    assert kept + unkept == 1500 and kept > 100 and unkept > 0
    os.kill(run.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: not alive(run.supervisor_pid, run.supervisor_ctime), timeout=10)
    (small_disk / "filler").unlink()
    from eagle_console.engine.runner import Engine
    from eagle_console.plan.loader import load_plan

    engine = Engine(load_plan(plan, state_dir=state), Journal(state / "journal.db"))
    try:
        assert engine.reconcile() == []
        ended = engine.journal.run(run.id)
        recorded = engine.journal.results("0.1")
    finally:
        engine.journal.close()
    assert (ended.outcome, ended.exit_code) == ("completed", 0)
    assert [r.value for r in recorded] == list(range(1, kept + 1))  # in order, each once
    assert f"not recorded (its supervisor died holding them): {unkept} records (result " \
           f"a_result_with_a_rather_long_name_{kept + 1}, " in ended.reason, ended.reason
