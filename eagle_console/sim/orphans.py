"""Orphaned simulated GPU workers, made the way SGLang leaves them.

A launcher (in its own session) starts N workers that each hold memory on one simulated GPU, waits until
they are registered, then SIGKILLs itself: the workers are reparented to PID 1 (or the nearest
subreaper) and keep their memory, like `sglang::scheduler` processes whose launcher died.

    python -m eagle_console.sim.orphans launch --sim DIR --count N --mib M [--gpus 3,5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_MIB = 6120.0
DEFAULT_GPUS = (3, 5)


def _worker_argv(sim_dir: Path, gpu: int, mib: float) -> list[str]:
    return [sys.executable, "-m", "eagle_console.sim.orphans", "worker", "--sim", str(sim_dir),
            "--gpu", str(gpu), "--mib", str(mib)]


def leave_orphans(sim_dir: Path, count: int = 2, mib: float = DEFAULT_MIB,
                  gpus: list[int] | None = None, timeout: float = 20.0) -> list[int]:
    """Leave `count` orphaned workers holding `mib` MiB each; returns their pids once they are orphans."""
    sim_dir = Path(sim_dir).resolve()
    gpus = list(gpus) if gpus else [DEFAULT_GPUS[i % len(DEFAULT_GPUS)] for i in range(count)]
    argv = [sys.executable, "-m", "eagle_console.sim.orphans", "launch", "--sim", str(sim_dir),
            "--count", str(count), "--mib", str(mib), "--gpus", ",".join(map(str, gpus)),
            "--timeout", str(timeout)]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, stdin=subprocess.DEVNULL)
    out, err = launcher.communicate(timeout=timeout + 10)
    line = out.strip().splitlines()[-1] if out.strip() else ""
    if launcher.returncode != -signal.SIGKILL or not line.startswith("["):
        raise RuntimeError(f"orphan launcher failed (exit {launcher.returncode}): {err.strip()[-300:]}")
    pids = [int(p) for p in json.loads(line)]
    _wait_reparented(pids, launcher.pid, timeout)
    return pids


def _wait_reparented(pids: list[int], launcher_pid: int, timeout: float) -> None:
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if all(psutil.Process(p).ppid() != launcher_pid for p in pids):
                return
        except psutil.NoSuchProcess:
            raise RuntimeError("an orphan worker died before being reparented") from None
        time.sleep(0.02)


def _launch(sim_dir: Path, count: int, mib: float, gpus: list[int], timeout: float) -> int:
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
    print(json.dumps(sorted(want)), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # die without reaping or stopping the workers, as SGLang's launcher
    return 1  # not reached


def _worker(sim_dir: Path, gpu: int, mib: float) -> int:
    from eagle_console.sim import gpustate

    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # survive the launcher's session going away
    gpustate.hold(sim_dir, {gpu: mib})
    while True:
        signal.pause()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.sim.orphans")
    ap.add_argument("role", choices=("launch", "worker"))
    ap.add_argument("--sim", required=True, type=Path)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--mib", type=float, default=DEFAULT_MIB)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--gpus", default=",".join(map(str, DEFAULT_GPUS)))
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.role == "worker":
        return _worker(args.sim, args.gpu, args.mib)
    return _launch(args.sim, args.count, args.mib, [int(g) for g in args.gpus.split(",") if g], args.timeout)


if __name__ == "__main__":
    sys.exit(main())
