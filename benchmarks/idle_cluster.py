"""Idle CPU of the console on a 2-node cluster plan (issue #20) against the same console on a one-node plan,
in the same run, each in its own process: the target is < 3 % of one core with 2 nodes.

A real local Ray cluster (eagle_console.cluster.local: head "a" + raylet "b", each with 8 simulated GPUs);
the console's own machine has its simulated node too. Only the console process's CPU is counted: the GCS,
raylets and the nodes' agents are the cluster's, paid with or without a console.

    .venv/bin/python benchmarks/idle_cluster.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from idle_cpu import idle_pct  # noqa: E402

STEPS = "".join(f'[[phase.step]]\nid = "0.{i}"\ntitle = "step {i}"\nrun = "true"\n\n' for i in range(1, 7))


def child(seconds: float, sim: Path, address: str | None) -> None:
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan_path = Path(tempfile.mkdtemp()) / "plan.toml"
    cluster = f'[cluster]\naddress = "{address}"\n\n' if address else ""
    plan_path.write_text(f'[plan]\nid = "b"\ntitle = "b"\n\n{cluster}[[phase]]\nid = "0"\ntitle = "p"\n\n{STEPS}')
    plan = load_plan(plan_path)
    app = make_app(plan, Journal.for_plan(plan), sim_dir=sim)
    if address:  # what the pane showed last, kept for the report (the DOM is gone once the app exits)
        from eagle_console.tui.panes import gpu_nodes

        failed = gpu_nodes.NodeSections._failed

        def keep_failure(self, exc):
            print(f"nodes read failed: {exc!r}", file=sys.stderr)
            failed(self, exc)

        gpu_nodes.NodeSections._failed = keep_failure
    pct = idle_pct(app, seconds)
    nodes = getattr(app.ctx, "nodes", None) or []
    print(json.dumps({"cpu_pct": round(pct, 2), "nodes_read": [n["name"] for n in nodes if n.get("gpus")],
                      "nodes": [(n["name"], n.get("reachable"), n.get("error")) for n in nodes]}))


def run_child(seconds: float, sim: Path, address: str | None) -> dict:
    argv = [sys.executable, __file__, "--child", "--seconds", str(seconds), "--sim", str(sim)]
    if address:
        argv += ["--address", address]
    r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "EAGLE_CONSOLE_GPU_BACKEND": "sim"})
    if r.returncode != 0:
        raise SystemExit(r.stderr[-3000:])
    for line in r.stderr.splitlines():
        if line.startswith("nodes read failed"):
            print(line, file=sys.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--sim", type=Path)
    ap.add_argument("--address")
    args = ap.parse_args()
    if args.child:
        child(args.seconds, args.sim, args.address)
        return 0
    from eagle_console.cluster.local import start_local_cluster
    from eagle_console.sim import gpustate

    root = Path(tempfile.mkdtemp(prefix="ecb-", dir="/tmp"))
    sims = {}
    for name in ("local", "a", "b"):
        sims[name] = root / f"sim-{name}"
        gpustate.create_node(sims[name], gpus=8)
    one = run_child(args.seconds, sims["local"], None)
    cluster = start_local_cluster(root / "ray", {"a": sims["a"], "b": sims["b"]})
    try:
        two = run_child(args.seconds, sims["local"], cluster.address)
    finally:
        cluster.stop()
    print(json.dumps({"one_node_pct": one["cpu_pct"], "two_nodes_pct": two["cpu_pct"], "nodes": two["nodes"],
                      "nodes_read": two["nodes_read"], "seconds": args.seconds}))
    print(f"idle console, {args.seconds:g}s: one node {one['cpu_pct']:.2f}% · 2-node cluster plan "
          f"{two['cpu_pct']:.2f}% of one core (nodes read: {', '.join(two['nodes_read']) or 'none'}) · "
          f"ratio {two['cpu_pct'] / one['cpu_pct']:.2f} · target < 3%: {'met' if two['cpu_pct'] < 3 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
