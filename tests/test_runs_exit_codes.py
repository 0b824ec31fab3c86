"""The journal records the real exit status of a stopped action, never 0 (issue #15).

A timeout is journaled as 124 (what timeout(1) reports), a signal as its negative number. Before, the
supervisor's sweep of the session reaped the action first and `Popen.poll` then said 0.
"""

from __future__ import annotations

import os
import signal

import pytest
from enginekit import engine_for, wait_for, write_plan


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "2")


def sleeper(tmp_path, timeout: str | None = None):
    extra = f'timeout = "{timeout}"' if timeout else ""
    return engine_for(write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "sleep"
          run = "sleep 60"
          {extra}
    """))


def test_timeout_is_journaled_as_124_and_failed(tmp_path):
    eng = sleeper(tmp_path, "1s")
    run = eng.wait(eng.start("0.1"), timeout=60)
    assert run.finished and run.outcome == "timeout"
    assert run.exit_code == 124
    assert eng.journal.statuses()["0.1"] == "failed"


def test_action_killed_by_sigterm_from_outside_is_minus_15_and_failed(tmp_path):
    eng = sleeper(tmp_path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    os.kill(run.pid, signal.SIGTERM)
    run = eng.wait(run_id, timeout=60)
    assert run.finished and run.exit_code == -15
    assert eng.journal.statuses()["0.1"] == "failed"


def test_supervisor_told_to_stop_records_the_actions_signal_not_0(tmp_path):
    eng = sleeper(tmp_path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    os.kill(run.supervisor_pid, signal.SIGTERM)  # it stops the action's session, then records the end
    run = eng.wait(run_id, timeout=60)
    assert run.finished and run.outcome == "failed"
    assert run.exit_code == -15
    assert eng.journal.statuses()["0.1"] == "failed"
