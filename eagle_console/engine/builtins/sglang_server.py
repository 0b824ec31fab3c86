"""`sglang.server`: launch SGLang (or the simulated server) as a service; undo waits for its GPU memory.

The engine execs `service_argv` in the action process, so the server leads its own session; rollback
stops that session's process group, then `undo` waits until no process of the session still holds GPU
memory (SIGKILL frees memory only when the process is fully gone, and orphaned schedulers keep the
session id even after their launcher dies).
"""

from __future__ import annotations

import os
import time
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError
from eagle_console.plan.model import Ready

DEFAULT_READY_TIMEOUT_S = 40 * 60.0  # K2.5 weight loading + CUDA graph capture on a cold node
DEFAULT_RELEASE_TIMEOUT_S = 120.0


def _in_session(pid: int, sid: int | None, pgid: int | None) -> bool:
    try:
        return (sid is not None and os.getsid(pid) == sid) or (pgid is not None and os.getpgid(pid) == pgid)
    except OSError:
        return False


def gpu_holders(sim_dir: Any) -> dict[int, float] | None:
    """pid → MiB held on any GPU: the sim node's holders, else NVML's compute processes; None if unknown."""
    if sim_dir is not None:
        from eagle_console.sim.gpustate import holders

        return {h.pid: sum(h.mib.values()) for h in holders(sim_dir)}
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        out: dict[int, float] = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                used = (p.usedGpuMemory or 0) / 2**20
                out[p.pid] = out.get(p.pid, 0.0) + used
        return out
    except pynvml.NVMLError:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def python_problems(args: dict[str, Any]) -> list[str]:
    """The `python` key names the interpreter that runs SGLang (its own venv, never the console's):
    it must be an executable file, or a command found on PATH."""
    import shutil

    from eagle_console.sglang.args import LaunchArgsError, python_command

    try:
        exe = python_command(args)[0]
    except LaunchArgsError:
        return []  # launch_findings has said what is wrong with it
    if os.sep in exe:
        if not os.path.isfile(exe):
            return [f"`python`: {exe} does not exist"]
        if not os.access(exe, os.X_OK):
            return [f"`python`: {exe} is not executable"]
        return []
    if shutil.which(exe) is None:
        return [f"`python`: {exe} is not on PATH (give the full path of SGLang's interpreter)"]
    return []


class SglangServer(Builtin):
    name = "sglang.server"
    service = True

    def validate(self, args: dict[str, Any]) -> list[str]:
        from eagle_console.sglang.args import launch_findings

        problems = [f"{f.code}: {f.message}" for f in launch_findings(args) if f.severity == "error"]
        return problems + python_problems(args)

    def service_argv(self, ctx: ActionContext) -> list[str]:
        from eagle_console.sglang.args import LaunchArgsError, build_launch_argv, launch_findings

        for f in launch_findings(ctx.args):
            if f.severity != "error":
                ctx.say(f"{self.name}: {f.severity} {f.code}: {f.message}")
        try:
            return build_launch_argv(ctx.args)
        except LaunchArgsError as exc:
            raise BuiltinError(str(exc)) from None

    def default_ready(self, ctx: ActionContext) -> Ready | None:
        host = str(ctx.args.get("host", "127.0.0.1"))
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        port = ctx.args.get("port", 30000)
        timeout = ctx.timeout_s or DEFAULT_READY_TIMEOUT_S
        return Ready(http=f"http://{host}:{port}/health", timeout_s=timeout)

    def undo(self, ctx: ActionContext) -> int:
        run = ctx.service_run or {}
        sid, pgid = run.get("sid"), run.get("pgid")
        if sid is None and pgid is None:
            ctx.say(f"{self.name}: no record of the server's session; nothing to wait for")
            return 0
        timeout = DEFAULT_RELEASE_TIMEOUT_S
        deadline = time.monotonic() + timeout
        started = time.monotonic()
        said = False
        while True:
            held = gpu_holders(ctx.sim_dir)
            if held is None:
                ctx.say(f"{self.name}: no GPU backend here (no NVML, no sim); not waiting for memory release")
                return 0
            mine = {pid: mib for pid, mib in held.items() if _in_session(pid, sid, pgid)}
            if not mine:
                ctx.say(f"{self.name}: GPU memory of session {sid if sid is not None else pgid} released "
                        f"after {time.monotonic() - started:.1f}s")
                ctx.result("release_s", round(time.monotonic() - started, 2))
                return 0
            if not said:
                ctx.say(f"{self.name}: waiting for {len(mine)} process(es) to release "
                        f"{sum(mine.values()):.0f} MiB: pids {', '.join(map(str, sorted(mine)))}")
                said = True
            if time.monotonic() > deadline:
                raise BuiltinError(f"processes {', '.join(map(str, sorted(mine)))} of the server's session still "
                                   f"hold {sum(mine.values()):.0f} MiB after {timeout:g}s (kill them: gpu.kill)")
            time.sleep(0.25)
