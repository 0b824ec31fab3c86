"""In a real terminal: a console opened on a journal holding a step's `::result r=[/]` starts, shows the
value as written and quits with status 0 (it used to die at start, every time, with status 0)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
from tmuxkit import Term

from eagle_console.journal import Journal
from eagle_console.plan.loader import load_plan

from .test_tmux_walk import REPO

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

PLAN = """[plan]
id = "markup"
title = "brackets [/] everywhere"

[[phase]]
id = "0"
title = "Probe [bold"

[[phase.step]]
id = "0.1"
title = "print a result [@click=quit]"
run = "echo '::result r=[/]'"
"""


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_console_on_a_bracketed_result_starts_and_shows_it(tmp_path: Path, size):
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(PLAN)
    journal = Journal.for_plan(load_plan(plan_path))
    journal.record_result("0.1", None, "r", "[/]")
    journal.note("0.1", "note [/] [bold")
    journal.close()
    status = tmp_path / "status"
    cmd = (f"cd {tmp_path} && env PYTHONPATH={REPO} EAGLE_CONSOLE_GPU_BACKEND=none TERM=xterm-256color "
           f"{sys.executable} -m eagle_console tui {plan_path}; echo exit=$? > {status}; sleep 30")
    term = Term(cmd, size, patience=2.0)
    try:
        term.wait(r"Probe \[bold", 30)
        term.keys("5")
        term.wait(r"0\.1\s+r\s+\[/\]", 20)  # the Results row: step, name, value as written
        term.keys("q")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not status.exists():
            time.sleep(0.2)
        assert status.read_text().strip() == "exit=0", term.screen()
    finally:
        term.close()
