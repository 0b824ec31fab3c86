"""K in a real terminal, from a shell that itself left orphans (issue 26): the shell in a tmux pane starts a
"server" as a job (`… &`) whose launcher is SIGKILLed, leaving two workers in this very session, starts a
live job holding a GPU, then opens the demo's console. K must preselect the demo's orphans *and* the
shell's (marked "started from this terminal"), refuse the live job, and Enter must kill the four."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

import psutil
import pytest
from tmuxkit import Term

from eagle_console.demo.build import build_demo, stop_leftovers

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_k_in_tmux_kills_the_orphans_the_consoles_own_shell_left_and_spares_its_live_job(tmp_path, size):
    root = tmp_path / "demo"
    plan = build_demo(root)  # leaves the demo's own two orphans (GPUs 3 and 5)
    sim = root / "sim"
    py = sys.executable
    shell = (f"cd {root} && export PYTHONPATH={REPO} EAGLE_CONSOLE_KILL_GRACE=2 TERM=xterm-256color; set -m; "
             f"{py} -m eagle_console.sim.orphans leave --sim {sim} --way session --count 2 --mib 3000 "
             f"--gpus 0,2 > left.json; "
             f"{py} -m eagle_console.sim.orphans worker --sim {sim} --gpu 1 --mib 500 > live.out 2>&1 & "
             f"echo $! > live.pid; "
             f"{py} -m eagle_console tui {plan} --sim {sim}")
    term = Term(f"bash -c {shlex.quote(shell)}", size, patience=2.0)
    try:
        term.wait(r"Quick Probe", 40)
        left = json.loads((root / "left.json").read_text())["pids"]
        live = int((root / "live.pid").read_text())
        deadline = time.monotonic() + 20
        while "holding" not in (root / "live.out").read_text():  # every holder is up (at 80x24 the GPUs pane
            assert time.monotonic() < deadline, "the live job never held its GPU"  # shows orphans first)
            time.sleep(0.1)
        term.keys("K")
        term.wait(r"Enter sends SIGTERM to 4 process\(es\)", 20)
        want = {str(p) for p in [*left, live]}
        deadline = time.monotonic() + 20
        while True:  # the table may be drawn a frame after the line under it
            screen = term.screen()
            rows = {m[2]: line for line in screen.splitlines() if (m := re.search(r"(\[x\]|✗)\s+(\d+)\s", line))}
            if want <= set(rows) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        for pid in left:
            assert "started from this terminal" in rows[str(pid)], screen
        # 80 columns cut the reason at the modal's edge; 120 show it whole
        reason = "✗ a live job of the console's terminal" if size[0] >= 120 else "✗ a live job of the console"
        assert reason in rows[str(live)], screen
        term.keys("Enter")
        done = term.wait(r"after the kill: 4 killed · 18240 MiB freed · 1 GPU holder left", 40)
        assert psutil.pid_exists(live) and psutil.Process(live).status() != psutil.STATUS_ZOMBIE, done
        assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in left)
    finally:
        term.close()
        stop_leftovers(root)
