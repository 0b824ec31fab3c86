"""kill -9 of a supervisor: every reader tells the truth, every wait ends, readers write nothing (issue #15).

`status`, `status --json` and `export` reconcile (in memory: the journal file stays byte-identical), so a
run whose supervisor is gone shows `failed`/`lost`, not running forever. A `rollback` CLI whose supervisor
dies ends with a clear message and a non-zero exit, even when another process noticed the death first.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import clikit
import pytest
from enginekit import engine_for, wait_for, write_plan

from eagle_console.journal import EventKind


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=timeout)


def fingerprint(path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def long_plan(tmp_path):
    return write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "long"
          run = "sleep 60"
          rollback = "sleep 60"
    """)


def test_readers_show_a_dead_supervisors_run_as_lost_and_write_nothing(tmp_path):
    path = long_plan(tmp_path)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    os.kill(run.supervisor_pid, signal.SIGKILL)
    os.killpg(run.pgid, signal.SIGKILL)
    db = eng.journal.path
    eng.journal.close()
    before = fingerprint(db)

    out = cli("status", str(path))
    assert out.returncode == 0, out.stderr
    assert "running" not in out.stdout and "[failed]" in out.stdout
    doc = json.loads(cli("status", str(path), "--json").stdout)
    step = doc["phases"][0]["steps"][0]
    assert step["status"] == "failed" and step["run"]["ended"] is not None
    todo = json.loads(cli("export", str(path), "--format", "todowrite").stdout)
    assert [t["status"] for t in todo if "0.1" in t["content"]] != ["in_progress"]
    markdown = cli("export", str(path), "--format", "markdown").stdout
    assert "lost" in markdown or "failed" in markdown
    assert fingerprint(db) == before  # readers reconcile in memory only


def test_rollback_cli_whose_supervisor_dies_ends_with_an_error(tmp_path):
    path = long_plan(tmp_path)
    eng = engine_for(path)
    eng.journal.mark("0.1", "completed")
    waiter = subprocess.Popen([sys.executable, "-m", "eagle_console", "rollback", str(path), "0.1", "--yes"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc = wait_for(lambda: next((e for e in eng.journal.events() if e.kind == EventKind.ROLLBACK_PROC), None))
        undo = wait_for(lambda: next((r for r in eng.journal.runs("0.1") if r.kind == "rollback" and r.pid), None))
        # Someone else (a console, a status) notices the death first: the waiting CLI must still end.
        os.kill(waiter.pid, signal.SIGSTOP)
        os.kill(proc.data["supervisor_pid"], signal.SIGKILL)
        os.killpg(undo.pgid, signal.SIGKILL)
        wait_for(lambda: eng.reconcile() or eng.journal.run(undo.id).finished)
        os.kill(waiter.pid, signal.SIGCONT)
        out, err = waiter.communicate(timeout=30)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 1
    assert "supervisor died" in err and "again" in err
