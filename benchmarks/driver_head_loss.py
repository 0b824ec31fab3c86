"""A kept Ray driver after its head's GCS dies: the CPU it burns and how long it lives on, against the same
measure for an older checkout's driver (`--before`), interleaved in the same run.

While the GCS is gone every process that joined as a Ray driver busy-loops in Ray's error listener (ray 2.60
`_private/worker.py` listen_error_messages: the subscriber's poll returns at once), so a kept driver burns a
core until its own probe of the GCS port (cluster/driverserve.py `watch`) finds it refused and it leaves.
Each rep: a fresh local cluster (eagle_console.cluster.local, two sim nodes), `eagle-console gpus --cluster`
to start the kept driver, a wait of a random 0-5 s (the same seeded phases for both checkouts: when a head
dies is not up to us), SIGKILL of the gcs_server, then the driver's CPU (psutil, 50 ms samples) until it
exits. Not timed: the cluster's own start and stop.

    .venv/bin/python benchmarks/driver_head_loss.py [--reps 6] [--before OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def one(checkout: Path, phase_s: float) -> dict:
    import psutil

    from eagle_console.cluster import start_local_cluster
    from eagle_console.cluster.keptdriver import stop_kept
    from eagle_console.sim import gpustate

    root = Path(tempfile.mkdtemp(prefix="ecb-", dir="/tmp"))
    runtime = Path(tempfile.mkdtemp(prefix="ecbt-", dir="/tmp"))  # this rep's kept drivers only
    sims = {}
    for name, gpus in {"a": 2, "b": 3}.items():
        sims[name] = root / f"sim-{name}"
        gpustate.create_node(sims[name], gpus=gpus)
    cluster = start_local_cluster(root, sims)
    try:
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(checkout)}
        done = subprocess.run([sys.executable, "-m", "eagle_console", "gpus", "--json", "--cluster", cluster.address],
                              capture_output=True, text=True, env=env, cwd=str(checkout), timeout=120)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        drivers = [p for p in psutil.process_iter(["cmdline", "environ"])
                   if "eagle_console.cluster.driver" in " ".join(p.info["cmdline"] or ())
                   and (p.info["environ"] or {}).get("XDG_RUNTIME_DIR") == str(runtime)]
        if len(drivers) != 1:
            raise RuntimeError(f"expected one kept driver, found {drivers}")
        driver = drivers[0]
        time.sleep(phase_s)
        gcs = [p for p in psutil.process_iter(["name", "cmdline"])
               if p.info["name"] == "gcs_server" and str(cluster.temp) in " ".join(p.info["cmdline"] or ())]
        before = sum(driver.cpu_times()[:2])
        cpu, killed = before, time.monotonic()
        gcs[0].kill()
        while time.monotonic() - killed < 60:
            try:
                if driver.status() == psutil.STATUS_ZOMBIE:
                    break
                cpu = sum(driver.cpu_times()[:2])
            except psutil.Error:
                break
            time.sleep(0.05)
        return {"cpu_s": round(cpu - before, 3), "life_s": round(time.monotonic() - killed, 2)}
    finally:
        cluster.stop()
        stop_kept(runtime / "eagle-console")  # this rep's kept drivers (XDG_RUNTIME_DIR/eagle-console)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--before", type=Path, help="an older checkout of this repository, measured alongside")
    args = ap.parse_args()
    phases = [random.Random(7 + i).uniform(0.0, 5.0) for i in range(args.reps)]
    sides = {"new": HERE, **({"before": args.before.resolve()} if args.before else {})}
    got: dict[str, list[dict]] = {k: [] for k in sides}
    for phase in phases:
        for name, checkout in sides.items():
            got[name].append({**one(checkout, phase), "phase_s": round(phase, 2)})
            print(f"[{name}] {got[name][-1]}", file=sys.stderr)
    report = {name: {"median_cpu_s": statistics.median(r["cpu_s"] for r in rows),
                     "median_life_s": statistics.median(r["life_s"] for r in rows), "reps": rows}
              for name, rows in got.items()}
    if args.before:
        report["cpu_ratio_new_to_before"] = round(report["new"]["median_cpu_s"] / max(report["before"]["median_cpu_s"], 1e-3), 3)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
