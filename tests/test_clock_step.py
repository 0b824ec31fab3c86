"""A step of the wall clock while a run goes on (chrony's makestep after a VM resumes, `date -s`).

Before, a process was named by its epoch start time (ticks since boot plus /proc/stat's btime), and a step
moves btime: every live supervisor looked like a reused pid, so the next face that reconciled recorded the
live run `lost` (its step failed), its GPU workers were no longer the run's — orphans for K once the clock
was back — and the simulated node dropped every holder's memory. The simulated node shows the CLI the
stepped clock (eagle_console.sim.clockstep: btime moved in a mount namespace of the command's own), through
the same /proc reads a real step changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest
from enginekit import wait_for, write_plan

from eagle_console.processes import CLOCK_TICKS, alive, create_time, same_process, session_members, start_of
from eagle_console.sim import clockstep, gpustate

STEP_S = 3  # more than any slack an epoch comparison allowed (0.05 s), as small as a VM resume's step

needs_clockstep = pytest.mark.skipif(bool(clockstep.usable()), reason=f"clockstep: {clockstep.usable()}")


def cli(args: list[str], stepped: int = 0) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "eagle_console", *args]
    if stepped:
        return clockstep.run(argv, stepped, capture_output=True, text=True, timeout=120)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def doc(args: list[str], stepped: int = 0) -> dict:
    done = cli(args, stepped)
    assert done.stdout.strip(), f"{args} stepped {stepped}: exit {done.returncode}: {done.stderr}"
    return json.loads(done.stdout)


def step_of(doc: dict, step_id: str) -> dict:
    return next(s for p in doc["phases"] for s in p["steps"] if s["id"] == step_id)


@pytest.fixture
def held_run(tmp_path, monkeypatch):
    """A plan whose step 0.1 runs a worker holding 500 MiB of GPU 1 on a simulated node, started with
    `run` and holding; yields (plan, sim, worker pid)."""
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    plan = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "serve"

          [[phase.step]]
          id = "0.1"
          title = "hold a GPU"
          run = ["{sys.executable}", "-m", "eagle_console.sim.orphans", "worker", "--sim", "{sim}",
                 "--gpu", "1", "--mib", "500"]

          [[phase.step]]
          id = "0.2"
          title = "look at it"
          needs = ["0.1"]
    """)
    started = cli(["run", str(plan), "0.1", "--yes"])
    assert started.returncode == 0, started.stderr
    holders = wait_for(lambda: gpustate.holders(sim), timeout=30)
    worker = holders[0].pid
    yield plan, sim, worker
    cli(["rollback", str(plan), "0.1", "--yes", "--force"])
    if alive(worker):
        psutil.Process(worker).kill()


@needs_clockstep
def test_a_live_run_stays_live_and_its_workers_its_own_after_the_wall_clock_steps(held_run):
    plan, sim, worker = held_run
    for by in (STEP_S, -STEP_S):
        # `next` reconciles and writes what it finds: before, it recorded the live run lost here
        nxt = cli(["next", str(plan), "--yes"], stepped=by)
        assert nxt.returncode in (0, 1), nxt.stderr
        run = step_of(doc(["status", str(plan), "--json"], stepped=by), "0.1")
        assert run["status"] == "in_progress" and run["run"]["ended"] is None, (by, run)
        assert run["run"]["supervisor_state"] == "running" and run["run"]["action_state"] == "running", run

        seen = doc(["orphans", str(plan), "--json", "--sim", str(sim)], stepped=by)
        mine = [h for h in seen["holders"] if h["pid"] == worker]
        assert [(h["class"], h["owner"]) for h in mine] == [("tracked", "0.1")], (by, seen)
        gpus = doc(["gpus", "--json", "--sim", str(sim)], stepped=by)
        held = {p["pid"]: p["used_mib"] for p in gpus["gpus"][1]["processes"]}
        assert held.get(worker) == 500.0, (by, gpus["gpus"][1])  # the sim kept the holder's memory

    # Back on the real clock, K (`orphans --kill`) must leave the live run's worker alone: before, the run
    # recorded lost under the stepped clock made it an orphan here, and it was killed.
    killed = doc(["orphans", str(plan), "--json", "--kill", "--yes", "--grace", "1s", "--sim", str(sim)])
    assert worker not in killed["killed"] and alive(worker), killed
    run = step_of(doc(["status", str(plan), "--json"]), "0.1")
    assert run["status"] == "in_progress" and run["run"]["ended"] is None, run


@needs_clockstep
def test_a_run_recorded_before_the_step_is_stopped_whole_by_its_rollback(held_run):
    """The rollback, under the stepped clock, finds the run's session by its leader's recorded start and
    stops it: before, every member was born "before" the leader (epoch times moved) and none was stopped."""
    plan, sim, worker = held_run
    done = cli(["rollback", str(plan), "0.1", "--yes", "--force"], stepped=-STEP_S)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: not alive(worker), timeout=30)


def test_the_recorded_start_is_the_kernels_tick_count_and_this_boots_id():
    me = os.getpid()
    with open(f"/proc/{me}/stat", "rb") as f:
        ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert start_of(me) == f"{ticks}@{boot}"
    assert alive(me, start_of(me)) and same_process(me, start_of(me))
    assert not alive(me, f"{ticks + 1}@{boot}")  # born a tick later: another process at this pid


def test_a_start_recorded_in_another_boot_names_no_running_process():
    """After a reboot a pid can be born at the same tick count as a process of the boot before: the boot id
    tells them apart, and the old run's session has no members now."""
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        wait_for(lambda: start_of(child.pid), timeout=10)
        ticks = start_of(child.pid).split("@")[0]
        other_boot = f"{ticks}@00000000-0000-4000-8000-000000000000"
        assert alive(child.pid, start_of(child.pid))
        assert not alive(child.pid, other_boot) and not same_process(child.pid, other_boot)
        assert session_members(child.pid, child.pid, other_boot) == []
        assert [p.pid for p in session_members(child.pid, child.pid, start_of(child.pid))] == [child.pid]
    finally:
        child.kill()
        child.wait()


def test_an_older_journals_epoch_start_still_names_its_process():
    """A journal written before this change holds epoch create times (floats): a run in flight across the
    upgrade is still recognised, within the tick rounding those were compared with."""
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        born = wait_for(lambda: create_time(child.pid), timeout=10)
        assert born == pytest.approx(psutil.Process(child.pid).create_time(), abs=1 / CLOCK_TICKS)
        assert alive(child.pid, born) and alive(child.pid, born + 0.04)
        assert not alive(child.pid, born + 1.0)
        assert [p.pid for p in session_members(child.pid, child.pid, born)] == [child.pid]
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="a time namespace needs root")
def test_a_reader_in_another_time_namespace_names_the_process_alike():
    """A reader whose time namespace has a boottime offset sees every process's start that much later in
    /proc/PID/stat; the recorded start is the initial namespace's, so both name the process alike."""
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        mine = wait_for(lambda: start_of(child.pid), timeout=10)
        code = f"from eagle_console.processes import alive, start_of; print(start_of({child.pid}), " \
               f"alive({child.pid}, {mine!r}))"
        seen = subprocess.run(["unshare", "--time", "--fork", "--boottime", "1000", sys.executable, "-c", code],
                              capture_output=True, text=True, timeout=60)
        if seen.returncode != 0 and "unshare" in seen.stderr:
            pytest.skip(f"no time namespace here: {seen.stderr.strip()[:200]}")
        assert seen.stdout.split() == [mine, "True"], seen.stderr
    finally:
        child.kill()
        child.wait()
