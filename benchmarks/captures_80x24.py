"""Re-make the 80x24 tmux captures of issue #17's three jobs, keys alone, on the demo node:

1. step through Phase 0 (n, y, n, n, n, n): docs/captures/phase0-80x24-*.txt
2. kill the orphans from K: docs/captures/kill-80x24-*.txt are made by the same harness (see README there)
3. watch an extraction: the Extraction tab while 1.1 runs, with `eagle-console extraction --json` run at
   the same moment on the step's log and output folder; the two rates side by side in
   docs/captures/extraction-80x24-rates.json

    .venv/bin/python benchmarks/captures_80x24.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "tests"))
OUT = REPO / "docs" / "captures"


def main() -> int:
    from test_tmux_walk import console, step_done

    from eagle_console.demo.build import build_demo, stop_leftovers
    from eagle_console.plan.loader import load_plan

    root = Path(tempfile.mkdtemp()) / "demo"
    plan = build_demo(root)
    term = console(root, plan, 80, 24)
    shots: list[tuple[str, str]] = []
    try:
        shots.append(("1-open", term.wait(r"orphan", 30)))
        term.keys("n")
        shots.append(("2-confirm-0.1", term.wait(r"Run 0\.1 .*\?[\s\S]*Enter confirm", 10)))
        term.keys("y")
        shots.append(("3-0.1-done", term.wait(step_done("0.1"), 40)))
        for n, step in enumerate(("0.2", "0.2b", "0.3", "0.4"), start=4):
            term.keys("n")
            shots.append((f"{n}-{step}-done", term.wait(step_done(step), 90)))
        for name, text in shots:
            (OUT / f"phase0-80x24-{name}.txt").write_text(text)

        term.keys("n")  # 1.1: the extraction
        term.keys("4")
        screen = term.wait(r"rate \d+\.\d+/s", 60)
        step = load_plan(plan).step("1.1")
        w = step.watch_extraction
        folder = plan.parent
        log = w.log if w.log.is_absolute() else folder / w.log
        output = w.output if w.output.is_absolute() else folder / w.output
        cli = subprocess.run([sys.executable, "-m", "eagle_console", "extraction", str(log),
                              str(output), "--pattern", w.pattern, "--total", str(w.total), "--json"],
                             capture_output=True, text=True, timeout=60, cwd=REPO)
        screen = term.screen()  # the pane as the CLI read
        pane_rate = float(re.search(r"rate (\d+\.\d+)/s", screen).group(1))
        if cli.returncode not in (0, 1) or not cli.stdout.strip():
            raise SystemExit(f"extraction CLI: rc {cli.returncode}: {cli.stderr}")
        cli_rate = json.loads(cli.stdout)["rate_per_s"]
        (OUT / "extraction-80x24-tab.txt").write_text(screen)
        figures = {"pane_rate_per_s": pane_rate, "cli_rate_per_s": cli_rate,
                   "difference_pct": round(abs(pane_rate - cli_rate) / cli_rate * 100, 1)}
        (OUT / "extraction-80x24-rates.json").write_text(json.dumps(figures, indent=2) + "\n")
        print(json.dumps(figures))
    finally:
        term.close()
        stop_leftovers(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
