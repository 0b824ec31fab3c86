"""A node's run records are bounded: each new node run's supervisor (its JobEvents, the path a Ray job's
entrypoint takes) removes the records of runs that ended more than 30 days ago, and half-written leftovers;
a record whose supervisor or action still runs is kept however old. Real processes, real files; no Ray
(the supervisor's side never imports it). Old: the records were never removed."""

from __future__ import annotations

import json
import os
import subprocess
import time

from eagle_console.cluster import noderuns
from eagle_console.cluster.job_events import JobEvents
from eagle_console.processes import start_of

OLD = time.time() - noderuns.KEEP_S - 86400


def _record(folder, job_id: str, age_s: float | None = None, **data) -> None:
    path = folder / f"{job_id}.json"
    path.write_text(json.dumps({"job_id": job_id, **data}))
    if age_s is not None:
        os.utime(path, (time.time() - age_s, time.time() - age_s))


def test_a_new_node_run_removes_records_of_runs_ended_long_ago_and_keeps_live_ones(tmp_path, monkeypatch):
    folder = tmp_path / "node-runs"
    folder.mkdir()
    monkeypatch.setenv(noderuns.STATE_ENV, str(folder))
    gone = subprocess.Popen(["true"])
    gone.wait()
    supervisor = subprocess.Popen(["sleep", "60"])
    action = subprocess.Popen(["sleep", "60"], start_new_session=True)
    old = noderuns.KEEP_S + 86400
    try:
        _record(folder, "ended-long-ago", old, supervisor_pid=gone.pid, exit={"outcome": "completed"})
        _record(folder, "never-ended-dead", old, supervisor_pid=gone.pid)
        _record(folder, "ended-yesterday", 86400, supervisor_pid=gone.pid, exit={"outcome": "failed"})
        _record(folder, "supervisor-alive", old, supervisor_pid=supervisor.pid,
                supervisor_ctime=start_of(supervisor.pid))
        _record(folder, "action-alive", old, supervisor_pid=gone.pid, sid=action.pid, pgid=action.pid,
                pid_ctime=start_of(action.pid))
        (folder / "half.json.123.tmp").write_text("{")
        os.utime(folder / "half.json.123.tmp", (OLD, OLD))
        (folder / "notes.txt").write_text("not ours")
        os.utime(folder / "notes.txt", (OLD, OLD))

        monkeypatch.setenv(noderuns.JOB_CONFIG_ENV, json.dumps({"metadata": {"job_submission_id": "new-run"}}))
        JobEvents()

        assert sorted(p.name for p in folder.iterdir()) == [
            "action-alive.json", "ended-yesterday.json", "new-run.json", "notes.txt", "supervisor-alive.json"]
    finally:
        supervisor.kill()
        action.kill()
        supervisor.wait()
        action.wait()


def test_prune_without_a_folder_does_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(noderuns.STATE_ENV, str(tmp_path / "none"))
    assert noderuns.prune() == []
