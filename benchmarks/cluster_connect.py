"""`gpus --cluster` from a fresh process against the local `gpus`, over two hosts joined by a veth
(tests/netnskit.py: head "a" on host A, where the CLI runs, raylet "b" on host B, 8 simulated GPUs each),
measured in the same run, three ways:
  cold   no kept driver: the command starts one (cluster/keptdriver.py; stopped before each run)
  warm   the kept driver the previous command left: asked on its socket, no `import ray`, no `ray.init`
  keep0  EAGLE_CONSOLE_RAY_KEEP_S=0: the command's own driver, which ends with it (the way before)
and a reading from an open connection (ops.nodes.read_nodes in a process that already asked once). Where a
cold process's time goes: the driver's `import ray` and `ray.init`, timed inside it, printed beside.

Bytecode is written (PYTHONDONTWRITEBYTECODE cleared), as an installed package has it: otherwise every
fresh process compiles the console's modules again and both sides of the ratio measure that.

    sudo PYTHONPATH=. .venv/bin/python benchmarks/cluster_connect.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

OPEN_READ = """
import sys, time
from eagle_console.ops.nodes import read_nodes
read_nodes(sys.argv[1])
t = time.perf_counter(); n = 20
for _ in range(n):
    read_nodes(sys.argv[1])
print((time.perf_counter() - t) / n)
"""
RAY_PARTS = """
import sys, time, logging
t = time.perf_counter(); import ray; imported = time.perf_counter() - t
t = time.perf_counter()
ray.init(address=sys.argv[1], namespace="eagle-console", include_dashboard=False, log_to_driver=False,
         logging_level=logging.ERROR)
connected = time.perf_counter() - t
t = time.perf_counter(); ray.nodes(); nodes = time.perf_counter() - t
print(imported, connected, nodes)
"""
BARE = "pass"


def _median_s(run, n: int, before=None) -> float:
    times = []
    for _ in range(n):
        if before is not None:
            before()
        t = time.perf_counter()
        done = run()
        times.append(time.perf_counter() - t)
        assert done.returncode == 0, done.stdout + done.stderr
    return round(statistics.median(times), 3)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import netnskit

    why = netnskit.skip_reason()
    if why:
        print(f"cannot make two hosts here: {why}", file=sys.stderr)
        return 2
    py = sys.executable
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with netnskit.two_hosts() as net:
        cluster = netnskit.start_two_host_cluster(net)
        try:
            a = net.a
            gpus = [py, "-m", "eagle_console", "gpus", "--cluster", cluster.address]
            a.run(gpus)  # agents started, bytecode written, a driver kept

            def stop_kept() -> None:
                done = a.run([py, "-m", "eagle_console.cluster.keptdriver", "stop"])
                assert done.returncode == 0, done.stderr

            cold = _median_s(lambda: a.run(gpus), args.runs, before=stop_kept)
            a.run(gpus)
            warm = _median_s(lambda: a.run(gpus), args.runs)
            keep0 = _median_s(lambda: a.run(gpus, env={"EAGLE_CONSOLE_RAY_KEEP_S": "0"}), args.runs)
            local = _median_s(lambda: a.run([py, "-m", "eagle_console", "gpus", "--sim", str(net.root / "sim-a")]),
                              args.runs)
            bare = _median_s(lambda: a.run([py, "-c", BARE]), args.runs)
            opened = float(a.run([py, "-c", OPEN_READ, cluster.address]).stdout.strip())
            parts = [a.run([py, "-c", RAY_PARTS, cluster.address]).stdout.split() for _ in range(3)]
            imported, connected, nodes = (statistics.median(float(p[i]) for p in parts) for i in range(3))
            stop_kept()
        finally:
            cluster.stop()
    doc = {"cold_gpus_cluster_s": cold, "warm_gpus_cluster_s": warm, "keep0_gpus_cluster_s": keep0,
           "local_gpus_s": local, "warm_ratio": round(warm / local, 2), "cold_ratio": round(cold / local, 2),
           "keep0_ratio": round(keep0 / local, 2),
           "open_connection_read_ms": round(opened * 1000, 1), "bare_python_s": bare,
           "driver_import_ray_s": round(imported, 3), "driver_ray_init_s": round(connected, 3),
           "driver_ray_nodes_ms": round(nodes * 1000, 1)}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"gpus --cluster, fresh process, cold (starts the kept driver): {cold:.3f} s "
              f"(median of {args.runs})   ratio {doc['cold_ratio']}x")
        print(f"gpus --cluster, fresh process, warm (the kept driver):          {warm:.3f} s   "
              f"ratio {doc['warm_ratio']}x")
        print(f"gpus --cluster, fresh process, EAGLE_CONSOLE_RAY_KEEP_S=0:       {keep0:.3f} s   "
              f"ratio {doc['keep0_ratio']}x")
        print(f"gpus (local):                                                  {local:.3f} s")
        print(f"read from an open connection:  {doc['open_connection_read_ms']} ms")
        print(f"where a cold process goes: python {bare:.3f} s, import ray {imported:.3f} s, "
              f"ray.init {connected:.3f} s, ray.nodes {nodes * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
