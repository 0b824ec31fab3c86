"""A node run under faults is `lost` only when it is (real local cluster, tests/clusterkit.py): b's raylet
killed -9, its job forgotten by the cluster (a 404),
read-only readers, and the operator closing a run the cluster forgot."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from clusterkit import cli, cluster_plan, needs_ray, running, step_state

from eagle_console.engine.runner import Engine
from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

pytestmark = needs_ray

LONG = '''
  [[phase.step]]
  id = "0.1"
  title = "long on b"
  node = "b"
  run = "echo ACTION_PID=$$; exec sleep 300"
  rollback = "true"
'''


def _until(cond, timeout: float = 60.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return value


def _start_long(ray_cluster, tmp_path: Path) -> tuple[Path, int, Engine]:
    """Step 0.1 running on b; its action's pid (from its log) and an engine on a writable journal."""
    plan = cluster_plan(tmp_path, ray_cluster, LONG)
    r = cli("run", plan, "0.1", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    found = _until(lambda: re.search(r"ACTION_PID=(\d+)", cli("log", plan, "0.1").stdout), what="its first line")
    loaded = load_plan(plan)
    return plan, int(found.group(1)), Engine(loaded, Journal.for_plan(loaded))


def _restart_b(ray_cluster, raylet: int) -> None:
    if running(raylet):
        os.kill(raylet, signal.SIGKILL)
    _until(lambda: not running(raylet), 30, "b's raylet to end")
    ray_cluster.restart("b")


def _never_lost(engine: Engine, run_id: int, action_pid: int, seconds: float) -> None:
    """Reconcile (a writer: what it decides is journaled) for `seconds`; the run must not end while its action
    runs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        engine.reconcile()
        run = engine.journal.run(run_id)
        assert not run.finished or not running(action_pid), f"{run.outcome}: {run.reason}"
        time.sleep(0.5)


def test_a_killed_raylet_leaves_the_run_unknown_then_found_on_b_and_stopped_there(ray_cluster, tmp_path):
    """kill -9 of b's raylet: the run's supervisor and action go on on b (Ray 2.60 starts the entrypoint in a
    session of its own); it was journaled `lost` within seconds, its job then a 404 forever once forgotten."""
    from ray.job_submission import JobSubmissionClient

    from eagle_console.cluster import jobs

    plan, action_pid, engine = _start_long(ray_cluster, tmp_path)
    _until(lambda: (engine.reconcile(), engine.journal.latest_run("0.1").pid)[1], 30, "its pids")
    run = engine.journal.latest_run("0.1")
    raylet = ray_cluster.nodes["b"].raylet_pid()
    os.kill(raylet, signal.SIGKILL)
    try:
        _never_lost(engine, run.id, action_pid, 6.0)
        assert running(action_pid)  # the step goes on on b all along
        # b does not answer: the run is unknown, shown as such, never lost
        doc = json.loads(cli("status", plan, "--json").stdout)
        step = doc["phases"][0]["steps"][0]
        assert step["status"] == "in_progress" and step["run"]["node_unreachable"], step
    except BaseException:
        os.kill(action_pid, signal.SIGKILL)  # what the old code left running on b
        raise
    finally:
        _restart_b(ray_cluster, raylet)
    # b answers again: its agent finds the supervisor by what it recorded on b
    _until(lambda: (engine.reconcile(), (n := jobs.node_note(run.job_id)) and n.state == "elsewhere")[1], 60,
           "b's agent to find the run")
    assert not engine.journal.run(run.id).finished
    client = JobSubmissionClient(ray_cluster.address)
    client.delete_job(run.job_id)  # the cluster forgets the job, as a restarted head does: a 404 from now on
    r = cli("status", plan)
    assert r.returncode == 0 and "cannot read" not in r.stderr, r.stderr
    assert "still running on node b" in r.stdout, r.stdout
    assert step_state(plan, "0.1")[0] == "in_progress"

    r = cli("rollback", plan, "0.1", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    _until(lambda: not running(action_pid), 30, "the action on b to be stopped")
    assert step_state(plan, "0.1")[0] == "rolled_back"
    ended = Journal.for_plan(load_plan(plan)).run(run.id)
    assert ended.finished and ended.outcome in ("stopped", "failed"), ended  # its supervisor recorded the SIGTERM on b


def test_a_run_whose_node_is_gone_is_closed_by_mark_and_rollback_fails_until_it_can_stop_it(ray_cluster, tmp_path):
    plan, action_pid, engine = _start_long(ray_cluster, tmp_path)
    run = engine.journal.latest_run("0.1")
    raylet = ray_cluster.nodes["b"].raylet_pid()
    os.kill(raylet, signal.SIGKILL)
    try:
        _never_lost(engine, run.id, action_pid, 4.0)
        # nothing can stop it now: the rollback fails, saying so, instead of "rolled back"
        r = cli("rollback", plan, "0.1", "--yes")
        assert r.returncode != 0 and "rolled back: 0.1" not in r.stdout, r.stdout + r.stderr
        assert step_state(plan, "0.1")[0] != "rolled_back"
        r = cli("mark", plan, "0.1", "failed", "--note", "b is down for repairs")
        assert r.returncode == 0, r.stderr
        closed = Journal.for_plan(load_plan(plan)).run(run.id)
        assert closed.finished and closed.outcome == "closed" and "node b" in closed.reason, closed
        assert step_state(plan, "0.1")[0] == "failed"
    finally:
        _restart_b(ray_cluster, raylet)
    r = cli("rollback", plan, "0.1", "--yes")  # b is back: the closed run's action is stopped there
    assert r.returncode == 0, r.stdout + r.stderr
    _until(lambda: not running(action_pid), 30, "the action on b to be stopped")


HOLDER = '''
import os, sys, time
from eagle_console.sim import gpustate
gpustate.hold(os.environ["EAGLE_CONSOLE_SIM"], {0: 700})
print("HOLDING", flush=True)
time.sleep(300)
'''


def test_read_only_readers_see_a_node_runs_pids_and_end(ray_cluster, tmp_path):
    """`status` and `orphans` could not record a node run's pids or end ("the journal … is open read-only"):
    a finished run stayed running with pid None, and the run's own GPU holder on b was `other`."""
    from ray.job_submission import JobSubmissionClient

    script = tmp_path / "hold.py"
    script.write_text(HOLDER)
    plan = cluster_plan(tmp_path, ray_cluster, f'''
  [[phase.step]]
  id = "0.1"
  title = "quick on b"
  node = "b"
  run = "echo done"
  [[phase.step]]
  id = "0.2"
  title = "holds a GPU on b"
  node = "b"
  run = "exec {sys.executable} {script}"
''')
    client = JobSubmissionClient(ray_cluster.address)
    assert cli("run", plan, "0.1", "--yes").returncode == 0
    job = Journal.for_plan(load_plan(plan)).latest_run("0.1").job_id
    _until(lambda: client.get_job_status(job).is_terminal(), 60, "the job to end")
    status, step = step_state(plan, "0.1")
    assert status == "completed" and step["run"]["pid"], step

    assert cli("run", plan, "0.2", "--yes").returncode == 0
    _until(lambda: "HOLDING" in cli("log", plan, "0.2").stdout, 60, "the holder")
    # a process of its own, as this test was written: asked in this process the moment HOLDING is logged, the
    # holder is still `other` (its run's pids reach b's record a moment later; a race left to the cluster's owners)
    r = cli("orphans", plan, "--json", process=True)
    holders = json.loads(r.stdout)["nodes"]["b"]["holders"]
    mine = [h for h in holders if h["owner"] == "0.2"]
    assert mine and mine[0]["class"] == "tracked", holders
    assert cli("rollback", plan, "0.2", "--yes", "--force").returncode == 0


def test_the_lost_toast_says_lost_once(tmp_path):
    from eagle_console.ops.notices import event_notice

    journal = Journal(tmp_path / "journal.db")
    run_id = journal.begin_run("0.1", command="true", log=None)
    journal.end_run(run_id, "0.1", exit_code=None, outcome="lost",
                    reason="lost: its supervisor (pid 7) died without recording an exit", step_status="failed")
    exit_event = next(e for e in journal.events() if e.kind == "run_exit")
    text, severity = event_notice(None, exit_event)
    assert text == "0.1 lost: its supervisor (pid 7) died without recording an exit" and severity == "error"
