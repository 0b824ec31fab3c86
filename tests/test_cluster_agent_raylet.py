"""A node agent whose raylet died answers no reading and kills nothing (cluster/agent.py, raylet_gone).

A killed raylet's Ray workers live on for seconds and answer direct actor calls, so the GPUs pane read the
node as live until Ray's own check ended the agent (a zombie raylet passes it until `ray start` reaps it);
under a suite's load the pane still showed it live 10 s after the kill. Here the agent runs in this process
(no Ray), its raylet a real process named `raylet`: running, a zombie, then reaped; its pid taken by a new
process; SIGKILLed while held in uninterruptible sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from eagle_console.cluster.agent import NodeAgent, RayletGone, raylet_gone
from eagle_console.sim import gpustate


@pytest.fixture
def raylet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> subprocess.Popen:
    (tmp_path / "raylet").symlink_to("/bin/sleep")  # its comm is `raylet`, as Ray's own binary's is
    proc = subprocess.Popen([str(tmp_path / "raylet"), "60"])
    monkeypatch.setenv("RAY_RAYLET_PID", str(proc.pid))
    sim = tmp_path / "node"
    gpustate.create_node(sim, gpus=1)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(sim))
    yield proc
    proc.kill()
    proc.wait()


def test_an_agent_whose_raylet_died_refuses_to_read_kill_or_answer_for_a_run(raylet: subprocess.Popen) -> None:
    agent = NodeAgent("b")
    assert raylet_gone() is None and len(agent.read()["gpus"]) == 1  # its raylet runs: the node reads
    os.kill(raylet.pid, signal.SIGKILL)
    os.waitid(os.P_PID, raylet.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie, as under `ray start`
    assert Path(f"/proc/{raylet.pid}/stat").read_text().split(") ")[1][0] == "Z"
    for call in (agent.read, lambda: agent.kill("orphans", [], grace=1.0), lambda: agent.node_run("raysubmit_x")):
        with pytest.raises(RayletGone, match=rf"node b: its raylet \(pid {raylet.pid}\) has exited"):
            call()
    raylet.wait()  # reaped: the pid is gone
    with pytest.raises(RayletGone, match="has exited"):
        agent.read()


def test_outside_a_ray_worker_the_agent_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_RAYLET_PID", raising=False)
    sim = tmp_path / "node"
    gpustate.create_node(sim, gpus=2)
    monkeypatch.setenv("EAGLE_CONSOLE_SIM", str(sim))
    assert raylet_gone() is None and len(NodeAgent("a").read()["gpus"]) == 2


def test_a_live_raylet_under_another_name_is_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_RAYLET_PID", str(os.getpid()))  # e.g. run under valgrind: alive is what counts
    assert raylet_gone() is None


def _process_at(pid: int, tries: int = 50) -> subprocess.Popen | None:
    """A new process given `pid` (the kernel's next pid set through /proc/sys/kernel/ns_last_pid, root only);
    None when another process's fork took it first every time, or the file cannot be written."""
    for _ in range(tries):
        try:
            Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(["sleep", "60"])
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def test_a_new_process_at_the_dead_raylets_pid_is_not_its_raylet(raylet: subprocess.Popen) -> None:
    """pid_max is 32768 on most machines and a busy node (or the suite) wraps it in minutes: a killed
    raylet's pid, reaped, went to a new process, and the node read live for that process's lifetime."""
    if not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK):
        pytest.skip("making a pid's reuse needs root (/proc/sys/kernel/ns_last_pid)")
    agent = NodeAgent("b")  # as in Ray: the agent starts while the raylet that started it runs
    assert len(agent.read()["gpus"]) == 1
    raylet.kill()
    raylet.wait()
    # a start time is counted in clock ticks (10 ms at 100 Hz): a pid reused within the raylet's own tick would
    # look the same, which takes a wrap of the whole pid space in 10 ms; here the reuse is made at once
    time.sleep(0.05)
    reuse = _process_at(raylet.pid)
    if reuse is None:
        pytest.skip(f"pid {raylet.pid} was taken by another fork 50 times in a row")
    try:
        with pytest.raises(RayletGone, match=rf"pid {raylet.pid}\) has exited \(the pid is another process's now\)"):
            agent.read()
    finally:
        reuse.kill()
        reuse.wait()


FREEZER = Path("/sys/fs/cgroup/freezer")  # cgroup v1's freezer: a frozen task that is SIGKILLed waits in state D


def test_a_killed_raylet_still_in_uninterruptible_sleep_is_gone(raylet: subprocess.Popen) -> None:
    """A SIGKILLed raylet in a disk or page-in wait stays a running process (state D) until the wait ends: in
    suite runs node b still read live 10 s after its raylet's kill. A frozen cgroup makes that wait here."""
    if not (FREEZER / "cgroup.procs").exists() or not os.access(FREEZER, os.W_OK):
        pytest.skip("needs cgroup v1's freezer, writable (root)")
    agent = NodeAgent("b")
    assert len(agent.read()["gpus"]) == 1
    group = FREEZER / f"eagle-test-{os.getpid()}-{raylet.pid}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(raylet.pid))
    except OSError as exc:  # a container's read-only or delegated hierarchy: the freezer is not ours to use
        if group.exists():
            group.rmdir()
        pytest.skip(f"cannot freeze a process here: {exc}")
    try:
        (group / "freezer.state").write_text("FROZEN")
        os.kill(raylet.pid, signal.SIGKILL)
        assert Path(f"/proc/{raylet.pid}/stat").read_text().split(") ")[1][0] == "D"  # still there, not dead
        with pytest.raises(RayletGone, match=rf"pid {raylet.pid}\) was killed \(SIGKILL pending, state D\)"):
            agent.read()
    finally:
        (group / "freezer.state").write_text("THAWED")
        raylet.wait(timeout=10)
        group.rmdir()
