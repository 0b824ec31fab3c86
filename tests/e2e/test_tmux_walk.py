"""The whole demo walk in a real terminal: the console runs in tmux, keys go in with send-keys, the screen
is read back with capture-pane after each. Two sizes: 120x40 and 80x24.

Walk: 0.1 (gpu.kill, confirmed) kills the demo's two orphans, 0.2 fixes the drafter config and its check
passes, 0.2b compares vocab mappings, 0.3 launches the simulated SGLang server (ready), 0.4 benchmarks it,
1.1 starts the extraction; then the Results tab, a mark, and a rollback of the last step.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from tmuxkit import Term, step_done

from eagle_console.demo.build import build_demo, stop_leftovers

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo(tmp_path):
    root = tmp_path / "demo"
    plan = build_demo(root)
    yield root, plan
    from enginekit import engine_for

    from eagle_console.processes import stop_session

    for run in engine_for(plan).journal.runs():
        if run.sid:
            stop_session(run.sid, run.pgid, 1.0)
    stop_leftovers(root)


def console(root: Path, plan: Path, width: int, height: int) -> Term:
    cmd = (f"cd {root} && env PYTHONPATH={REPO} EAGLE_CONSOLE_KILL_GRACE=2 TERM=xterm-256color "
           f"{sys.executable} -m eagle_console tui {plan} --sim {root / 'sim'}")
    # the 2-core CI machine runs this after the rest of the suite: be patient, not flaky
    return Term(cmd, (width, height), patience=2.0)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_demo_walk(demo, size):
    root, plan = demo
    term = console(root, plan, *size)
    try:
        first = term.wait(r"Quick Probe", 30)
        lines = first.splitlines()
        assert len(lines) == size[1] and max(len(x) for x in lines) <= size[0]
        term.wait(r"orphan", 20)  # the GPUs pane lists the demo's orphaned workers
        term.keys("n")  # 0.1: gpu.kill asks first
        term.wait(r"Run 0\.1 .*\?[\s\S]*Enter confirm", 10)  # the dialog, not the tree's "Kill …"
        term.keys("y")
        term.wait(step_done("0.1"), 40)
        term.keys("n")  # 0.2: json.set + drafter.check
        term.wait(step_done("0.2"), 40)
        term.keys("n")  # 0.2b: compare vocab
        term.wait(step_done("0.2b"), 40)
        term.keys("n")  # 0.3: the simulated server, completed once ready
        term.wait(step_done("0.3"), 90)
        term.keys("2")  # NCCL tab
        term.wait(r"(?i)init complete|P2P|SHM", 20)
        term.keys("n")  # 0.4: benchmark
        term.wait(step_done("0.4"), 90)
        term.keys("5")  # Results tab
        term.wait(r"tok_s", 20)
        term.keys("n")  # 1.1: extraction
        term.keys("4")
        term.wait(r"(?i)samples|projected|fit", 40)
        term.keys("K")  # the kill modal opens; nothing of ours to kill is preselected now
        term.wait(r"Kill GPU processes", 10)
        term.keys("Escape")
        term.wait_gone(r"Kill GPU processes")
        term.keys("m")  # mark 1.1 (the selected step) by hand
        term.wait(r"(?i)mark 1\.1", 10)
        term.keys("Escape")
        term.wait_gone(r"Mark 1\.1 —")
        term.keys("u")  # roll back the running extraction: the confirmation lists what will be undone
        term.wait(r"Roll back 1\.1[\s\S]*Enter roll back", 10)  # not the detail line's "rollback:"
        term.keys("Enter")
        term.wait(r"↺\s*!?\s*1\.1\s", 40)
    finally:
        term.close()
