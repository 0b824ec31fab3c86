"""A step of the wall clock while a run goes on (chrony's makestep after a VM resumes, `date -s`).

Before, a process was named by its epoch start time (ticks since boot plus /proc/stat's btime), and a step
moves btime: every live supervisor looked like a reused pid, so the next face that reconciled recorded the
live run `lost` (its step failed), its GPU workers were no longer the run's — orphans for K once the clock
was back — and the simulated node dropped every holder's memory. The simulated node shows the CLI the
stepped clock (eagle_console.sim.clockstep: btime moved in a mount namespace of the command's own), through
the same /proc reads a real step changes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest
from enginekit import wait_for
from heldkit import cli, doc, step_of

from eagle_console.processes import CLOCK_TICKS, alive, create_time, same_process, session_members, start_of
from eagle_console.sim import clockstep

STEP_S = 3  # more than any slack an epoch comparison allowed (0.05 s), as small as a VM resume's step



@pytest.fixture(scope="module")
def can_step_clock() -> None:
    if why := clockstep.usable():  # here, not at collection: each xdist worker collects every module
        pytest.skip(f"clockstep: {why}")


def stepped(seconds: int):
    """A runner (heldkit.cli) showing the command a wall clock stepped by `seconds`."""
    return lambda argv, **popen: clockstep.run(argv, seconds, **popen)


def test_a_live_run_stays_live_and_its_workers_its_own_after_the_wall_clock_steps(can_step_clock, held_run):
    plan, sim, worker = held_run
    for by in (STEP_S, -STEP_S):
        # `next` reconciles and writes what it finds: before, it recorded the live run lost here
        nxt = cli(["next", str(plan), "--yes"], stepped(by))
        assert nxt.returncode in (0, 1), nxt.stderr
        run = step_of(doc(["status", str(plan), "--json"], stepped(by)), "0.1")
        assert run["status"] == "in_progress" and run["run"]["ended"] is None, (by, run)
        assert run["run"]["supervisor_state"] == "running" and run["run"]["action_state"] == "running", run

        seen = doc(["orphans", str(plan), "--json", "--sim", str(sim)], stepped(by))
        mine = [h for h in seen["holders"] if h["pid"] == worker]
        assert [(h["class"], h["owner"]) for h in mine] == [("tracked", "0.1")], (by, seen)
        gpus = doc(["gpus", "--json", "--sim", str(sim)], stepped(by))
        held = {p["pid"]: p["used_mib"] for p in gpus["gpus"][1]["processes"]}
        assert held.get(worker) == 500.0, (by, gpus["gpus"][1])  # the sim kept the holder's memory

    # Back on the real clock, K (`orphans --kill`) must leave the live run's worker alone: before, the run
    # recorded lost under the stepped clock made it an orphan here, and it was killed.
    killed = doc(["orphans", str(plan), "--json", "--kill", "--yes", "--grace", "1s", "--sim", str(sim)])
    assert worker not in killed["killed"] and alive(worker), killed
    run = step_of(doc(["status", str(plan), "--json"]), "0.1")
    assert run["status"] == "in_progress" and run["run"]["ended"] is None, run


def test_a_run_recorded_before_the_step_is_stopped_whole_by_its_rollback(can_step_clock, held_run):
    """The rollback, under the stepped clock, finds the run's session by its leader's recorded start and
    stops it: before, every member was born "before" the leader (epoch times moved) and none was stopped."""
    plan, sim, worker = held_run
    done = cli(["rollback", str(plan), "0.1", "--yes", "--force"], stepped(-STEP_S))
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
        epoch = create_time(child.pid)  # an older journal's form, recorded outside the namespace
        code = f"from eagle_console.processes import alive, start_of; print(start_of({child.pid}), " \
               f"alive({child.pid}, {mine!r}), alive({child.pid}, {epoch!r}))"
        argv = ["unshare", "--time", "--fork", "--boottime", "1000", sys.executable, "-c", code]
        seen = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if seen.returncode != 0 and "unshare" in seen.stderr:
            pytest.skip(f"no time namespace here: {seen.stderr.strip()[:200]}")
        assert seen.stdout.split() == [mine, "True", "True"], seen.stderr
    finally:
        child.kill()
        child.wait()


def test_a_run_whose_supervisor_is_starting_is_not_lost_after_a_forward_step(can_step_clock, tmp_path):
    """A run begun a moment ago whose supervisor has not reported yet (it starts; seconds on a loaded node) is
    given 20 s before it is called "never started". Judged by the wall clock, a step of it forward (a VM
    resumed, chrony's makestep) made the moment long ago: the next face recorded the run lost and its step
    failed, and the supervisor went on to run the action. Now judged by the boot clock, as a process's
    start is: the run stays in progress under the stepped clock."""
    from enginekit import write_plan

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan

    plan = write_plan(tmp_path, '[[phase]]\nid = "0"\ntitle = "p"\n\n  [[phase.step]]\n  id = "0.1"\n'
                                '  title = "t"\n  run = "true"\n')
    journal = Journal.for_plan(load_plan(plan))
    journal.begin_run("0.1", command="true", log=None)  # as `run` records it before its supervisor starts
    journal.close()
    nxt = cli(["next", str(plan), "--yes"], stepped(60))  # reconciles and writes what it finds
    assert nxt.returncode in (0, 1), nxt.stderr
    step = step_of(doc(["status", str(plan), "--json"], stepped(60)), "0.1")
    assert step["status"] == "in_progress" and step["run"]["ended"] is None, step  # old: failed, lost

    # and on this machine's own clock, as before
    assert step_of(doc(["status", str(plan), "--json"]), "0.1")["status"] == "in_progress"


def test_seconds_since_a_recorded_start_are_the_boot_clocks():
    """What the 20 s grace is measured with: a stamp's age by the boot clock (this process's start: its age
    by /proc/uptime, the kernel's boot clock read another way; not psutil's, whose btime is whole seconds)."""
    from eagle_console.processes import boot_now, seconds_since, start_ticks

    age = seconds_since(start_of(os.getpid()))
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    assert age == pytest.approx(uptime - start_ticks(os.getpid()) / CLOCK_TICKS, abs=0.05)
    assert seconds_since(boot_now()) == pytest.approx(0.0, abs=0.1)
    assert seconds_since(None) is None
    other_boot = f"{boot_now().split('@')[0]}@00000000-0000-4000-8000-000000000000"
    assert seconds_since(other_boot) is None
