"""Idle CPU and memory of the whole console against `nvitop --interval 1`, each in a real pty at 120x40,
side by side in the same run (issue 31).

Both are started at once, each in a pseudo-terminal of its own (TERM=xterm-256color, 120x40, a reader
draining what it draws, as a terminal would), left to settle for --warmup s, then measured for --seconds:
CPU time per wall second of the process and its children (percent of one core), RSS at the end, and the
bytes each wrote to its terminal per second (its redraws). The console is `python -m eagle_console PLAN`
on a six-step plan, the GPUs pane at its default 1 s refresh: on a GPU node with the NVML backend; on a
machine without a driver on a simulated node of 8 GPUs (`--sim`, or EAGLE_CONSOLE_GPU_BACKEND=sim).

nvitop needs NVML: without a driver it exits at once, and the benchmark says so and compares the console
with what runs here in the same harness — a bare Textual app (the floor any Textual app pays) and
`top -d 1` (a terminal monitor redrawing once a second). `--before DIR` adds the console of an older
checkout (`git worktree add DIR COMMIT`) in a third pty, so before and after are measured in one run.

    .venv/bin/python benchmarks/peer_idle.py [--seconds 20] [--warmup 5] [--before DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLS, ROWS = 120, 40
STEPS = "".join(f'[[phase.step]]\nid = "0.{i}"\ntitle = "step {i}"\nrun = "true"\n\n' for i in range(1, 7))
BARE = """
from textual.app import App
from textual.widgets import Footer, Static
class Bare(App):
    def compose(self):
        yield Static("bare")
        yield Footer()
Bare().run()
"""


class PtyProgram:
    """`argv` in a new session on a fresh pty of COLS x ROWS; a thread reads (and counts) what it draws."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.name = name
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, start_new_session=True,
                                     env={**env, "TERM": "xterm-256color", "COLUMNS": str(COLS), "LINES": str(ROWS)})
        os.close(slave)
        self.master = master
        self.bytes = 0
        self.head = b""  # the first of what it drew: why it exited, when it did at once
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            if len(self.head) < 4000:
                self.head = (self.head + chunk)[:4000]
            self.bytes += len(chunk)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def cpu_seconds(self) -> float:
        import psutil

        try:
            me = psutil.Process(self.proc.pid)
            procs = [me, *me.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0.0
        total = 0.0
        for p in procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def rss_mib(self) -> float:
        import psutil

        try:
            return psutil.Process(self.proc.pid).memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            return 0.0

    def said(self) -> str:
        """The start of what it drew, as one line of text (the reason an exited program gave)."""
        import re

        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\r", "", self.head.decode("utf-8", "replace"))
        return " ".join(text.split())

    def stop(self) -> None:
        if self.alive():
            try:
                os.killpg(self.proc.pid, 15)
                self.proc.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        os.close(self.master)


def console_argv(plan: Path) -> list[str]:
    return [sys.executable, "-m", "eagle_console", str(plan)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--before", type=Path, default=None, help="an older checkout whose console runs beside")
    ap.add_argument("--sim", type=Path, default=None, help="a simulated node for the console (default: NVML if "
                    "nvidia-smi is here, else a fresh simulated node of 8 GPUs)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="eagle-peer-idle-"))
    plan = tmp / "plan.toml"
    plan.write_text(f'[plan]\nid = "idle"\ntitle = "idle"\n\n[[phase]]\nid = "0"\ntitle = "p"\n\n{STEPS}')
    env = {**os.environ, "EAGLE_CONSOLE_STATE": str(tmp / "state")}
    env.pop("EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT", None)
    backend = os.environ.get("EAGLE_CONSOLE_GPU_BACKEND") or ("nvml" if shutil.which("nvidia-smi") else "sim")
    env["EAGLE_CONSOLE_GPU_BACKEND"] = backend
    if backend == "sim":
        sim = args.sim
        if sim is None:
            from eagle_console.sim import gpustate

            sim = tmp / "sim"
            gpustate.create_node(sim, gpus=8)
        env["EAGLE_CONSOLE_SIM"] = str(Path(sim).resolve())

    nvitop = shutil.which("nvitop") or str(Path(sys.executable).with_name("nvitop"))
    programs = [PtyProgram("console", console_argv(plan), env)]
    if args.before:
        path = os.pathsep.join(filter(None, [str(args.before.resolve()), env.get("PYTHONPATH")]))
        before_env = {**env, "PYTHONPATH": path, "EAGLE_CONSOLE_STATE": str(tmp / "state-before")}
        programs.append(PtyProgram("console (before)", console_argv(plan), before_env, cwd=args.before.resolve()))
    if Path(nvitop).exists():
        programs.append(PtyProgram("nvitop --interval 1", [nvitop, "--interval", "1"], env))
    programs.append(PtyProgram("bare Textual app", [sys.executable, "-c", BARE], env))
    if shutil.which("top"):
        programs.append(PtyProgram("top -d 1", ["top", "-d", "1"], env))

    try:
        time.sleep(args.warmup)
        start = {p.name: (p.cpu_seconds(), p.bytes) for p in programs if p.alive()}
        t0 = time.monotonic()
        time.sleep(args.seconds)
        wall = time.monotonic() - t0
        rows = []
        for p in programs:
            if p.name not in start or not p.alive():
                rows.append({"name": p.name, "ran": False, "said": p.said()[:200]})
                continue
            cpu0, bytes0 = start[p.name]
            rows.append({"name": p.name, "ran": True, "cpu_pct": round((p.cpu_seconds() - cpu0) / wall * 100, 2),
                         "rss_mib": round(p.rss_mib(), 1), "tty_bytes_per_s": round((p.bytes - bytes0) / wall)})
    finally:
        for p in programs:
            p.stop()

    print(f"idle {args.seconds:g} s after {args.warmup:g} s, {COLS}x{ROWS} ptys, side by side; console GPU backend: "
          f"{backend}")
    for r in rows:
        if r["ran"]:
            print(f"  {r['name']:22} {r['cpu_pct']:6.2f} % of one core   RSS {r['rss_mib']:6.1f} MiB   "
                  f"{r['tty_bytes_per_s']:7d} B/s drawn")
        else:
            print(f"  {r['name']:22} did not run: {r['said'] or 'exited at once'}")
    by = {r["name"]: r for r in rows if r["ran"]}
    con = by.get("console")
    peer = by.get("nvitop --interval 1")
    if con and peer:
        print(f"console / nvitop: CPU {con['cpu_pct'] / max(peer['cpu_pct'], 0.01):.2f}x, "
              f"RSS {con['rss_mib'] / max(peer['rss_mib'], 0.01):.2f}x "
              f"(target: CPU <= nvitop and < 1 %: {'met' if con['cpu_pct'] <= min(1.0, peer['cpu_pct']) else 'NOT met'})")
    elif con:
        print("nvitop did not run here (it needs NVML): the console against the programs above only; the peer "
              "figure comes from a GPU node (benchmarks/h200_perf.sh)")
    if con and "console (before)" in by:
        b = by["console (before)"]
        print(f"console before -> now: CPU {b['cpu_pct']:.2f} -> {con['cpu_pct']:.2f} %, RSS {b['rss_mib']:.1f} -> "
              f"{con['rss_mib']:.1f} MiB")
    if args.json:
        args.json.write_text(json.dumps({"backend": backend, "seconds": args.seconds, "rows": rows}, indent=1))
    return 0 if con else 1


if __name__ == "__main__":
    sys.exit(main())
