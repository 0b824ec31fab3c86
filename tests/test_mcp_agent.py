"""An AI agent on the demo node through `eagle-console mcp`, with the SDK's real client over stdio: it steps
Phase 0 while a console (App.run_test) approves what needs a person; a denial starts nothing and says who
denied; a kill waits for `approve`; an agent's run outlives its MCP server (issue 34)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from mcpkit import AGENT, agent
from tuikit import label, notices, open_app, screen_text, select, until

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan
from eagle_console.sim import gpustate

FACE = f"agent:{AGENT}"


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """The demo node (two orphaned workers holding GPU memory), stopped afterwards."""
    from eagle_console.cli.demo_cmds import stop_demo
    from eagle_console.demo.build import build_demo

    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    root = tmp_path / "demo"
    plan = build_demo(root, orphans=2)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(root / "sim"))  # the console's runs see the sim, as `demo` sets
    yield plan, root / "sim"
    stop_demo(plan, root)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eagle_console", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def marked_by() -> str:
    from eagle_console.journal.operator import current_operator

    return current_operator()  # the agent's server runs as this user, with this environment


def orphan_pids(sim: Path) -> set[int]:
    return {h.pid for h in gpustate.holders(sim) if psutil.pid_exists(h.pid)}


def test_an_agent_steps_phase0_while_a_console_approves(demo) -> None:
    plan, sim = demo
    orphans = orphan_pids(sim)
    assert len(orphans) == 2
    app, journal = open_app(plan, sim_dir=sim)

    async def answer(pilot, what: str, note: str) -> None:
        """The operator: sees the request (toast, tree marker, `a Approve` on the key line) and approves it."""
        await until(pilot, lambda: any(f"asks to run {what}" in n for n in notices(app)), what="the toast")
        await until(pilot, lambda: "⚠ approve?" in label(app, what), what="the tree marker")
        assert "a Approve" in screen_text(app)
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "ApprovalScreen", what="the Approve modal")
        assert FACE in screen_text(app)
        await pilot.press("enter")  # ✔ Approve (highlighted), then the note
        for key in note:
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")

    async def scenario(pilot) -> None:
        async with agent(plan, sim=sim) as a:
            status = await a.ok("plan_status")
            assert status["next"]["step"] == "0.1" and status["next"]["needs_approval"]
            # 0.1 (gpu.kill) waits for a person: the agent's call returns once the console approved it
            call = asyncio.ensure_future(a.ok("run_step", step="0.1", wait_s=60))
            await answer(pilot, "0.1", "ok")
            reply = await call
            assert reply["status"] == "approved" and reply["started"], reply
            assert reply["approval"]["decided"]["face"] == "console" and reply["approval"]["decided"]["note"] == "ok"
            run = reply["run"]
            assert run["face"] == FACE  # the run is the agent's act; the approval the person's
            done = await a.ok("wait_run", run_id=run["id"], timeout_s=60)
            assert done["ok"] and done["status"] == "completed", done
            assert not orphan_pids(sim) & orphans, "the orphans are gone"
            assert not (await a.ok("orphans"))["orphans"]
            await until(pilot, lambda: "⚠ approve?" not in label(app, "0.1"), what="the marker gone")

            # 0.2 (json.set + drafter.check) needs nobody: it starts at once; the agent reads the check, then
            # marks the step with its decision as a note — the console says who, through which face
            started = await a.ok("run_step", step="0.2")
            assert started["started"] and (await a.ok("wait_run", run_id=started["run"]["id"]))["ok"]
            check = await a.ok("drafter_check", step="0.2")
            assert check["ok"] and {"code", "severity", "message"} <= set(check["findings"][0])
            note = "config fixed by the agent; d2t kept (lm_head trained against it)"
            marked = await a.ok("mark_step", step="0.2", status="completed", note=note)
            assert marked["face"] == FACE
            await select(pilot, "0.2")
            await until(pilot, lambda: "config fixed by the agent" in str(app.detail.render()), what="the note")
            detail = str(app.detail.render())
            assert f"by {marked_by()} via {FACE}" in detail and f"note ({marked_by()} via {FACE}): {note}" in detail

            # 0.3 (sglang.server) waits too; once approved the agent waits for ready and reads the findings
            call = asyncio.ensure_future(a.ok("run_step", step="0.3", wait_s=60))
            await answer(pilot, "0.3", "go")
            reply = await call
            assert reply["status"] == "approved", reply
            ready = await a.ok("wait_run", run_id=reply["run"]["id"], timeout_s=120)
            assert ready["ready"], ready
            summary = await a.ok("server_summary", step="0.3")
            assert summary["ready"] is True and isinstance(summary["findings"], list)
            nccl = await a.ok("nccl_summary")
            assert "findings" in nccl
            metrics = await a.ok("metrics", step="0.3")  # the server's /metrics, as `metrics --json` reads it
            assert metrics["service"] == "0.3" and isinstance(metrics["findings"], list), metrics
            events = (await a.read("eagle://journal/recent"))["events"]
            assert any(e["kind"] == "approval_decided" and e["face"] == "console" for e in events)

    from tuikit import drive

    drive(app, scenario)
    # the journal, read by anyone: the agent's acts and the console's approvals, each with its face
    doc = json.loads(cli("status", plan, "--json").stdout)
    steps = {s["id"]: s for p in doc["phases"] for s in p["steps"]}
    assert steps["0.2"]["changed"]["face"] == FACE and steps["0.1"]["run"]["face"] == FACE
    assert doc["approvals"] == []
    exported = cli("export", plan, "--format", "markdown").stdout
    assert f"via {FACE}" in exported
    journal.close()


def test_a_denied_run_starts_nothing_and_says_who_denied_it(demo) -> None:
    plan, sim = demo
    orphans = orphan_pids(sim)

    async def scenario() -> None:
        async with agent(plan, sim=sim) as a:
            asked = await a.ok("run_step", step="0.1", wait_s=0)
            assert asked["status"] == "awaiting_approval" and not asked["started"]
            request = asked["approval"]["id"]
            again = await a.ok("run_step", step="0.1", wait_s=0)  # asking twice: the same request
            assert again["approval"]["id"] == request
            listed = cli("approve", plan)
            assert listed.returncode == 0 and f"request {request}:" in listed.stdout and FACE in listed.stdout
            denied = cli("approve", plan, request, "--deny", "--note", "not on a Friday")
            assert denied.returncode == 0, denied.stderr
            reply = await a.ok("approval_status", request_id=request)
            assert reply["status"] == "denied" and not reply["started"] and "run" not in reply
            assert "denied by" in reply["message"] and "via cli" in reply["message"]
            assert "not on a Friday" in reply["message"] and "nothing was started" in reply["message"]
            # deciding twice is refused, naming who decided
            second = cli("approve", plan, request)
            assert second.returncode == 1 and "already denied by" in second.stderr

            # a K-like kill waits too; `approve` carries it out with the agent's face
            kill = await a.ok("kill_orphans", grace="1s", wait_s=0)
            assert kill["status"] == "awaiting_approval" and len(kill["approval"]["preview"]) == 2
            assert orphan_pids(sim) == orphans  # nothing signalled yet
            approved = cli("approve", plan, kill["approval"]["id"], "--sim", sim)
            assert approved.returncode == 0, approved.stderr
            reply = await a.ok("approval_status", request_id=kill["approval"]["id"], wait_s=10)
            assert sorted(reply["approval"]["outcome"]["kill"]["killed"]) == sorted(orphans)

    asyncio.run(scenario())
    journal = Journal.for_plan(load_plan(plan), readonly=True)
    try:
        assert journal.runs("0.1") == []  # the denied run was never begun
        assert journal.statuses().get("0.1", "pending") == "pending"
        kills = [e for e in journal.events() if e.kind == "kill"]
        assert len(kills) == 1 and kills[0].face == FACE and kills[0].data["face"] == FACE
    finally:
        journal.close()
    assert not orphan_pids(sim)


PLAN_LONG = """[plan]
id = "outlive"
title = "an agent's run outlives its server"

[[phase]]
id = "p"
title = "P"
  [[phase.step]]
  id = "p.1"
  title = "a long step"
  run = "sleep 3; echo finished by itself"
  [[phase.step]]
  id = "p.2"
  title = "a step the plan wants approved"
  approve = true
  run = "echo approved later"
"""


def _cmdline(proc: psutil.Process) -> list[str]:
    # a child that already exited (a zombie not yet reaped, e.g. a run's detached starter) has no cmdline
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def mcp_server_pid(plan: Path) -> int:
    procs = [p for p in psutil.Process().children(recursive=True)
             if "mcp" in _cmdline(p) and str(plan) in _cmdline(p)]
    assert len(procs) == 1, procs
    return procs[0].pid


def test_an_agents_run_survives_its_mcp_server_being_killed(tmp_path) -> None:
    plan = tmp_path / "outlive.toml"
    plan.write_text(PLAN_LONG)

    async def scenario() -> tuple[int, int]:
        async with agent(plan) as a:
            started = await a.ok("run_step", step="p.1")
            asked = await a.ok("run_step", step="p.2", wait_s=0)
            assert asked["status"] == "awaiting_approval"
            os.kill(mcp_server_pid(plan), 9)  # the agent's host dies, or kills its server
            return started["run"]["id"], asked["approval"]["id"]

    run_id, request = asyncio.run(scenario())
    # the run goes on and ends by itself; the request still waits, and a person's approval starts it
    approved = cli("approve", plan, request, "--note", "now")
    assert approved.returncode == 0 and "started run" in approved.stdout, approved
    journal = Journal.for_plan(load_plan(plan), readonly=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (journal.run(run_id) and journal.run(run_id).finished):
            time.sleep(0.2)
        run = journal.run(run_id)
        assert run is not None and run.outcome == "completed" and run.face == FACE
        assert "finished by itself" in Path(run.log).read_text()
        later = journal.latest_run("p.2")
        assert later is not None and later.face == FACE
    finally:
        journal.close()
