"""Idle CPU of the whole console with a short history and a long one (issue #18): the same six-step plan,
its journal filled through the real Journal API with 100 events and with 50,000 (runs with their process
records and exits, marks, notes, kill reports), the console idle on each in its own process, in the same run.
The idle console must not pay for history: target (issue 31) ratio ≤ 1.1 and both < 1 % of one core.

    .venv/bin/python benchmarks/idle_journal.py [--seconds 20] [--events 100 50000] [--before OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = [f"0.{i}" for i in range(1, 7)]


def plan_text() -> str:
    steps = "".join(f'[[phase.step]]\nid = "{s}"\ntitle = "step {s}"\nrun = "true"\n\n' for s in STEPS)
    return f'[plan]\nid = "b"\ntitle = "b"\n\n[[phase]]\nid = "0"\ntitle = "p"\n\n{steps}'


def fill(plan_path: Path, events: int) -> int:
    """Write about `events` events the way runs, marks, notes and kills write them; returns the count."""
    from eagle_console.journal import Journal
    from eagle_console.journal.kinds import EventKind
    from eagle_console.plan.loader import load_plan

    journal = Journal.for_plan(load_plan(plan_path))
    try:
        i = 0
        while journal.last_event_id() < events:
            step = STEPS[i % len(STEPS)]
            turn = i % 4
            if turn == 0:  # a run: begin + status, process record, exit + status (5 events)
                run = journal.begin_run(step, command="true", log=None, force=True)
                journal.record_proc(run, step, supervisor_pid=10_000 + i, supervisor_ctime=1.0, pid=20_000 + i,
                                    pid_ctime=1.0, pgid=20_000 + i, sid=20_000 + i)
                journal.end_run(run, step, exit_code=0, outcome="completed")
            elif turn == 1:
                journal.mark(step, "completed", note="by hand")
            elif turn == 2:
                journal.note(step, f"note {i}")
            else:
                journal.append(EventKind.KILL, step, None, None, killed=[30_000 + i], freed_mib=1024.0)
            i += 1
        return journal.last_event_id()
    finally:
        journal.close()


def child(plan_path: Path, sim: Path, seconds: float) -> None:
    from idle_cpu import idle_pct

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(plan_path)
    app = make_app(plan, Journal.for_plan(plan), sim_dir=sim)
    print(json.dumps({"cpu_pct": idle_pct(app, seconds)}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--events", type=int, nargs=2, default=[100, 50_000])
    ap.add_argument("--child", type=Path)
    ap.add_argument("--fill", type=Path, help="(internal) fill this plan's journal with --events' first count, by this process's code")
    ap.add_argument("--sim", type=Path)
    ap.add_argument("--before", type=Path, default=None,
                    help="an older checkout: its console idles on journals of the same sizes, written by its own code, in the "
                         "same run (before/after)")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.sim, args.seconds)
        return 0
    if args.fill:
        print(fill(args.fill, args.events[0]))
        return 0
    from eagle_console.sim import gpustate

    root = Path(tempfile.mkdtemp())
    sim = root / "sim"
    gpustate.create_node(sim, gpus=8)
    trees = {"now": None, "before": args.before.resolve()} if args.before else {"now": None}

    def run_in(tree: Path | None, *argv: str) -> str:
        """This script in a process of its own with `tree`'s code (None: this checkout's); its stdout."""
        env = {**os.environ, "EAGLE_CONSOLE_GPU_BACKEND": "sim"}
        if tree is not None:  # the older code first on sys.path, the benchmark's own helpers still found
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), str(Path(__file__).resolve().parent),
                                                              env.get("PYTHONPATH")]))
        r = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, env=env,
                           cwd=tree or Path(__file__).resolve().parent.parent)
        if r.returncode != 0:
            sys.exit(r.stderr[-2000:])
        return r.stdout.strip().splitlines()[-1]

    # Each tree's journals written by its own code: a journal of one version may be of a schema the other
    # refuses, and each version reads the history it writes.
    plans: dict[tuple[str, int], Path] = {}
    for label, tree in trees.items():
        for n in args.events:
            plan_path = plans[label, n] = root / label / f"h{n}" / "plan.toml"
            plan_path.parent.mkdir(parents=True)
            plan_path.write_text(plan_text())
            t0 = time.monotonic()
            written = run_in(tree, "--fill", str(plan_path), "--events", str(n), str(n))
            print(f"{label}: journal of {written} events written in {time.monotonic() - t0:.1f}s", flush=True)
    pct: dict[tuple[str, int], float] = {}
    for n in args.events:  # each size, the trees one after the other: the machine's load alike for both
        for label, tree in trees.items():
            out = run_in(tree, "--child", str(plans[label, n]), "--sim", str(sim), "--seconds", str(args.seconds))
            pct[label, n] = json.loads(out)["cpu_pct"]
    small, large = args.events
    for label in trees:
        a, b = pct[label, small], pct[label, large]
        ratio = b / a if a else float("inf")
        print(f"{label}: idle {args.seconds:g}s, whole console, one core: {small} events {a:.2f}% · {large} events "
              f"{b:.2f}% · ratio {ratio:.2f} · target ratio ≤ 1.1 and both < 1%: "
              f"{'met' if ratio <= 1.1 and max(a, b) < 1 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
