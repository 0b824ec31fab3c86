"""Orphans as operators really leave them (issue 26): from their own login shell (no setsid), under nohup,
in another terminal, with setsid, a launcher SIGKILLed or Ctrl+C'd with workers that ignore SIGINT, and
adopted by a subreaper instead of PID 1. For each, `orphans --kill` run from that shell kills every orphan,
says which were started from this terminal, and spares the live job beside them; K does the same in the
console. Before, every orphan in the console's session was refused ("in the console's session")."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import clikit
import psutil
import pytest
from test_tui_panes_gpus import make_ctx, stop_pids, until

from eagle_console.node.gpus import open_backend
from eagle_console.node.kill import LIVE_JOB, MAYBE_LIVE_JOB
from eagle_console.node.procs import scan_holders
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import WAYS, leave

SAME_SESSION_WAYS = {"session", "nohup", "ctrl-c", "subreaper"}  # the others leave a session of their own
LIVE_JOB_GPU, LIVE_JOB_MIB = 1, 500.0


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def live_job_reason(parent: int) -> str:
    """This test process's live job: under `docker exec` without a tty (CI) its session's leader is outside
    the PID namespace, and the refusal can only say "maybe"."""
    return (MAYBE_LIVE_JOB if os.getsid(0) == 0 else LIVE_JOB).format(ppid=parent)


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.delenv("EAGLE_CONSOLE_GPU_BACKEND", raising=False)
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")
    d = tmp_path / "sim"
    gpustate.create_node(d)
    return d


# The operator's login shell: a session of its own (as sshd or a tmux pane makes it). It leaves orphans
# the way asked, starts a live job that holds a GPU (`python … &`), then runs the CLI from that shell.
LOGIN_SHELL = """
set -e
{py} -m eagle_console.sim.orphans leave --sim {sim} --way {way} --count 2 --mib 1000 --gpus 2,4 > {tmp}/left.json
{py} -m eagle_console.sim.orphans worker --sim {sim} --gpu {gpu} --mib {mib} > {tmp}/live.out 2>&1 &
echo "$! $$" > {tmp}/live.pid
for i in $(seq 400); do grep -q holding {tmp}/live.out && break; sleep 0.05; done
{py} -m eagle_console orphans --json --kill --yes --grace 1s --sim {sim} > {tmp}/doc.json || true
"""


@pytest.mark.parametrize("way", WAYS)
def test_orphans_kill_from_the_operators_shell_kills_every_orphan_and_spares_its_live_job(tmp_path, sim,
                                                                                          way, request):
    script = LOGIN_SHELL.format(py=sys.executable, sim=sim, way=way, tmp=tmp_path, gpu=LIVE_JOB_GPU,
                                mib=LIVE_JOB_MIB)
    with open(tmp_path / "shell.err", "w") as err:  # a pipe would stay open in the live job
        shell = subprocess.run(["bash", "-c", script], stdout=subprocess.DEVNULL, stderr=err, timeout=120,
                               start_new_session=True, stdin=subprocess.DEVNULL)
    left = json.loads((tmp_path / "left.json").read_text())
    live, shell_pid = map(int, (tmp_path / "live.pid").read_text().split())
    request.addfinalizer(lambda: stop_pids([*left["pids"], *left["keepers"], live]))
    assert shell.returncode == 0, (tmp_path / "shell.err").read_text()
    doc = json.loads((tmp_path / "doc.json").read_text())

    assert sorted(doc["killed"]) == sorted(left["pids"]), doc
    assert doc["survivors"] == [] and doc["freed_mib"] == {"2": 1000.0, "4": 1000.0}
    holders = {h["pid"]: h for h in doc["holders"]}
    for pid in left["pids"]:
        assert holders[pid]["class"] == "orphan"
        assert holders[pid]["same_session"] is (way in SAME_SESSION_WAYS), holders[pid]
        assert not alive(pid)
    # the live job: its parent (the shell) was alive when the CLI ran, so it is not an orphan, and it shares
    # the CLI's terminal, so it is never signalled
    assert holders[live]["class"] == "other" and holders[live]["same_session"] is True
    # the shell leads a session of its own, inside this PID namespace: never the "maybe" case
    assert holders[live]["reason"] == "not signalled: " + LIVE_JOB.format(ppid=shell_pid)
    assert alive(live)
    assert {h.pid for h in gpustate.holders(sim)} == {live}


def test_the_text_listing_says_which_orphans_came_from_this_terminal(tmp_path, sim, request):
    left = leave(sim, "session", count=1, mib=700.0, gpus=[6])
    request.addfinalizer(lambda: stop_pids(left.pids))
    out = clikit.run(["orphans", "--sim", sim], timeout=60)
    assert out.returncode == 0, out.stderr
    (row, note) = out.stdout.splitlines()[:2]
    assert row.split()[0] == str(left.pids[0]) and " orphan " in row
    assert note.strip() == "started from this terminal (its launcher is gone)"


def test_a_pipeline_whose_first_stage_exited_is_a_live_job_not_an_orphan(tmp_path, sim, request):
    """`cat prompts | python serve.py` in a job-control shell: the job's group is cat's, and cat exits
    first; the shell (the session leader) is still the holder's parent. Not adopted by anyone."""
    script = (f"set -m; true | {sys.executable} -m eagle_console.sim.orphans worker --sim {sim} --gpu 0 "
              f"--mib 300 > {tmp_path}/out")
    shell = subprocess.Popen(["bash", "-c", script], start_new_session=True, stdin=subprocess.DEVNULL)
    request.addfinalizer(lambda: (stop_pids([shell.pid, *[h.pid for h in gpustate.holders(sim)]]),
                                  shell.wait()))
    pid = until_holder(sim)
    backend = open_backend(sim)
    (h,) = [h for h in scan_holders(backend.sample(), device_prefix=backend.device_prefix) if h.pid == pid]
    assert h.ppid == shell.pid and h.pgid != h.pid and not psutil.pid_exists(h.pgid)
    assert (h.cls, h.reason) == ("other", None)


def until_holder(sim: Path, timeout: float = 20.0) -> int:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = gpustate.holders(sim)
        if held:
            return held[0].pid
        time.sleep(0.05)
    raise AssertionError("no holder registered")


def test_k_preselects_orphans_of_the_consoles_own_terminal_and_refuses_its_live_job(tmp_path, sim, request):
    """The console is this test process: orphans left from its own session (a shell job SIGKILLed, one
    Ctrl+C'd, one under a subreaper) are preselected and marked; the live job beside them is refused."""
    pytest.importorskip("textual")
    from textual.app import App

    from eagle_console.tui.panes.gpus import FROM_THIS_TERMINAL
    from eagle_console.tui.screens.kill import KillScreen

    made = [leave(sim, way, count=1, mib=800.0, gpus=[g]) for way, g in
            (("session", 2), ("ctrl-c", 3), ("subreaper", 4))]
    orphans = [p for m in made for p in m.pids]
    live = subprocess.Popen([sys.executable, "-m", "eagle_console.sim.orphans", "worker", "--sim", str(sim),
                             "--gpu", "1", "--mib", "500"], stdout=subprocess.PIPE, text=True)
    request.addfinalizer(lambda: (stop_pids([*orphans, *[k for m in made for k in m.keepers], live.pid]),
                                  live.wait()))
    assert live.stdout.readline().strip() == "holding"
    ctx = make_ctx(tmp_path, sim)

    class KillApp(App):
        pass

    app = KillApp()
    report: list = []

    async def main() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            screen = KillScreen(ctx)
            app.push_screen(screen, report.append)
            await until(pilot, lambda: screen.state == "choosing", what="scan")
            assert screen.selected == {str(p) for p in orphans}
            assert screen.refused == {live.pid: live_job_reason(os.getpid())}
            table = screen.query_one("DataTable")
            for pid in orphans:
                assert FROM_THIS_TERMINAL in str(table.get_row(str(pid))[-1]), table.get_row(str(pid))
            await pilot.press("enter")
            await until(pilot, lambda: screen.state == "done", timeout=30, what="kill done")
            assert sorted(screen.report.killed) == sorted(orphans) and screen.report.survivors == []

    asyncio.run(main())
    assert not any(alive(p) for p in orphans)
    assert live.poll() is None


KILL_STEP_PLAN = """
[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "Kill GPU processes"
  uses = "gpu.kill"
  with = {{ scope = "{scope}", grace = "1s" }}
  confirm = false
"""
STEP_SHELL = """
{py} -m eagle_console.sim.orphans leave --sim {sim} --way session --count 2 --mib 1000 --gpus 2,4 > {tmp}/left.json
{py} -m eagle_console.sim.orphans worker --sim {sim} --gpu {gpu} --mib {mib} > {tmp}/live.out 2>&1 &
echo "$! $$" > {tmp}/live.pid
for i in $(seq 400); do grep -q holding {tmp}/live.out && break; sleep 0.05; done
{py} -m eagle_console run {plan} 0.1 --yes --wait > {tmp}/run.out 2>&1; echo $? > {tmp}/run.rc
"""


@pytest.mark.parametrize("scope", ["orphans", "all"])
def test_a_gpu_kill_step_run_from_the_operators_shell_kills_its_orphans_and_spares_its_live_job(
        tmp_path, sim, scope, request, monkeypatch):
    """Step 0.1 started with `run --wait` from the shell that left the orphans: its action runs under a
    supervisor in a session of its own, but the CLI's session is protected; only its live job, not its
    orphans (before, the orphans were refused and the step completed having killed nothing)."""
    from enginekit import write_plan

    from eagle_console.journal import Journal
    from eagle_console.ops.orphans import KillRecord
    from eagle_console.plan.loader import load_plan

    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(sim))
    plan = write_plan(tmp_path, KILL_STEP_PLAN.format(scope=scope))
    script = STEP_SHELL.format(py=sys.executable, sim=sim, tmp=tmp_path, gpu=LIVE_JOB_GPU, mib=LIVE_JOB_MIB,
                               plan=plan)
    with open(tmp_path / "shell.err", "w") as err:
        subprocess.run(["bash", "-c", script], stdout=subprocess.DEVNULL, stderr=err, timeout=120,
                       start_new_session=True, stdin=subprocess.DEVNULL)
    left = json.loads((tmp_path / "left.json").read_text())
    live, shell_pid = map(int, (tmp_path / "live.pid").read_text().split())
    request.addfinalizer(lambda: stop_pids([*left["pids"], live]))
    assert (tmp_path / "run.rc").read_text().strip() == "0", (tmp_path / "run.out").read_text()
    journal = Journal.for_plan(load_plan(plan))
    try:
        (event,) = [e for e in journal.events() if e.kind == "kill"]
    finally:
        journal.close()
    record = KillRecord.from_event(event)
    assert sorted(record.killed) == sorted(left["pids"]) and record.freed_mib == {"2": 1000.0, "4": 1000.0}
    refused = {r["pid"]: r["reason"] for r in record.refused}
    if scope == "all":  # the live job is in scope and refused; with `orphans` it is not even chosen
        assert refused[live] == LIVE_JOB.format(ppid=shell_pid)
    assert alive(live) and not any(alive(p) for p in left["pids"])
