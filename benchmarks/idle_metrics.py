"""Idle CPU of the console with the Metrics tab shown vs the Server tab shown (issue 33): the whole console
(`make_app`, 8 simulated GPUs) over a plan whose sglang.server step runs the simulated server (with
--enable-metrics, ready, no requests), each tab in its own process, idle for --seconds after a 3 s warm-up.
A third run shows the Results tab (no log, no scrape): the Server and Metrics panes' own costs are their
runs less that one. Prints the figures and the ratio Metrics / Server (target: at most 1).

    .venv/bin/python benchmarks/idle_metrics.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

PLAN = """[plan]
id = "idle-metrics"
title = "idle metrics"
baseline = {{ tok_s = 82.0 }}

[env]
EAGLE_CONSOLE_SIM = "{sim}"
EAGLE_SIM_STARTUP_S = "1"

[[phase]]
id = "0"
title = "p"

  [[phase.step]]
  id = "0.3"
  title = "server"
  uses = "sglang.server"
  [phase.step.with]
  model = "/models/Kimi-K2.5"
  tp = 8
  port = {port}
  python = "{python} -m eagle_console.sim.sglang_server"
  speculative = {{ algorithm = "EAGLE3", num_steps = 2, eagle_topk = 1, num_draft_tokens = 3 }}
  args = ["--enable-metrics"]
"""


def child(plan_path: Path, sim: Path, tab: str, seconds: float) -> None:
    from idle_cpu import idle_pct

    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(plan_path)
    app = make_app(plan, Journal.for_plan(plan), sim_dir=sim)
    app.call_later(app.action_tab, tab)
    pct = idle_pct(app, seconds)
    print(json.dumps({"tab": tab, "cpu_pct": round(pct, 2)}))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eagle_console", *args], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(REPO)})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3, help="each tab this many times, interleaved; medians")
    ap.add_argument("--child", nargs=3, metavar=("PLAN", "SIM", "TAB"))
    args = ap.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), args.child[2], args.seconds)
        return 0
    from eagle_console.ports import free_port
    from eagle_console.sim import gpustate

    tmp = Path(tempfile.mkdtemp(prefix="ec-idle-metrics-"))
    sim = tmp / "sim"
    gpustate.create_node(sim, gpus=8)
    plan = tmp / "plan.toml"
    plan.write_text(PLAN.format(sim=sim, port=free_port(), python=sys.executable))
    started = cli("run", str(plan), "0.3", "--yes", "--wait")
    if started.returncode != 0:
        print(started.stdout, started.stderr, file=sys.stderr)
        return 1
    runs: dict[str, list[float]] = {"results": [], "server": [], "metrics": []}
    try:
        for _ in range(args.rounds):  # interleaved: a busy minute on a shared machine hits every tab alike
            for tab in runs:
                r = subprocess.run([sys.executable, __file__, "--child", str(plan), str(sim), tab, "--seconds",
                                    str(args.seconds)], capture_output=True, text=True,
                                   env={**os.environ, "EAGLE_CONSOLE_GPU_BACKEND": "sim", "PYTHONPATH": str(REPO)})
                if r.returncode != 0:
                    print(r.stderr[-2000:], file=sys.stderr)
                    return 1
                runs[tab].append(json.loads(r.stdout.strip().splitlines()[-1])["cpu_pct"])
    finally:
        cli("rollback", str(plan), "0.3", "--yes")
    out = {tab: sorted(v)[len(v) // 2] for tab, v in runs.items()}
    print("runs (% of one core): " + " · ".join(f"{tab} {', '.join(f'{x:.2f}' for x in v)}" for tab, v in runs.items()))
    server, metrics = out["server"] - out["results"], out["metrics"] - out["results"]
    print(f"medians, idle {args.seconds:g}s x {args.rounds}, the sim server ready and idle, one core: Results tab shown {out['results']:.2f}% · "
          f"Server tab shown {out['server']:.2f}% · Metrics tab shown {out['metrics']:.2f}%")
    print(f"the pane's own cost (less the Results run): Server {server:.2f} points · Metrics {metrics:.2f} points · "
          f"ratio Metrics/Server {metrics / server if server > 0 else float('inf'):.2f} · whole console "
          f"Metrics/Server {out['metrics'] / out['server']:.2f} (target <= 1: "
          f"{'met' if out['metrics'] <= out['server'] else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
