"""Re-make docs/captures/*-80x24-*.txt: the console in real tmux at 80x24 doing the three jobs of issue #17
with the keys alone, on `eagle-console demo` (a simulated node) built in a temp dir with a temp HOME.

  orphans-*     the demo's orphans on the main screen, `K`, Enter (the result), Esc
  phase0-*      n/y through Phase 0; the drafter verdict after 0.2 and after its rollback (`u`), cursor unmoved;
                the 0.2b Detail line and the NCCL finding (log tabs zoomed) whole; what quitting says
  phase0-120x40-0.3-server-ready  at 120x40, the server's 8 workers all listed under the GPUs
  extraction-*  1.1 running on the Extraction tab and, at the same moment, `eagle-console extraction` in
                another shell: both rates, and how far apart they are

Usage (repo root, tmux and Textual installed): python benchmarks/captures_80x24.py [OUT_DIR]
Prints one JSON document (rates, verdict delays); writes it to OUT_DIR/captures.json as well.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from tmuxkit import Term, step_done  # noqa: E402  (the e2e tests' tmux driver)

SIZE = (80, 24)


class Shots:
    def __init__(self, out: Path) -> None:
        self.out = out

    def save(self, name: str, text: str) -> str:
        (self.out / f"{name}.txt").write_text(text)
        return text


def demo_console(root: Path, home: Path, size: tuple[int, int] = SIZE) -> Term:
    env = {"PYTHONPATH": str(REPO), "HOME": str(home), "EAGLE_CONSOLE_KILL_GRACE": "2", "TERM": "xterm-256color"}
    # the screen read every 0.1 s: the verdict delays are timed by it
    # `; sleep 30`: what the demo prints when it quits stays on screen to be captured
    return Term(f"{sys.executable} -m eagle_console demo --dir {root}; sleep 30", size, env=env, prefix="ec-cap",
                poll_s=0.1, key_pause_s=0.2)


def orphans_job(tmp: Path, shots: Shots) -> None:
    term = demo_console(tmp / "demo-k", tmp / "home")
    try:
        term.wait(r"Quick Probe", 90)
        shots.save("orphans-80x24-1-main", term.wait(r"orphan[\s\S]*orphan", 30))  # both, before K
        term.keys("K")
        # what Enter will signal: the scan is done (the keys' hint shows before it, and an Enter then is ignored)
        shots.save("orphans-80x24-2-kill-dialog", term.wait(r"Enter sends SIGTERM to", 20))
        term.keys("Enter")
        shots.save("orphans-80x24-3-kill-result", term.wait(r"after the kill: .*", 30))
        term.keys("Escape")
        term.wait_gone(r"Kill GPU processes")
        # the holders go at once; the driver gives the memory back a moment later (sim: release_lag_s)
        shots.save("orphans-80x24-4-after", term.wait(r"│ 5 ░+ +0\.0/95\.6G[\s\S]*no GPU processes", 20))
        term.keys("z")
        term.wait_gone(r"─ PLAN ─")  # the GPUs pane alone
        shots.save("orphans-80x24-5-zoom-gpus", term.wait(r"GPUs · 8x", 10))
        term.keys("z", "z", "z", "z")  # the log tabs, the plan, the step, then every pane again
        term.wait(r"─ PLAN ─[\s\S]*─ GPUs", 10)
        term.keys("?")
        shots.save("orphans-80x24-6-help", term.wait(r"Esc closes", 10))
        term.keys("Escape")
        term.wait_gone(r"Esc closes")
    finally:
        term.keys("q")
        time.sleep(2)
        term.close()


def verdict_delay(term: Term, step_pattern: str, verdict: str) -> tuple[float, str]:
    """Seconds from the step's new glyph on screen to the Detail line's new verdict, cursor untouched."""
    term.wait(step_pattern, 60)
    start = time.monotonic()
    text = term.wait(verdict, 10)
    return round(time.monotonic() - start, 2), text


def phase0_and_extraction_job(tmp: Path, shots: Shots, figures: dict) -> None:
    root = tmp / "demo-walk"
    term = demo_console(root, tmp / "home")
    try:
        shots.save("phase0-80x24-01-open", term.wait(r"Quick Probe", 90))
        term.keys("n")
        shots.save("phase0-80x24-02-confirm-0.1", term.wait(r"Run 0\.1 [\s\S]*Enter confirm", 20))
        term.keys("y")
        shots.save("phase0-80x24-03-0.1-done", term.wait(step_done("0.1"), 60))
        term.keys("n")  # 0.2: json.set fixes the drafter config; its check passes
        term.wait(r"drafter check NOT ok", 20)  # selected by n, the verdict before the fix
        figures["verdict_after_run_s"], text = verdict_delay(term, step_done("0.2"), r"drafter check ok")
        shots.save("phase0-80x24-04-0.2-verdict-ok", text)
        term.keys("u")
        shots.save("phase0-80x24-05-rollback-0.2", term.wait(r"Roll back 0\.2[\s\S]*Enter roll back", 20))
        term.keys("Enter")
        figures["verdict_after_rollback_s"], text = verdict_delay(term, r"↺\s*!?\s*0\.2\s", r"drafter check NOT ok")
        shots.save("phase0-80x24-06-0.2-rolled-back-verdict", text)
        term.keys("n")  # 0.2 again
        shots.save("phase0-80x24-07-0.2-again", term.wait(step_done("0.2") + r"[\s\S]*drafter check ok", 60))
        term.keys("n")  # 0.2b: compare vocab mappings; its Detail line's verdict whole (issue 32)
        shots.save("phase0-80x24-08-0.2b-done", term.wait(step_done("0.2b") + r"[\s\S]*vocab:[\s\S]*lm_head\.", 60))
        term.keys("n")  # 0.3: the simulated SGLang server, completed once ready
        shots.save("phase0-80x24-09-0.3-server-ready", term.wait(step_done("0.3") + r"[\s\S]*READY", 120))
        term.keys("2", "z", "z")  # the NCCL tab, the log tabs alone: the SHM finding and the legend whole
        shots.save("phase0-80x24-11-nccl-finding-zoomed", term.wait(r"SHM_FALLBACK[\s\S]*known lever\.[\s\S]*"
                                                                     r"C=COLLNET", 30))
        term.keys("z", "z", "z")  # every pane again
        term.wait(r"─ PLAN ─[\s\S]*─ GPUs", 10)
        term.keys("n")  # 0.4: benchmark
        term.wait(step_done("0.4"), 120)
        term.keys("5")
        shots.save("phase0-80x24-10-0.4-results", term.wait(r"tok_s", 20))
        extraction(term, root, shots, figures)
        term.keys("q")  # the demo stops what it started and says so, in one line (issue 32)
        shots.save("phase0-80x24-12-quit", term.wait(r"stay in", 60))
    finally:
        term.keys("q")
        time.sleep(3)
        term.close()


RATE_ON_SCREEN = re.compile(r"samples (\d+)/(\d+) · ([\d.]+)/s · ETA")


def extraction(term: Term, root: Path, shots: Shots, figures: dict) -> None:
    """n starts 1.1 (300 samples at ~15/s); `4` shows its tab. From 10 s in (tqdm's elapsed is in whole
    seconds), the screen and the CLI are read at the same moment."""
    term.keys("n", "4")
    term.wait(r"samples \d+/300", 30)
    while True:
        m = RATE_ON_SCREEN.search(term.screen())
        if m and int(m.group(1)) >= 180:  # ~12 s into the run
            break
        time.sleep(0.2)
    plan_dir = root / "plans"
    log, out = plan_dir / "logs" / "extract.log", root / "data" / "hidden_states"
    cli = subprocess.Popen([sys.executable, "-m", "eagle_console", "extraction", str(log), str(out), "--total", "300",
                            "--json"], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    screen = shots.save("extraction-80x24-1-running", term.screen())
    doc = json.loads(cli.communicate(timeout=60)[0])
    (shots.out / "extraction-80x24-1-cli.json").write_text(json.dumps(doc, indent=2) + "\n")
    m = RATE_ON_SCREEN.search(screen)
    assert m, screen
    console_rate, cli_rate = float(m.group(3)), doc["rate_per_s"]
    figures["extraction"] = {"console_rate_per_s": console_rate, "cli_rate_per_s": round(cli_rate, 2),
                             "console_done": int(m.group(1)), "cli_done": doc["done"],
                             "difference_pct": round(abs(console_rate - cli_rate) / cli_rate * 100, 1)}
    shots.save("extraction-80x24-2-finished", term.wait(r"samples 300/300", 60))


def wide_server_job(tmp: Path, shots: Shots) -> None:
    """At 120x40 the space goes to what has content: with the server up, all 8 of its workers are listed."""
    term = demo_console(tmp / "demo-wide", tmp / "home", (120, 40))
    try:
        term.wait(r"Quick Probe", 90)
        term.keys("n")
        term.wait(r"Run 0\.1 [\s\S]*Enter confirm", 20)
        term.keys("y")
        for step in ("0.1", "0.2", "0.2b"):
            term.wait(step_done(step), 60)
            term.keys("n")
        text = term.wait(step_done("0.3") + r"[\s\S]*READY", 120)
        text = term.wait(r"(tracked[^\n]*\n[^\n]*){8}", 10)  # the holders table fills in with the next sample
        shots.save("phase0-120x40-0.3-server-ready", text)
    finally:
        term.keys("q")
        time.sleep(3)
        term.close()


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "captures"
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots(out)
    figures: dict = {"size": f"{SIZE[0]}x{SIZE[1]}"}
    with tempfile.TemporaryDirectory(prefix="ec-captures-") as t:
        tmp = Path(t)
        (tmp / "home").mkdir()
        try:
            orphans_job(tmp, shots)
            phase0_and_extraction_job(tmp, shots, figures)
            wide_server_job(tmp, shots)
        except AssertionError as exc:  # a screen that never came: say which, without a traceback
            raise SystemExit(str(exc)) from None
    text = json.dumps(figures, indent=2)
    (out / "captures.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
