"""An approval whose approver dies while carrying it out (a console closed by force, `approve` killed by an
operator's Ctrl+\\ or the OOM killer) is said as such, once: before, the request stayed "approved" with no
outcome for ever, and the agent waiting on it was told "approved" with nothing started, on every call.

The approver here is a real `eagle-console approve` process, SIGKILLed while it waits out the grace of the kill
it approved: the orphan it signals is stopped (SIGSTOP), so its SIGTERM stays pending and it does not exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from enginekit import write_plan
from test_tui_panes_gpus import stop_pids

from eagle_console.journal.kinds import EventKind
from eagle_console.mcp.tools import AgentTools
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave

STEP = """
[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "a step"
  run = "true"
"""


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    d = tmp_path / "sim"
    gpustate.create_node(d)
    return d


def test_an_approver_killed_while_carrying_out_a_kill_is_said_once_not_approved_for_ever(tmp_path, sim):
    plan = write_plan(tmp_path, STEP)
    (pid,) = leave(sim, "setsid", count=1, mib=900.0, gpus=[5]).pids
    approver = None
    try:
        os.kill(pid, signal.SIGSTOP)  # a stuck worker: SIGTERM waits, the approver waits out its grace
        agent = AgentTools(plan, sim_dir=sim)
        agent.set_client("claude-code")
        asked, failed = agent.call(agent.kill_orphans, "60s", 0)
        assert not failed and asked["status"] == "awaiting_approval", asked
        request = asked["approval"]["id"]
        approver = subprocess.Popen([sys.executable, "-m", "eagle_console", "approve", str(plan), str(request),
                                     "--sim", str(sim)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while agent.journal.approval(request).status != "approved":
            assert approver.poll() is None and time.monotonic() < deadline, approver.stdout.read()
            time.sleep(0.05)
        # inside the kill's 60 s grace: the SIGTERM is sent (pending on the stopped worker), nothing recorded
        # yet. A fixed 0.5 s was not enough on a loaded VM: the approver was killed before it had signalled
        deadline = time.monotonic() + 30
        while not sigterm_pending(pid):
            assert approver.poll() is None and time.monotonic() < deadline, approver.stdout.read()
            time.sleep(0.05)
        assert agent.journal.approval(request).outcome is None
        approver.kill()
        approver.wait()

        doc, failed = agent.call(agent.approval_status, request, 5)
        assert not failed and doc["status"] == "approved" and not doc["started"], doc
        assert doc["approval"]["outcome"]["approver_gone"] == approver.pid
        message = doc["message"]
        assert f"the process that approved it (pid {approver.pid}" in message, message
        assert "ended before it recorded what the approval started" in message
        assert "it may have signalled some of the processes (see orphans)" in message
        assert "ask again" in message
        again, _ = agent.call(agent.approval_status, request, 0)
        assert again["message"] == message
        dones = [e for e in agent.journal.events() if e.kind == EventKind.APPROVAL_DONE and e.run_id == request]
        assert len(dones) == 1  # said once, whoever looks after

        # what the message warns of: the dead approver's SIGTERM was sent, and ends the worker once it runs
        worker = psutil.Process(pid)  # before SIGCONT: it ends (and is reaped) at once
        os.kill(pid, signal.SIGCONT)
        worker.wait(10)
        asked, failed = agent.call(agent.kill_orphans, "5s", 0)
        assert not failed and asked["message"] == "no orphan to kill", asked
    finally:
        if approver is not None and approver.poll() is None:
            approver.kill()
            approver.wait()
        stop_pids([pid])


def test_a_live_approver_still_carrying_out_is_waited_for(tmp_path, sim):
    """The same request while its approver lives: approved, no outcome yet, nothing settled by a reader."""
    plan = write_plan(tmp_path, STEP)
    (pid,) = leave(sim, "setsid", count=1, mib=900.0, gpus=[6]).pids
    approver = None
    try:
        os.kill(pid, signal.SIGSTOP)
        agent = AgentTools(plan, sim_dir=sim)
        asked, _ = agent.call(agent.kill_orphans, "60s", 0)
        request = asked["approval"]["id"]
        approver = subprocess.Popen([sys.executable, "-m", "eagle_console", "approve", str(plan), str(request),
                                     "--sim", str(sim)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while agent.journal.approval(request).status != "approved":
            assert approver.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        doc, failed = agent.call(agent.approval_status, request, 1)
        assert not failed and doc["status"] == "approved" and doc["approval"]["outcome"] is None, doc
    finally:
        if approver is not None:
            approver.kill()
            approver.wait()
        stop_pids([pid])


def test_a_run_the_dead_approver_had_started_is_named_in_what_the_agent_is_told(tmp_path):
    """The approver died after the run began and before it recorded that: the run it started, the agent's
    (acting_as), begun after the decision, is named; the decision was written by a real process now gone."""
    from enginekit import engine_for, wait_for

    from eagle_console.journal import Journal
    from eagle_console.ops import approvals

    engine = engine_for(write_plan(tmp_path, STEP.replace('run = "true"', 'run = "true"\n  approve = true')))
    journal = engine.journal
    with journal.acting_as("bot", "agent:claude-code"):
        req = approvals.ask_run(engine, "0.1")
    decider = subprocess.run(
        [sys.executable, "-c", "import sys; from eagle_console.journal import Journal; "
         "Journal(sys.argv[1], face='console').decide_approval(int(sys.argv[2]), True)",
         str(journal.path), str(req.id)], capture_output=True, text=True, timeout=60)
    assert decider.returncode == 0, decider.stderr
    decided = journal.approval(req.id)
    assert decided.status == "approved" and decided.decided_pid not in (None, os.getpid())
    with journal.acting_as(req.asked_by, req.asked_face):  # what the approver had done before it died
        run_id = engine.start("0.1")
    wait_for(lambda: journal.run(run_id).outcome is not None)

    settled = approvals.wait_settled(Journal(journal.path, readonly=True), req.id, 0)
    assert settled.outcome["run_id"] == run_id  # a read-only reader says it, writes nothing
    assert journal.approval(req.id).outcome is None
    settled = approvals.wait_settled(journal, req.id, 0)
    text = approvals.outcome_text(settled)
    assert settled.outcome["run_id"] == run_id and f"run {run_id} had started" in text, text
    assert "approved by" in text and "via console" in text


def sigterm_pending(pid: int) -> bool:
    """A SIGTERM waits on the process (stopped, it cannot take it): bit 15 of its pending masks in
    /proc/PID/status (ShdPnd: sent to the process, SigPnd: to its thread)."""
    masks = [int(line.split()[1], 16) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
             if line.startswith(("ShdPnd:", "SigPnd:"))]
    return any(mask & (1 << (signal.SIGTERM - 1)) for mask in masks)
