"""Re-make docs/captures/metrics-*.txt: the Metrics tab (`6`) in real tmux while the demo's 0.4 benchmark runs,
at 120x40 and 80x24, and at 120x40 with the demo's silent drafter (EAGLE_SIM_ACCEPT=none uncommented in the
plan's [env]) until the ACCEPT_LENGTH_ONE alarm is raised. Keys alone: n/y through Phase 0, n for 0.4, 6.

Usage (repo root, tmux and Textual installed): python benchmarks/captures_metrics.py [OUT_DIR]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from tmuxkit import Term, step_done  # noqa: E402


def build(root: Path, home: Path, silent: bool) -> Path:
    env = {"PYTHONPATH": str(REPO), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "eagle_console", "demo", "--dir", str(root), "--no-tui"], check=True,
                   env=env, capture_output=True, timeout=120)
    plan = root / "plans" / "demo.toml"
    if silent:
        plan.write_text(plan.read_text().replace('# EAGLE_SIM_ACCEPT = "none"', 'EAGLE_SIM_ACCEPT = "none"'))
    return plan


def walk_to_bench(term: Term) -> None:
    term.wait(r"Quick Probe", 90)
    term.keys("n")
    term.wait(r"Run 0\.1 [\s\S]*(Enter|y)", 20)
    term.keys("y")
    for step in ("0.1", "0.2", "0.2b", "0.3"):
        term.wait(step_done(step), 120)
        term.keys("n")
    term.wait(r"0\.4", 10)
    term.keys("6")


def job(tmp: Path, out: Path, name: str, size: tuple[int, int], silent: bool, until: str,
        zoomed: str | None = None) -> None:
    root = tmp / name
    plan = build(root, tmp / "home", silent)
    env = {"PYTHONPATH": str(REPO), "HOME": str(tmp / "home"), "TERM": "xterm-256color"}
    term = Term(f"{sys.executable} -m eagle_console tui {plan} --sim {root / 'sim'}", size, env=env,
                prefix="ec-metrics", poll_s=0.2)
    try:
        walk_to_bench(term)
        text = term.wait(until, 60)
        (out / f"{name}.txt").write_text(text)
        print(f"{name}: saved")
        if zoomed:  # z z: the GPUs alone, then the tabs alone: room for the charts under the alarm
            term.keys("z", "z")
            term.wait_gone(r"─ PLAN ─")
            (out / f"{zoomed}.txt").write_text(term.wait(r"ERROR ACCEPT_LENGTH_ONE[\s\S]*tok/s · red 82", 20))
            print(f"{zoomed}: saved")
    finally:
        term.keys("q")
        time.sleep(3)
        term.close()
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                        "from eagle_console.demo.build import stop_leftovers; stop_leftovers(Path(sys.argv[1]))",
                        str(root)], env={"PYTHONPATH": str(REPO)}, capture_output=True, timeout=60)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "captures"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ec-metrics-") as t:
        tmp = Path(t)
        (tmp / "home").mkdir()
        # while 0.4 runs: a request in flight, a minute of charts filling from the right
        job(tmp, out, "metrics-120x40-1-bench", (120, 40), False, r"decode [1-9][\d.]* tok/s[\s\S]*running 1 [\s\S]*tok/s · red 82")
        job(tmp, out, "metrics-80x24-1-bench", (80, 24), False, r"tok/s +[▁▂▃▄▅▆▇█]{4,} [1-9][\s\S]*run +[▁▂▃▄▅▆▇█]+ 1 ")
        job(tmp, out, "metrics-120x40-2-alarm", (120, 40), True, r"ERROR ACCEPT_LENGTH_ONE[\s\S]*tok/s +[▁▂▃▄▅▆▇█]+ [1-9]",
            zoomed="metrics-120x40-3-alarm-zoomed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
