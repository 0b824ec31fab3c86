"""What a run's processes really are, said by `status`: a supervisor stopped (SIGSTOP) is shown stopped, with
how to resume it, not `(running, pid N)` — the defect was about state, not time, so nothing here waits 40 s;
a supervisor that is a zombie is dead (its exit slot consulted, like any supervisor that died); and an action
that outlived its supervisor (kill -9) is said to still run, and `run` refuses to start a second copy.

Real supervisors, real steps, real signals; the zombie comes from a real parent that never reaps (a child
subreaper, as a container's PID 1 that is not an init would be)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import clikit
import pytest
from enginekit import session_pids, wait_for, write_plan

from eagle_console.journal import Journal
from eagle_console.processes import alive, stop_session

PLAN = """
    [[phase]]
    id = "0"
    title = "P"

    [[phase.step]]
    id = "0.1"
    title = "waits for go"
    run = "while [ ! -e go ]; do sleep 0.05; done"
"""


def cli(plan, *args: str) -> subprocess.CompletedProcess:
    return clikit.run([args[0], plan, *args[1:]], timeout=120)


def step_doc(plan) -> dict:
    out = cli(plan, "status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["phases"][0]["steps"][0]


def latest(plan, step_id: str = "0.1"):
    journal = Journal(plan.parent / ".eagle-console" / "t" / "journal.db", readonly=True)
    try:
        return journal.latest_run(step_id)
    finally:
        journal.close()


def started(plan):
    return wait_for(lambda: (r := latest(plan)) and r.pid and r, timeout=30)


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, T, Z, ...)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def plan(tmp_path, request):
    path = write_plan(tmp_path, PLAN)
    request.addfinalizer(lambda: cleanup(path))
    return path


def cleanup(plan) -> None:
    """Stop every run's session. A run just started has no session recorded until its supervisor has
    started the action: waited for (a test's last `run` returns before that, and its `while true` loop was
    left forking `sleep` 20 times a second for the rest of a suite run)."""
    journal = Journal(plan.parent / ".eagle-console" / "t" / "journal.db", readonly=True)
    try:
        for run in journal.runs():
            deadline = time.monotonic() + 30
            while not run.finished and not run.sid and time.monotonic() < deadline:
                time.sleep(0.05)
                run = journal.run(run.id)
            if run.supervisor_pid and alive(run.supervisor_pid, run.supervisor_ctime):
                os.kill(run.supervisor_pid, signal.SIGCONT)
            if run.sid:
                stop_session(run.sid, run.pgid, 1.0, leader_start=run.pid_ctime)
    finally:
        journal.close()


def test_a_stopped_supervisor_is_shown_stopped_with_how_to_resume(plan, tmp_path):
    assert cli(plan, "run", "0.1").returncode == 0
    run = started(plan)
    sup = run.supervisor_pid
    os.kill(sup, signal.SIGSTOP)
    wait_for(lambda: proc_state(sup) in "Tt", timeout=10)
    text = cli(plan, "status").stdout
    assert f"supervisor pid {sup} is stopped" in text and f"kill -CONT {sup}" in text, text
    doc = step_doc(plan)
    assert doc["status"] == "in_progress"
    assert doc["run"]["supervisor_pid"] == sup and doc["run"]["supervisor_state"] == "stopped"
    assert doc["run"]["action_state"] == "running"
    # the action ends while its supervisor is stopped: a zombie nobody reaps yet — not running
    (tmp_path / "go").touch()
    wait_for(lambda: proc_state(run.pid) == "Z", timeout=10)
    text = cli(plan, "status").stdout
    assert "(running" not in text and f"the action (pid {run.pid}) exited" in text, text
    assert step_doc(plan)["run"]["action_state"] == "exited"
    os.kill(sup, signal.SIGCONT)  # resumed: it records the exit
    wait_for(lambda: step_doc(plan)["status"] == "completed", timeout=30)
    assert step_doc(plan)["run"]["supervisor_state"] is None  # ended: no supervisor to speak of


NO_REAP = textwrap.dedent("""
    import ctypes, subprocess, sys, time
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come here
    subprocess.run([sys.executable, "-m", "eagle_console", "run", sys.argv[1], "0.1"], check=True)
    print("holding", flush=True)
    time.sleep(600)  # and are never reaped
""")


def test_a_zombie_supervisor_is_dead_not_running(plan, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", NO_REAP, str(plan)], stdout=subprocess.PIPE, text=True)
    try:
        while holder.stdout.readline().strip() not in ("holding", ""):
            pass
        run = started(plan)
        assert psutil_ppid(run.supervisor_pid) == holder.pid  # the parent that never reaps
        os.kill(run.supervisor_pid, signal.SIGKILL)
        wait_for(lambda: proc_state(run.supervisor_pid) == "Z", timeout=10)
        doc = step_doc(plan)  # a zombie is not a live supervisor: the run is lost, said so
        assert doc["status"] == "failed" and doc["run"]["ended"] is not None, doc
        text = cli(plan, "status").stdout
        assert "(running" not in text and "still runs" in text, text  # its action was not stopped
    finally:
        holder.kill()
        holder.wait()


def psutil_ppid(pid: int) -> int:
    import psutil

    return psutil.Process(pid).ppid()


def listed_pids(pattern: str, text: str) -> list[int]:
    found = re.search(pattern, text)
    return [int(p) for p in found.group(1).split(", ")] if found else []


FOREVER = PLAN.replace('while [ ! -e go ]; do sleep 0.05; done', 'while true; do sleep 0.05; done')


def test_a_second_copy_is_refused_while_the_action_of_a_lost_run_still_runs(tmp_path):
    plan = write_plan(tmp_path, FOREVER)
    try:
        assert cli(plan, "run", "0.1").returncode == 0
        run = started(plan)
        os.kill(run.supervisor_pid, signal.SIGKILL)  # the supervisor dies; its action runs on
        wait_for(lambda: not alive(run.supervisor_pid, run.supervisor_ctime), timeout=10)
        doc = step_doc(plan)
        assert doc["status"] == "failed"
        assert run.pid in doc["run"]["still_running"], doc
        text = cli(plan, "status").stdout
        # the pids in numeric order: after a pid wrap (32768 here) its `sleep` (301) came before it (32760)
        assert run.pid in listed_pids(r"its action still runs \(pids ([\d, ]+), session", text), text
        again = cli(plan, "run", "0.1")
        assert again.returncode == 1, again.stdout + again.stderr
        assert run.pid in listed_pids(r"pids ([\d, ]+)", again.stderr), again.stderr
        assert "second copy" in again.stderr, again.stderr
        assert f"pkill -TERM -s {run.sid}" in again.stderr and "eagle-console rollback" in again.stderr
        assert len(Journal(plan.parent / ".eagle-console" / "t" / "journal.db", readonly=True).runs()) == 1
        assert cli(plan, "run", "0.1", "--force").returncode == 1  # --force is for needs, not for 2 copies
        # the way out it names: the rollback stops the lost run's session, then it runs again
        out = cli(plan, "rollback", "0.1", "--yes")
        assert out.returncode == 0, out.stdout + out.stderr
        assert session_pids(run.sid) == []
        assert step_doc(plan)["run"]["still_running"] == []
        again = cli(plan, "run", "0.1")
        assert again.returncode == 0, again.stderr
    finally:
        cleanup(plan)


def test_a_reused_session_number_is_not_taken_for_the_lost_action(tmp_path):
    """The recorded leader's start time decides: a live session whose leader was born after the recorded
    one is someone else's, whatever its number."""
    from eagle_console.node.liveness import still_running

    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        from eagle_console.processes import CLOCK_TICKS, stamp, start_ticks

        born = start_ticks(other.pid)
        plan = write_plan(tmp_path, FOREVER)
        journal = Journal(plan.parent / ".eagle-console" / "t" / "journal.db")
        run_id = journal.begin_run("0.1", command="x", log=None)
        journal.record_proc(run_id, "0.1", supervisor_pid=1, pid=other.pid,
                            pid_ctime=stamp(born - 100 * CLOCK_TICKS),
                            pgid=other.pid, sid=other.pid)
        journal.end_run(run_id, "0.1", exit_code=None, outcome="lost", reason="lost", step_status="failed")
        assert still_running(journal.run(run_id)) == []  # same number, another process
        journal.record_proc(run_id, "0.1", pid_ctime=stamp(born))
        assert still_running(journal.run(run_id)) == [other.pid]  # the recorded one
        journal.close()
    finally:
        other.kill()
        other.wait()


def test_the_console_r_key_gets_the_same_refusal(tmp_path):
    from tuikit import drive, notices, open_app, select, until

    plan = write_plan(tmp_path, FOREVER)
    try:
        assert cli(plan, "run", "0.1").returncode == 0
        run = started(plan)
        os.kill(run.supervisor_pid, signal.SIGKILL)
        wait_for(lambda: not alive(run.supervisor_pid, run.supervisor_ctime), timeout=10)
        app, journal = open_app(plan)

        async def scenario(pilot):
            await select(pilot, "0.1")
            await pilot.press("r")
            said = await until(pilot, lambda: [n for n in notices(app) if "second copy" in n], what="refusal")
            assert f"pids {run.pid}" in said[0] and said[0].endswith("roll the step back (it stops that session) (u)")
            assert len(journal.runs()) == 1  # nothing started

        drive(app, scenario)
        journal.close()
    finally:
        cleanup(plan)


def test_a_running_supervisor_holds_the_engine_marker_its_action_does_not(plan, tmp_path):
    """A kill tells a supervisor by the package file it holds open (node/selfmark.py), not only by its
    command line or the journal; the step's own command (bash here) is not marked: it stays killable."""
    from eagle_console.node.selfmark import ENGINE, marked_kind

    assert cli(plan, "run", "0.1").returncode == 0
    run = started(plan)
    assert marked_kind(run.supervisor_pid) == ENGINE
    assert marked_kind(run.pid) is None
    (tmp_path / "go").touch()
    wait_for(lambda: step_doc(plan)["status"] == "completed", timeout=30)
