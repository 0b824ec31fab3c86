"""Issue 32's must-show, in a real 80x24 terminal: `eagle-console demo` walked with the keys alone, the 0.2b
Detail line and the NCCL finding (log tabs zoomed) each whole on the screen, and the demo's quit saying one
true thing. The captures saved in docs/captures (benchmarks/captures_80x24.py) are checked the same way."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tmuxkit import Term, step_done

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "docs" / "captures"


def words(screen: str) -> str:
    """The screen's text without box borders, one space between words: a sentence wrapped over rows reads as
    one, and a cut one does not."""
    return " ".join(re.sub(r"[│╭╮╰╯─█▀▄▌▐▊▎▔▁▇▅▃]", " ", screen).split())


def vocab_sentence(screen: str) -> str:
    """The Detail line's vocab verdict as shown: from `vocab:` to the key line."""
    text = words(screen)
    assert "vocab:" in text, screen
    return text.split("vocab:", 1)[1].split(" r n m u K ")[0].strip()


def shm_finding(screen: str) -> str:
    """The NCCL pane's SHM_FALLBACK finding as shown: from its code to the next line of the pane (env)."""
    text = words(screen)
    assert "SHM_FALLBACK:" in text, screen
    return text.split("SHM_FALLBACK:", 1)[1].split(" env NCCL_")[0].strip()


def test_the_saved_80x24_captures_show_the_0_2b_detail_and_the_nccl_finding_whole():
    """docs/captures' 0.2b and NCCL captures (made by benchmarks/captures_80x24.py): both sentences end."""
    detail = (CAPTURES / "phase0-80x24-08-0.2b-done.txt").read_text()
    nccl = (CAPTURES / "phase0-80x24-11-nccl-finding-zoomed.txt").read_text()
    assert all(len(line) <= 80 for line in detail.splitlines()) and len(detail.splitlines()) == 24
    assert all(len(line) <= 80 for line in nccl.splitlines()) and len(nccl.splitlines()) == 24
    sentence = vocab_sentence(detail)
    assert re.fullmatch(r"\d+ of \d+ draft ids map to other target tokens \(the sets share \d+\): keep each "
                        r"drafter's own d2t/t2d with its own lm_head\.", sentence), sentence
    finding = shm_finding(nccl)
    assert finding.startswith("4 GPU pair(s) connect through SHM (host memory) instead of PCIe P2P:"), finding
    assert finding.endswith("NCCL_P2P_LEVEL=SYS is the known lever."), finding
    assert "GPU pairs: 4 P2P, 4 SHM" in words(nccl) and "P=P2P S=SHM N=NET C=COLLNET .=none" in words(nccl)


pytestmark_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytestmark_tmux
def test_demo_at_80x24_shows_the_0_2b_detail_and_the_nccl_finding_whole_and_quits_saying_what_it_stopped(tmp_path):
    root, home = tmp_path / "demo", tmp_path / "home"
    home.mkdir()
    env = {"PYTHONPATH": str(REPO), "HOME": str(home), "EAGLE_CONSOLE_KILL_GRACE": "2", "TERM": "xterm-256color"}
    # `; sleep 60`: the pane stays after the demo exits, so its last lines can be read
    term = Term(f"{sys.executable} -m eagle_console demo --dir {root}; sleep 60", (80, 24), env=env, patience=2.0)
    try:
        term.wait(r"Quick Probe", 90)
        term.keys("n")
        term.wait(r"Run 0\.1 [\s\S]*Enter confirm", 20)
        term.keys("y")
        term.wait(step_done("0.1"), 60)
        term.keys("n")
        term.wait(step_done("0.2"), 60)
        term.keys("n")
        screen = term.wait(step_done("0.2b") + r"[\s\S]*vocab:[\s\S]*lm_head\.", 60)
        assert vocab_sentence(screen).endswith("with its own lm_head."), screen  # whole: it ended `drafter's`
        term.keys("n")  # 0.3: the simulated server
        term.wait(step_done("0.3") + r"[\s\S]*READY", 120)
        term.keys("2", "z", "z")  # the NCCL tab, then the log tabs alone
        # the header's pair counts too: the summary grows as the server writes its log, and on a loaded
        # machine a screen with the finding could still count fewer pairs than the final 4 and 4
        screen = term.wait(r"GPU\s+pairs:\s+4\s+P2P,\s+4\s+SHM[\s\S]*SHM_FALLBACK[\s\S]*known lever\.", 30)
        log = root / "plans" / "logs" / "sglang-phase0.log"
        cli = json.loads(subprocess.run([sys.executable, "-m", "eagle_console", "nccl", str(log), "--json"],
                                        capture_output=True, text=True, timeout=60,
                                        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}).stdout)
        said = next(f["message"] for f in cli["findings"] if f["code"] == "SHM_FALLBACK")
        shown = shm_finding(screen)
        # the CLI reads no GPU names: the console's finding is its message plus the cards' sentence
        assert shown.startswith(" ".join(said.split())) and shown.endswith("is the known lever."), screen
        assert "GPU pairs: 4 P2P, 4 SHM" in words(screen) and "P=P2P S=SHM N=NET C=COLLNET .=none" in words(screen)
        term.keys("z", "z", "z")  # every pane again
        term.wait(r"─ PLAN ─[\s\S]*─ GPUs", 10)
        term.keys("q")
        out = term.wait(r"stay in", 60)
        flat = re.sub(r"(?m)^(.{80})\n", r"\1", out)  # the shell wrapped the line at 80 columns
        said = re.search(r"stopped the demo's run of 0\.3 \(pid (\d+)\): (\d+) simulated processes in all; its "
                         r"files stay in", flat)
        assert said, out
        assert "keeps running" not in out and "keep running" not in out, out
    finally:
        term.close()
        from eagle_console.demo.build import stop_leftovers

        stop_leftovers(root)
