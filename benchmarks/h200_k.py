"""On a real GPU node: `K` in the real console kills exactly the orphaned CUDA workers and frees their memory.

A launcher starts N torch workers (each holding G GiB) and is SIGKILLed: its workers are orphans. A live job
(its parent, this script, alive) holds memory too. The console is opened on a one-step plan, `K` pressed,
the preselection recorded, Enter pressed; then NVML says what was freed and ps what survived. Run it plain
(NVML pids are ours) and inside `unshare --pid --fork --mount-proc` (NVML pids are the host's, as in LXC).
LABEL `session`: the launcher and the live job are jobs of the console's own terminal session (a launcher
started with `… &` from the operator's shell, then SIGKILLed), as issue 26 found them: the orphans are in
the console's session and must still be killed, the live job (its parent alive) spared.
Prints one JSON object. Usage (repo root, Textual importable): python3 benchmarks/h200_k.py LABEL [N] [G]
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pynvml

LAUNCHER = """
import subprocess, sys, time
n, gib = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    subprocess.Popen([sys.executable, "/tmp/holder.py", gib], stdout=open(f"/tmp/k_worker{i}.out", "w"))
time.sleep(900)
"""


def used_mib() -> list[float]:
    pynvml.nvmlInit()
    try:
        return [pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used / 2**20
                for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.25)


async def press_k(app, out: dict) -> None:
    from eagle_console.tui.screens.kill import KillScreen

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.0)
        await pilot.press("K")
        end = time.monotonic() + 60
        while not (isinstance(app.screen, KillScreen) and app.screen.state == "choosing"):
            if time.monotonic() > end:
                raise SystemExit("K screen never reached 'choosing'")
            await pilot.pause(0.2)
        screen = app.screen
        out["listed"] = [{"pid": h.pid, "cls": h.cls, "gpus": h.gpus, "used_mib": h.used_mib, "reason": h.reason,
                          "command": h.command[:60]} for h in screen.holders]
        out["preselected"] = sorted(screen.selected)
        out["screen_choosing"] = screen_text(screen)
        await pilot.press("enter")
        end = time.monotonic() + 120
        while screen.state != "done":
            if time.monotonic() > end:
                raise SystemExit("kill never finished")
            await pilot.pause(0.2)
        out["record"] = screen.report._asdict()
        out["screen_done"] = screen_text(screen)


def screen_text(screen) -> list[str]:
    """The K screen as the operator reads it: summary, one line per row, then the plan or the progress."""
    from textual.widgets import DataTable

    table = screen.query_one(DataTable)
    lines = [str(screen.query_one("#kill-summary").render())]
    lines += ["  ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
    for part in ("#kill-plan", "#kill-progress"):
        lines += [str(w.render()) for w in screen.query(part)]
    return lines


def main() -> int:
    label = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    gib = sys.argv[3] if len(sys.argv) > 3 else "3"
    os.environ.setdefault("EAGLE_CONSOLE_KILL_GRACE", "5")
    out: dict = {"label": label, "pid": os.getpid(), "pid_ns": os.readlink("/proc/self/ns/pid")}
    base = used_mib()
    # `session`: both are jobs of this terminal (the console's session), the launcher in a process group of
    # its own as a job-control shell makes it; otherwise both in sessions of their own (another terminal).
    own = label != "session"
    live = subprocess.Popen([sys.executable, "/tmp/holder.py", "2"], stdout=subprocess.PIPE, text=True,
                            start_new_session=own)
    Path("/tmp/k_launcher.py").write_text(LAUNCHER)
    for i in range(n):
        Path(f"/tmp/k_worker{i}.out").unlink(missing_ok=True)
    launcher = subprocess.Popen([sys.executable, "/tmp/k_launcher.py", str(n), gib], start_new_session=own,
                                preexec_fn=None if own else os.setpgrp)
    assert "allocated" in live.stdout.readline()
    wait_for(lambda: all(Path(f"/tmp/k_worker{i}.out").exists() and "allocated" in
                         Path(f"/tmp/k_worker{i}.out").read_text() for i in range(n)), 180, "workers")
    workers = sorted(c.pid for c in psutil.Process(launcher.pid).children())
    held = used_mib()
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    time.sleep(0.5)
    out.update(workers=workers, live_job=live.pid, console_sid=os.getsid(0),
               workers_sid=[os.getsid(p) for p in workers], workers_ppid=[psutil.Process(p).ppid() for p in workers],
               used_base=base, used_held=held)
    cli = subprocess.run([sys.executable, "-m", "eagle_console", "gpus", "--json"], capture_output=True, text=True)
    out["gpus_json_pid_namespace"] = json.loads(cli.stdout).get("pid_namespace") if cli.returncode == 0 else cli.stderr[-300:]
    folder = Path(tempfile.mkdtemp(prefix="k-plan-"))
    (folder / "plan.toml").write_text('[plan]\nid = "k"\ntitle = "K on a real node"\n\n[[phase]]\nid = "0"\n'
                                      'title = "P"\n  [[phase.step]]\n  id = "0.1"\n  title = "look"\n'
                                      '  run = "true"\n')
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(folder / "plan.toml")
    t0 = time.monotonic()
    asyncio.run(press_k(make_app(plan, Journal.for_plan(plan)), out))
    out["k_seconds"] = round(time.monotonic() - t0, 1)
    time.sleep(1.0)
    out["used_after"] = used_mib()
    # a killed orphan whose PID 1 does not reap (a container's init may not) stays a zombie: dead, no memory
    out["workers_alive_after"] = [p for p in workers if _running(p)]
    out["workers_zombie_after"] = [p for p in workers if psutil.pid_exists(p) and not _running(p)]
    out["live_job_alive_after"] = live.poll() is None
    out["freed_mib_total"] = round(sum(out["record"]["freed_mib"].values()), 1)
    out["exactly_the_workers"] = (sorted(out["record"]["killed"]) == workers
                                  and sorted(map(int, out["preselected"])) == workers)
    live.kill()
    live.wait()
    print(json.dumps(out, indent=1, default=str))
    return 0 if out["exactly_the_workers"] and out["live_job_alive_after"] else 1


if __name__ == "__main__":
    sys.exit(main())
