"""A node agent whose raylet died answers no reading and kills nothing (cluster/agent.py, raylet_gone).

A killed raylet's Ray workers live on for seconds and answer direct actor calls, so the GPUs pane read the
node as live until Ray's own check ended the agent (a zombie raylet passes it until `ray start` reaps it);
under a suite's load the pane still showed it live 10 s after the kill. Here the agent runs in this process
(no Ray), its raylet a real process named `raylet`: running, a zombie, then reaped."""

from __future__ import annotations

import os
import signal
import subprocess
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
