"""A step with `node` runs as a Ray job on that node (real local cluster, tests/clusterkit.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from clusterkit import cli, cluster_plan, needs_ray, step_state

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

pytestmark = needs_ray

STEPS = '''
  [[phase.step]]
  id = "0.1"
  title = "on b"
  node = "b"
  run = "echo SIM=$EAGLE_CONSOLE_SIM; echo '::result tok_s=12.5'"
  [[phase.step]]
  id = "0.2"
  title = "long on b"
  node = "b"
  run = "echo ACTION_PID=$$; exec sleep 300"
  [[phase.step]]
  id = "0.3"
  title = "no such node"
  node = "zz"
  run = "true"
  [[phase.step]]
  id = "0.4"
  title = "lines over time on b"
  node = "b"
  run = "for i in 1 2 3 4 5 6; do echo LINE$i; sleep 0.4; done"
'''


def _until(cond, timeout: float = 60.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return value


def _journal(plan: Path) -> Journal:
    return Journal.for_plan(load_plan(plan))


def test_a_step_pinned_to_b_runs_there_with_its_result_and_log(ray_cluster, tmp_path):
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    r = cli("run", plan, "0.1", "--yes", "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step_state(plan, "0.1")[0] == "completed"
    log = cli("log", plan, "0.1").stdout
    assert f"SIM={ray_cluster.nodes['b'].sim}" in log  # b's environment: it ran on node b
    journal = _journal(plan)
    run = journal.latest_run("0.1")
    assert run.node == "b" and run.job_id and run.outcome == "completed"
    assert [(r.name, r.value) for r in journal.results("0.1")][-1] == ("tok_s", 12.5)


def test_run_wait_streams_a_node_runs_output_once(ray_cluster, tmp_path):
    """The step log is refreshed from the job's at every sync; it was rewritten whole each time (a new file),
    so `run --wait`, following it, printed every line again at every sync (LINE1 26 times)."""
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    r = cli("run", plan, "0.4", "--yes", "--wait")
    assert r.returncode == 0, r.stdout + r.stderr
    printed = re.findall(r"^LINE\d$", r.stdout, re.M)
    assert printed == [f"LINE{i}" for i in range(1, 7)], r.stdout


def test_an_unknown_node_is_refused_and_the_step_failed(ray_cluster, tmp_path):
    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    r = cli("run", plan, "0.3", "--yes")
    assert r.returncode != 0 and "zz" in r.stderr
    assert step_state(plan, "0.3")[0] == "failed"


def test_a_node_run_survives_kill_9_of_its_cli_and_rollback_stops_its_job(ray_cluster, tmp_path):
    from ray.job_submission import JobSubmissionClient

    plan = cluster_plan(tmp_path, ray_cluster, STEPS)
    waiter = subprocess.Popen([sys.executable, "-m", "eagle_console", "run", str(plan), "0.2", "--yes", "--wait"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = _until(lambda: re.search(r"ACTION_PID=(\d+)", cli("log", plan, "0.2").stdout), what="its first line")
    action_pid = int(found.group(1))
    os.kill(waiter.pid, signal.SIGKILL)
    waiter.wait()
    time.sleep(1.0)
    assert step_state(plan, "0.2")[0] == "in_progress"
    run = _journal(plan).latest_run("0.2")
    client = JobSubmissionClient(ray_cluster.address)
    assert str(client.get_job_status(run.job_id)) in ("RUNNING", "JobStatus.RUNNING")
    assert Path(f"/proc/{action_pid}").exists()

    r = cli("rollback", plan, "0.2", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step_state(plan, "0.2")[0] == "rolled_back"
    assert client.get_job_status(run.job_id).is_terminal()
    _until(lambda: not Path(f"/proc/{action_pid}").exists() or
           open(f"/proc/{action_pid}/stat").read().split()[2] == "Z", 15, "the action to end")
    ended = _journal(plan).run(run.id)
    assert ended.finished and ended.outcome in ("stopped", "failed"), ended

