"""Time to first screen: the console vs a bare Textual app, process start → first paint, same run.

Both run headless, and from `call_after_refresh` in on_mount print the time from their spawn to the
first paint (so interpreter start and imports count, exit does not) and exit (the console when
EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT=1). The clock: this script puts its CLOCK_MONOTONIC reading at spawn
in EAGLE_CONSOLE_SPAWNED_AT and the child subtracts it from its own (one system-wide clock, µs resolution;
/proc's process start time counts in 10 ms ticks, too coarse for a 1.5x target on ~300 ms).

Both get the same terminal size, 120x40, through COLUMNS/LINES: without a terminal, Rich guesses 80x25
and the headless driver 80x24, so an app that lays out before the driver's first resize lays out twice,
a cost no real terminal has.

Prints each median, the ratio (target ≤ 1.2x, issue 31) and which heavy modules (torch, safetensors, numpy) the
console process had loaded when it exited.

    .venv/bin/python benchmarks/startup.py [--reps 15] [--plan PLAN] [--before OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.2  # issue 31 (was 1.5: issues 2, 7)
PLAN = """[plan]
id = "bench"
title = "startup benchmark"

[[phase]]
id = "0"
title = "Phase"

[[phase.step]]
id = "0.1"
title = "echo"
run = "echo hi"
"""


def timed(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, str]:
    """(seconds from spawn to first paint as the process itself reports it, stdout)."""
    env = {**env, "EAGLE_CONSOLE_SPAWNED_AT": repr(time.monotonic())}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=cwd)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("first-paint")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return float(line.split()[1].rstrip("s")), line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--plan", default=None, help="plan to open (default: a one-step plan in a temp dir)")
    ap.add_argument("--before", type=Path, default=None,
                    help="a checkout of older code (e.g. `git worktree add /tmp/before COMMIT`): its console runs "
                         "in each round too, so before and after are measured side by side in one run")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="eagle-startup-"))
    plan = Path(args.plan) if args.plan else tmp / "plan.toml"
    if not args.plan:
        plan.write_text(PLAN)
    env = {**os.environ, "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT": "1",
           # Bytecode as an installed package has it: a PYTHONDONTWRITEBYTECODE shell would make every run
           # recompile the console's own sources (the bare app's Textual came compiled from pip), so both
           # write theirs once, under a prefix outside the tree, in the warm-up run below.
           "PYTHONPYCACHEPREFIX": str(tmp / "pycache"), "EAGLE_CONSOLE_STATE": str(tmp / "state"),
           "EAGLE_CONSOLE_GPU_BACKEND": os.environ.get("EAGLE_CONSOLE_GPU_BACKEND", "none"),
           "COLUMNS": "120", "LINES": "40"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    console = [sys.executable, "-m", "eagle_console", "tui", str(plan.resolve())]
    bare = [sys.executable, str(ROOT / "benchmarks" / "_bare_app.py")]
    # The older code from its own tree: first on sys.path (the cwd of `-m`, then PYTHONPATH), so neither
    # the editable install nor this checkout is what it imports; and its own state dir, since a journal
    # written by one version may be of a schema the other refuses.
    before_env = ({**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(args.before.resolve()),
                                                                   env.get("PYTHONPATH")])),
                   "EAGLE_CONSOLE_STATE": str(tmp / "state-before")}
                  if args.before else env)
    timed(console, env)  # warm the page cache and bytecode for both, so neither pays first-run costs
    timed(bare, env)
    if args.before:
        timed(console, before_env, args.before)
    c_times, b_times, o_times, heavy = [], [], [], ""
    for _ in range(args.reps):  # interleaved, so machine load hits both alike
        t, out = timed(console, env)
        c_times.append(t)
        # the console prints "first-paint 0.41s modules torch=no safetensors=no numpy=no" when told to exit
        heavy = next((line for line in out.splitlines() if line.startswith("first-paint")), heavy)
        b_times.append(timed(bare, env)[0])
        if args.before:
            o_times.append(timed(console, before_env, args.before)[0])
    c, b = statistics.median(c_times), statistics.median(b_times)
    print(f"console first paint: median {c * 1000:.0f} ms over {args.reps} (min {min(c_times) * 1000:.0f})")
    print(f"bare app first paint: median {b * 1000:.0f} ms over {args.reps} (min {min(b_times) * 1000:.0f})")
    # Each console run is paired with the bare run right after it: the machine's load drifts (2 shared
    # cores), and a pair sees about the same load, so the median of the pairs' ratios is the steadier figure.
    pairs = sorted(ct / bt for ct, bt in zip(c_times, b_times, strict=True))
    ratio = statistics.median(pairs)
    print(f"ratio of the medians {c / b:.2f}x; of the fastest runs {min(c_times) / min(b_times):.2f}x")
    print(f"ratio, median of the {len(pairs)} interleaved pairs: {ratio:.2f}x "
          f"(quartiles {pairs[len(pairs) // 4]:.2f}-{pairs[(3 * len(pairs)) // 4]:.2f}; target <= {TARGET}x): "
          f"{'ok' if ratio <= TARGET else 'OVER'}")
    print(f"console at exit: {heavy}" if heavy else "the console did not report its modules")
    if o_times:
        o = statistics.median(o_times)
        before = statistics.median(sorted(ot / bt for ot, bt in zip(o_times, b_times, strict=True)))
        print(f"before ({args.before}): median {o * 1000:.0f} ms; ratio, median of the pairs with the same bare runs: "
              f"{before:.2f}x (after: {ratio:.2f}x)")
    return 0 if ratio <= TARGET and heavy and "=yes" not in heavy else 1


if __name__ == "__main__":
    raise SystemExit(main())
