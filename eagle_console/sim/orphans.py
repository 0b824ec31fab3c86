"""Orphaned simulated GPU workers, made every way a real node gets them.

A launcher starts N workers that each hold memory on one simulated GPU, waits until they are registered,
then dies without stopping them, as SGLang's `launch_server` does when it is killed: the workers are
reparented to PID 1 (or the nearest subreaper) and keep their memory, like `sglang::scheduler` processes.

How the launcher was started and how it died changes what the console sees (session, process group,
parent), so each way operators really leave orphans is a `Way`:

    setsid     the launcher leads a session of its own (a step's supervisor, `setsid python …`); SIGKILL
    session    a job of the caller's shell (`python -m sglang.launch_server … &`): the caller's session,
               a process group of its own; SIGKILL
    nohup      the same under `nohup` (SIGHUP ignored, as the operator's ssh logout would send it)
    pane       another terminal (a tmux pane): a shell leads a new session, runs the launcher as a job and
               stays; SIGKILL
    ctrl-c     a job of the caller's shell stopped by Ctrl+C: SIGINT to its whole process group; the
               launcher exits, its workers ignore SIGINT (as workers that install their own handlers do)
    subreaper  a job of the caller's shell under a process that set PR_SET_CHILD_SUBREAPER (systemd --user,
               a container's init shim): the workers are adopted by it, not by PID 1; SIGKILL

    python -m eagle_console.sim.orphans leave --sim DIR --way session --count N --mib M [--gpus 3,5]
    python -m eagle_console.sim.orphans worker --sim DIR --gpu G --mib M      (a live holder)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MIB = 6120.0
DEFAULT_GPUS = (3, 5)
WAYS = ("setsid", "session", "nohup", "pane", "ctrl-c", "subreaper")
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@dataclass
class Orphans:
    """The orphaned workers, and what the way left running beside them (a pane's shell, a subreaper):
    not GPU holders, but the caller stops them when done."""

    pids: list[int]
    keepers: list[int] = field(default_factory=list)


def _module_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "eagle_console.sim.orphans", *args]


def _worker_argv(sim_dir: Path, gpu: int, mib: float) -> list[str]:
    return _module_argv("worker", "--sim", str(sim_dir), "--gpu", str(gpu), "--mib", str(mib))


def leave_orphans(sim_dir: Path, count: int = 2, mib: float = DEFAULT_MIB,
                  gpus: list[int] | None = None, timeout: float = 20.0) -> list[int]:
    """Leave `count` orphaned workers (launcher in a session of its own, SIGKILLed); their pids."""
    return leave(sim_dir, "setsid", count, mib, gpus, timeout).pids


def leave(sim_dir: Path, way: str = "setsid", count: int = 2, mib: float = DEFAULT_MIB,
          gpus: list[int] | None = None, timeout: float = 20.0) -> Orphans:
    """Leave `count` orphaned workers made the `way` given, from the calling process (its session is the
    "operator's shell" of the ways that stay in it); returns once every worker is reparented."""
    if way not in WAYS:
        raise ValueError(f"way must be one of {', '.join(WAYS)}, not {way!r}")
    sim_dir = Path(sim_dir).resolve()
    gpus = list(gpus) if gpus else [DEFAULT_GPUS[i % len(DEFAULT_GPUS)] for i in range(count)]
    launch = _module_argv("launch", "--sim", str(sim_dir), "--count", str(count), "--mib", str(mib),
                          "--gpus", ",".join(map(str, gpus)), "--timeout", str(timeout),
                          "--end", "sigint" if way == "ctrl-c" else "sigkill")
    if way == "nohup":
        launch = ["nohup", *launch]
    if way == "pane":  # an interactive-like shell (job control on) leading its own session, left open
        argv = ["bash", "-c", 'set -m; "$@" & wait $!; exec sleep 86400', "pane", *launch]
    elif way == "subreaper":
        argv = _module_argv("subreaper", "--", *launch)
    else:
        argv = launch
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=way in ("setsid", "pane"),
                            preexec_fn=os.setpgrp if way in ("session", "nohup", "ctrl-c", "subreaper") else None,
                            cwd=sim_dir)  # nohup writes nohup.out where it runs
    assert proc.stdout is not None
    line = _read_pids_line(proc, timeout + 10)
    if not line:
        proc.kill()
        raise RuntimeError(f"orphan launcher ({way}) failed (exit {proc.wait()})")
    launched = json.loads(line)
    pids = [int(p) for p in launched["pids"]]
    keepers = [proc.pid] if way in ("pane", "subreaper") else []
    if not keepers:
        proc.wait(timeout)
        if way != "ctrl-c" and proc.returncode != -signal.SIGKILL:
            raise RuntimeError(f"orphan launcher ({way}) exited {proc.returncode}, not by SIGKILL")
    _wait_reparented(pids, launched["launcher"], timeout)
    return Orphans(pids, keepers)


def _read_pids_line(proc: subprocess.Popen, timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=0.1):
            line = proc.stdout.readline()
            if not line:
                return ""
            if line.startswith('{"launcher"'):
                return line.strip()
    return ""


def _wait_reparented(pids: list[int], launcher: int, timeout: float) -> None:
    """Until no worker's parent is the launcher any more (it died and they were adopted)."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if all(psutil.Process(p).ppid() != launcher for p in pids):
                return
        except psutil.NoSuchProcess:
            raise RuntimeError("an orphan worker died before being reparented") from None
        time.sleep(0.02)
    raise RuntimeError("orphan workers were not reparented in time")


def _launch(sim_dir: Path, count: int, mib: float, gpus: list[int], timeout: float, end: str) -> int:
    from eagle_console.sim import gpustate

    workers = [subprocess.Popen(_worker_argv(sim_dir, gpus[i % len(gpus)], mib), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for i in range(count)]
    want = {w.pid for w in workers}
    deadline = time.monotonic() + timeout
    while {h.pid for h in gpustate.holders(sim_dir)} & want != want:
        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
            print("workers did not register their GPU memory", file=sys.stderr)
            return 1
        time.sleep(0.02)
    print(json.dumps({"launcher": os.getpid(), "pids": sorted(want)}), flush=True)
    if end == "sigint":  # Ctrl+C: the terminal signals the whole foreground process group
        if os.getpgrp() != os.getpid():
            print("--end sigint needs the launcher to lead its process group (a shell job)", file=sys.stderr)
            return 1
        os.killpg(os.getpgrp(), signal.SIGINT)
        time.sleep(5)  # KeyboardInterrupt ends this before the sleep does
        return 1
    os.kill(os.getpid(), signal.SIGKILL)  # die without reaping or stopping the workers, as SGLang's launcher
    return 1  # not reached


def _worker(sim_dir: Path, gpu: int, mib: float) -> int:
    from eagle_console.sim import gpustate

    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # survive the launcher's session going away
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C meant for the launcher
    gpustate.hold(sim_dir, {gpu: mib})
    print("holding", flush=True)
    while True:
        signal.pause()


def _subreaper(argv: list[str]) -> int:
    """Adopt whatever `argv`'s process leaves behind (PR_SET_CHILD_SUBREAPER), pass its output on, reap."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"prctl(PR_SET_CHILD_SUBREAPER): errno {ctypes.get_errno()}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=os.setpgrp)  # a job of its own, as a shell's
    while True:  # reap the launcher and, later, the adopted workers when they are killed
        try:
            os.wait()
        except ChildProcessError:
            signal.pause()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["subreaper"]:  # subreaper [--] COMMAND...: the command is not ours to parse
        return _subreaper(argv[2:] if argv[1:2] == ["--"] else argv[1:])
    ap = argparse.ArgumentParser(prog="eagle_console.sim.orphans")
    ap.add_argument("role", choices=("leave", "launch", "worker"))
    ap.add_argument("--sim", type=Path)
    ap.add_argument("--way", choices=WAYS, default="setsid")
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--mib", type=float, default=DEFAULT_MIB)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--gpus", default=",".join(map(str, DEFAULT_GPUS)))
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--end", choices=("sigkill", "sigint"), default="sigkill")
    args = ap.parse_args(argv)
    if args.sim is None:
        ap.error("--sim is required")
    gpus = [int(g) for g in args.gpus.split(",") if g]
    if args.role == "worker":
        return _worker(args.sim, args.gpu, args.mib)
    if args.role == "leave":
        left = leave(args.sim, args.way, args.count, args.mib, gpus, args.timeout)
        print(json.dumps({"pids": left.pids, "keepers": left.keepers}), flush=True)
        return 0
    return _launch(args.sim, args.count, args.mib, gpus, args.timeout, args.end)


if __name__ == "__main__":
    sys.exit(main())
