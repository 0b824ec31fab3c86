"""Plan load time against `tomllib.loads` of the same text, measured in the same run (issue 18).

Generates plans of 1,000 and 8,000 steps and one of ~10 MB (every step with a title, a description,
needs, a run command with a ${var}, an env table and a timeout), then reports for each the median of
`parse_plan` (TOML parse + positions + validation) and of `tomllib.loads` alone, and their ratio.

    .venv/bin/python benchmarks/plan_load.py [--reps 3] [--mb 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eagle_console.plan.loader import parse_plan  # noqa: E402

HEAD = '[plan]\nid = "bench"\ntitle = "generated plan"\n\n[vars]\nmodel = "/data/models/m"\n\n[env]\nNCCL_ALGO = "Ring"\n\n'
STEPS_PER_PHASE = 100


def step_text(i: int) -> str:
    needs = f'  needs = ["s{i - 1}"]\n' if i % STEPS_PER_PHASE else ""
    return (f'  [[phase.step]]\n  id = "s{i}"\n  title = "step {i}: probe the drafter"\n'
            f'  description = "generated step number {i}, with a sentence of text to read"\n{needs}'
            f'  run = "python probe.py --model ${{model}} --seed {i}"\n'
            f'  env = {{ SEED = "{i}" }}\n  timeout = "90s"\n\n')


def plan_of(steps: int) -> str:
    parts = [HEAD]
    for i in range(steps):
        if i % STEPS_PER_PHASE == 0:
            parts.append(f'[[phase]]\nid = "p{i // STEPS_PER_PHASE}"\ntitle = "phase {i // STEPS_PER_PHASE}"\n\n')
        parts.append(step_text(i))
    return "".join(parts)


def plan_of_size(megabytes: float) -> tuple[int, str]:
    per_step = len(step_text(50_000)) + 40 / STEPS_PER_PHASE
    steps = int(megabytes * 1e6 / per_step)
    return steps, plan_of(steps)


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mb", type=float, default=10.0)
    args = ap.parse_args()
    cases = [(1000, plan_of(1000)), (8000, plan_of(8000)), plan_of_size(args.mb)]
    path = Path("/nonexistent/bench.toml")  # parse_plan never reads it; positions and errors use it
    print(f"{'steps':>8} {'MB':>6} {'load ms':>9} {'tomllib ms':>11} {'ratio':>6}")
    for steps, text in cases:
        plan = parse_plan(text, path)
        assert sum(1 for _ in plan.steps()) == steps
        load = median_time(lambda t=text: parse_plan(t, path), args.reps)
        toml = median_time(lambda t=text: tomllib.loads(t), args.reps)
        print(f"{steps:>8} {len(text.encode()) / 1e6:>6.2f} {load * 1e3:>9.0f} {toml * 1e3:>11.0f} "
              f"{load / toml:>6.2f}x")


if __name__ == "__main__":
    main()
