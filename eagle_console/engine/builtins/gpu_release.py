"""Wait for a stopped service's GPU memory to come back: the service's undo (e.g. `sglang.server`).

Not by NVML pids: in a container NVML may report the host's pids (none is in our session) or hide
processes outside our PID namespace, so "no pid of the session in NVML's list" proves nothing. Two kinds
of evidence instead, both readable in any namespace: no process of the service's session or process group
has a `/dev/nvidia*` file open, and every GPU's used memory is back to its level before the launch
(recorded by `record_pre_launch` when the service started), so schedulers that left the session are caught.
"""

from __future__ import annotations

import os
import time
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, BuiltinError
from eagle_console.node.gpus import cannot_read

PRE_LAUNCH = "gpu_before_launch.json"
# Above the level before launch by more than this counts as still held: a monitor's or the console's own
# CUDA/NVML context is well under it, one scheduler's KV cache far above.
TOLERANCE_MIB = 1024.0
POLL_S = 0.25


def record_pre_launch(ctx: ActionContext) -> None:
    """Save every GPU's used MiB now, before the service starts (nothing saved without a GPU backend)."""
    from eagle_console.node.gpus import open_backend

    backend = open_backend(ctx.sim_dir)
    try:
        sample = backend.sample()
    finally:
        backend.close()
    if sample.backend != "none":
        ctx.save(PRE_LAUNCH, {str(g.index): g.memory_used_mib for g in sample.gpus
                              if g.memory_used_mib is not None})


def in_session(pid: int, sid: int | None, pgid: int | None) -> bool:
    try:
        return (sid is not None and os.getsid(pid) == sid) or (pgid is not None and os.getpgid(pid) == pgid)
    except OSError:
        return False


def wait_released(ctx: ActionContext, name: str, timeout_s: float) -> int:
    """Return once the service's session holds no GPU file and the GPUs are back to their pre-launch level."""
    from eagle_console.node.gpus import open_backend

    run: dict[str, Any] = ctx.service_run or {}
    sid, pgid = run.get("sid"), run.get("pgid")
    before = {int(k): float(v) for k, v in (ctx.load(PRE_LAUNCH) or {}).items()}
    if sid is None and pgid is None and not before:
        ctx.say(f"{name}: no record of the server's session or of the GPUs before its launch; nothing to wait for")
        return 0
    backend = open_backend(ctx.sim_dir)
    try:
        return _wait(ctx, name, backend, sid, pgid, before, timeout_s)
    finally:
        backend.close()


def _wait(ctx: ActionContext, name: str, backend: Any, sid: int | None, pgid: int | None,
          before: dict[int, float], timeout_s: float) -> int:
    from eagle_console.node.procs import scan_device_files

    started = time.monotonic()
    said = ""
    while True:
        sample = backend.sample()
        mine = sorted(pid for pid in scan_device_files(backend.device_prefix) if in_session(pid, sid, pgid))
        if sample.backend == "none":  # the release cannot be seen: the undo failed, it did not pass unseen
            held = f"; pids {', '.join(map(str, mine))} of its session still hold a GPU file" if mine else ""
            raise BuiltinError(f"{cannot_read(sample.backend, sample.error)}; cannot tell whether "
                               f"the server's GPU memory was released{held} (check with nvidia-smi, then force "
                               f"the rollback)")
        over = {g.index: g.memory_used_mib - before[g.index] for g in sample.gpus
                if g.index in before and g.memory_used_mib is not None
                and g.memory_used_mib > before[g.index] + TOLERANCE_MIB}
        waited = time.monotonic() - started
        if not mine and not over:
            ctx.say(f"{name}: GPU memory released after {waited:.1f}s (no process of session "
                    f"{sid if sid is not None else pgid} holds a GPU file"
                    + (f"; {len(before)} GPUs back to their level before the launch)" if before else ")"))
            ctx.result("release_s", round(waited, 2))
            return 0
        text = _holding(mine, over)
        if text != said:
            ctx.say(f"{name}: waiting for {text}")
            said = text
        if waited > timeout_s:
            raise BuiltinError(f"after {timeout_s:g}s still {text} (kill them: gpu.kill; if another job took "
                               f"that memory since the launch, mark the step rolled back by hand)")
        time.sleep(POLL_S)


def _holding(mine: list[int], over: dict[int, float]) -> str:
    parts = []
    if mine:
        parts.append(f"{len(mine)} process(es) of the server's session to release their GPUs: pids "
                     f"{', '.join(map(str, mine))}")
    if over:
        parts.append("GPU memory above its level before the launch: "
                     + ", ".join(f"GPU {i} +{mib:.0f} MiB" for i, mib in sorted(over.items())))
    return "; ".join(parts)
