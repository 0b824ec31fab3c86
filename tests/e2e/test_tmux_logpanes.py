"""The log panes in a real terminal, as issue 26 saw them: `eagle-console demo`, `n` and Enter on 0.1, and
the Output tab (shown by the run) must show the step's log, not a blank pane with a stray scrollbar cell."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from test_tui_logview_app import CJK, cells_between  # the same wide line and screen reading as the App test
from tmuxkit import Term, step_done

from .test_tmux_walk import REPO

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def demo_dir(tmp_path):
    root = tmp_path / "demo"
    yield root
    from eagle_console.demo.build import stop_leftovers

    stop_leftovers(root)


def demo_console(root: Path, size: tuple[int, int]) -> Term:
    cmd = (f"cd {root.parent} && env PYTHONPATH={REPO} EAGLE_CONSOLE_KILL_GRACE=2 TERM=xterm-256color "
           f"{sys.executable} -m eagle_console demo --dir {root}")
    return Term(cmd, size, patience=2.0)


def output_pane(screen: str) -> str:
    """The right-hand column below the tab strip: where the Output pane is drawn."""
    lines = screen.splitlines()
    # the active tab's name is whole; at 80 columns the others are cut ("Ser…│NCC…│Output│Ext…")
    strip = next(i for i, s in enumerate(lines) if "Output" in s and ("NCCL" in s or "NCC…" in s))
    left = lines[strip].index("│", 1) + 1  # right of the Step pane's border
    return "\n".join(s[left:] for s in lines[strip + 1:])


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_output_tab_shows_the_log_of_the_step_just_run(demo_dir, size):
    term = demo_console(demo_dir, size)
    try:
        term.wait(r"Quick Probe", 40)
        term.wait(r"orphan", 20)
        term.keys("n")
        term.wait(r"Run 0\.1 .*\?[\s\S]*Enter confirm", 10)
        term.keys("Enter")
        term.wait(step_done("0.1"), 40)
        term.wait(r"following · 1\d lines", 10)  # the Output pane has the whole log
        # what the log ends with: ::result lines, then the supervisor's last line
        screen = term.wait(r"the action compl", 10)
        pane = output_pane(screen)
        # the pane follows the end: at 80x24 it has a few rows, so the log's last lines (not its first) are there
        assert "::result freed_mib_gpu5=6120.0" in pane, screen
    finally:
        term.close()


WIDE_PLAN = f"""[plan]
id = "wide"
title = "wide characters"

[[phase]]
id = "0"
title = "wide"

[[phase.step]]
id = "0.1"
title = "print wide lines"
run = "echo '{CJK * 3}'; echo 'mixed {CJK}'; echo 'ascii after'"
"""


def test_a_cjk_log_line_wraps_inside_its_pane_at_80x24(tmp_path):
    """Counted in characters, a row of CJK text was twice the pane's width: the terminal wrapped it onto the
    next screen line, over the Step pane's left border and text."""
    from rich.cells import cell_len

    plan = tmp_path / "plan.toml"
    plan.write_text(WIDE_PLAN)
    cmd = (f"cd {tmp_path} && env PYTHONPATH={REPO} EAGLE_CONSOLE_GPU_BACKEND=none TERM=xterm-256color "
           f"{sys.executable} -m eagle_console tui {plan}")
    term = Term(cmd, (80, 24), patience=2.0)
    try:
        term.wait(r"print wide lines", 30)
        term.keys("n")  # the next step: 0.1
        term.wait(step_done("0.1"), 30)
        screen = term.wait(r"│ascii after", 10)  # the log's row, right of the Step pane's border
        lines = screen.splitlines()
        # the active tab's name is whole; at 80 columns the others are cut ("Ser…│NCC…│Output│Ext…")
        strip = next(i for i, s in enumerate(lines) if "Output" in s and ("NCCL" in s or "NCC…" in s))
        left = cell_len(lines[strip][:lines[strip].index("│", 1) + 1])  # the log starts right of the Step pane
        status = next(i for i, s in enumerate(lines) if "following ·" in s)
        pane = lines[strip + 1:status]  # the log's rows, beside the Step pane's
        for line in pane:
            assert cell_len(line) <= 80, screen
            assert line.startswith(("│", "╰")) and cells_between(line, left - 1, left) in "│╯", screen
        log = "".join(cells_between(s, left, 80 - 2).rstrip() for s in pane)  # 2: the scrollbar's gutter
        assert f"mixed {CJK}ascii after" in log, screen
    finally:
        term.close()
