"""Runs through real supervisors: success, failure, timeout, checks, services, needs, concurrency."""

from __future__ import annotations

import os
import signal
import sys

import clikit
import pytest
from enginekit import engine_for, session_pids, wait_for, write_plan

from eagle_console.journal import Refused
from eagle_console.ops import steps
from eagle_console.ports import free_port


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")



def test_success_records_exit_results_and_log(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "say hi"
          run = "echo hello from the step; echo '::result tok_s=90.5'; echo '::result model=k25'"
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = eng.wait(run_id, timeout=30)
    assert run.finished and run.exit_code == 0 and run.outcome == "completed"
    assert eng.journal.statuses()["0.1"] == "completed"
    results = {r.name: r.value for r in eng.journal.results("0.1")}
    assert results == {"tok_s": 90.5, "model": "k25"}
    assert "hello from the step" in open(run.log).read()
    assert run.supervisor_pid and run.supervisor_pid != os.getpid()


def test_failure_records_exit_status(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "fails"
          run = ["bash", "-c", "echo about to fail; exit 3"]
    """)
    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=30)
    assert run.exit_code == 3 and run.outcome == "failed" and "exit status 3" in run.reason
    assert eng.journal.statuses()["0.1"] == "failed"


def test_timeout_kills_the_whole_session_including_term_ignoring_children(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "hangs"
          run = "bash -c 'trap \\"\\" TERM; sleep 300' & sleep 300 & echo started; wait"
          timeout = "1s"
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.sid and r)
    sid = run.sid
    wait_for(lambda: len(session_pids(sid)) >= 3)
    run = eng.wait(run_id, timeout=30)
    assert run.outcome == "timeout" and "timed out" in run.reason
    assert eng.journal.statuses()["0.1"] == "failed"
    assert session_pids(sid) == []


def test_check_that_fails_fails_the_step(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "checked"
          run = "echo action ok"
          check = "echo checking; test -e /nonexistent/file"
    """)
    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=30)
    assert run.exit_code == 0 and run.outcome == "failed" and "check failed" in run.reason
    assert "checking" in open(run.log).read()
    assert eng.journal.statuses()["0.1"] == "failed"


def test_needs_are_enforced(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "first"
          [[phase.step]]
          id = "0.2"
          title = "second"
          needs = ["0.1"]
          run = "true"
    """)
    eng = engine_for(path)
    with pytest.raises(Refused, match="needs 0.1"):
        eng.start("0.2")
    assert eng.journal.runs() == []
    eng.journal.mark("0.1", "completed")
    assert eng.wait(eng.start("0.2"), timeout=30).outcome == "completed"


def test_service_ready_on_http_and_later_death_fails_the_step(tmp_path):
    port = free_port()
    path = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "http service"
          run = ["{sys.executable}", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
          service = true
          ready = {{ http = "http://127.0.0.1:{port}/", timeout = "30s" }}
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = eng.wait(run_id, timeout=40)
    assert run.ready_at and not run.finished
    assert eng.journal.statuses()["0.1"] == "completed"
    os.kill(run.pid, signal.SIGKILL)
    run = eng.wait(run_id, until_ready=False, timeout=30)
    assert run.outcome == "failed" and "died after it was ready" in run.reason
    assert eng.journal.statuses()["0.1"] == "failed"
    assert any(e.kind == "service_died" for e in eng.journal.history("0.1"))


def test_service_ready_on_log_line_and_rollback_stops_it(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "log service"
          run = "echo booting; sleep 0.3; echo 'The server is fired up and ready to roll!'; sleep 300 & wait"
          service = true
          ready = { log = "fired up and ready", timeout = "30s" }
    """)
    from eagle_console.engine.rollback import rollback_outcome, start_rollback

    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=40)
    assert run.ready_at and eng.journal.statuses()["0.1"] == "completed"
    sid = run.sid
    rb_id, items = start_rollback(eng, "0.1")
    assert [i.step_id for i in items] == ["0.1"]
    wait_for(lambda: rollback_outcome(eng, rb_id), timeout=30)
    assert rollback_outcome(eng, rb_id)["outcome"] == "completed"
    assert eng.journal.statuses()["0.1"] == "rolled_back"
    assert session_pids(sid) == []
    final = wait_for(lambda: (r := eng.journal.run(run.id)) and r.finished and r)
    assert final.outcome == "stopped"


def test_two_concurrent_runs_of_one_step_start_it_once(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "slow"
          run = "sleep 2"
    """)
    procs = [clikit.start(["run", path, "0.1"]) for _ in range(2)]
    outs = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    codes = sorted(o[2] for o in outs)
    assert codes == [0, 1], outs
    refused = next(o for o in outs if o[2] == 1)
    assert "already in progress" in refused[1] and "started by" in refused[1]
    eng = engine_for(path)
    assert len([r for r in eng.journal.runs("0.1")]) == 1


def test_supervisor_killed_mid_run_shows_as_lost(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "long"
          run = "sleep 30"
    """)
    eng = engine_for(path)
    run_id = eng.start("0.1")
    run = wait_for(lambda: (r := eng.journal.run(run_id)) and r.pid and r)
    os.kill(run.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: eng.reconcile() or eng.journal.run(run_id).finished)
    run = eng.journal.run(run_id)
    assert run.outcome == "lost" and "supervisor" in run.reason
    state = eng.journal.states()["0.1"]
    assert state.status == "failed" and "lost" in state.reason
    os.killpg(run.pgid, signal.SIGKILL)


def test_next_picks_first_pending_step_with_needs_met(tmp_path):
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "a"
          run = "true"
          [[phase.step]]
          id = "0.2"
          title = "b"
          needs = ["0.1"]
          run = "true"
    """)
    eng = engine_for(path)
    assert steps.choose_next(eng).step.id == "0.1"
    eng.wait(steps.start_run(eng, "0.1"), timeout=30)
    assert steps.choose_next(eng).step.id == "0.2"
    eng.wait(steps.start_run(eng, "0.2"), timeout=30)
    choice = steps.choose_next(eng)
    assert choice.step is None and choice.why.plan_done


def test_the_supervisors_note_starts_a_line_of_its_own_after_output_without_a_newline(tmp_path):
    """Tried by hand in tmux: a step ending in `printf '半行没有换行'` showed `半行没有换行[eagle-console] the
    action completed` in the Output pane, one line glued from two (a progress bar's last redraw does the
    same)."""
    path = write_plan(tmp_path, """
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "ends mid-line"
          run = ["bash", "-c", "echo 抽取隐藏状态; printf '半行没有换行'"]
    """)
    eng = engine_for(path)
    run = eng.wait(eng.start("0.1"), timeout=30)
    assert run.outcome == "completed"
    lines = open(run.log, encoding="utf-8").read().splitlines()
    assert lines[-3:] == ["抽取隐藏状态", "半行没有换行", "[eagle-console] the action completed"], lines
