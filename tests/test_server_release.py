"""`sglang.server` undo waits on the GPUs, not on NVML pids: session fds and memory back to its pre-launch level."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
from test_sglang_bench import ctx_for
from test_sim_server import start_server, wait_gone, wait_ready

from eagle_console.engine.builtins.gpu_release import record_pre_launch
from eagle_console.engine.builtins.sglang_server import SglangServer
from eagle_console.sim import gpustate


def _kill_once_on_wait(ctx, pids: list[int]) -> list[str]:
    """The operator's gpu.kill, done once undo says it is waiting."""
    said: list[str] = []

    def say(message: str) -> None:
        said.append(message)
        if "waiting for" in message and not any("waiting for" in m for m in said[:-1]):
            for p in pids:
                os.kill(p, signal.SIGTERM)

    ctx.say = say
    return said


def test_container_node_undo_waits_for_orphaned_schedulers(tmp_path):
    """NVML reports host pids (container mode): the wait still sees the session's schedulers by their fds."""
    gpustate.create_node(tmp_path / "sim", container=True)
    ctx = ctx_for(tmp_path, {"model": "/m"}, sim=tmp_path / "sim")
    record_pre_launch(ctx)
    s = start_server(tmp_path, tp=2)
    try:
        wait_ready(s)
        sid = os.getsid(s.proc.pid)
        schedulers = [c.pid for c in psutil.Process(s.proc.pid).children() if "scheduler" in c.cmdline()[0]]
        os.kill(s.proc.pid, signal.SIGKILL)  # the launcher dies; its schedulers stay, holding memory
        s.proc.wait(timeout=10)
        ctx = ctx_for(tmp_path, {"model": "/m"}, sim=s.sim, service_run={"pid": s.proc.pid, "pgid": sid, "sid": sid})
        said = _kill_once_on_wait(ctx, schedulers)
        assert SglangServer().undo(ctx) == 0
        out = "\n".join(said)
        assert "2 process(es) of the server's session" in out and "released after" in out
        assert "back to their level before the launch" in out
        wait_gone(schedulers)
    finally:
        s.cleanup()


def test_memory_held_outside_the_session_is_waited_for(tmp_path):
    """A scheduler that left the server's session still holds 6 GiB: not 'released after 0.0s'."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim, gpus=2)
    ctx = ctx_for(tmp_path, {"model": "/m"}, sim=sim)
    record_pre_launch(ctx)
    gone = subprocess.Popen(["true"])  # the server's session: its leader is dead
    gone.wait()
    escaped = subprocess.Popen([sys.executable, "-c", "import signal\nfrom eagle_console.sim import gpustate\n"
                                f"gpustate.hold({str(sim)!r}, {{0: 6144, 1: 6144}})\nprint('up', flush=True)\n"
                                "signal.pause()"], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert escaped.stdout.readline().strip() == "up"
        ctx = ctx_for(tmp_path, {"model": "/m"}, sim=sim,
                      service_run={"pid": gone.pid, "pgid": gone.pid, "sid": gone.pid})
        said = _kill_once_on_wait(ctx, [escaped.pid])
        assert SglangServer().undo(ctx) == 0
        out = "\n".join(said)
        assert "GPU memory above its level before the launch: GPU 0 +6144 MiB, GPU 1 +6144 MiB" in out, out
        assert escaped.wait(timeout=10) == -signal.SIGTERM
    finally:
        if escaped.poll() is None:
            escaped.kill()
            escaped.wait()
