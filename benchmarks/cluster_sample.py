"""GPU sample latency of 2 nodes through Ray (each node's NodeAgent: sample + holder scan, in parallel)
against 1 node read locally (the same work in this process), and the CPU a driver polling both nodes
once a second costs (what the GPUs pane's poll would), on a real local cluster (tests/clusterkit.py:
head "a" + raylet "b", each with a simulated node).

    PYTHONPATH=. .venv/bin/python benchmarks/cluster_sample.py [--samples 40] [--idle 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _median_ms(fn, n: int) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return round(statistics.median(out) * 1000, 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import psutil
    from clusterkit import start_cluster

    from eagle_console.node.gpus import open_backend
    from eagle_console.node.procs import gpus_document, scan_node
    from eagle_console.ops.nodes import read_nodes

    cluster = start_cluster()
    try:
        sim = cluster.nodes["a"].sim

        def local() -> None:
            backend = open_backend(sim)
            try:
                sample = backend.sample()
                scan = scan_node(sample, [], device_prefix=backend.device_prefix)
                gpus_document(sample, scan.holders, scan.pid_namespace)
            finally:
                backend.close()

        def through_ray() -> None:
            nodes = read_nodes(cluster.address, timeout=30)
            assert all(n["reachable"] for n in nodes), nodes

        through_ray()  # the agents start (a worker process per node): not part of a poll
        local_ms = _median_ms(local, args.samples)
        ray_ms = _median_ms(through_ray, args.samples)
        me = psutil.Process()
        cpu0, t0 = sum(me.cpu_times()[:2]), time.monotonic()
        while time.monotonic() - t0 < args.idle:
            through_ray()
            time.sleep(1.0)
        idle_pct = round(100 * (sum(me.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0), 2)
    finally:
        cluster.stop()
    doc = {"local_1_node_ms": local_ms, "ray_2_nodes_ms": ray_ms, "ratio": round(ray_ms / local_ms, 2),
           "driver_cpu_pct_polling_2_nodes_1hz": idle_pct, "samples": args.samples, "idle_s": args.idle}
    print(json.dumps(doc, indent=2) if args.json else
          f"local 1 node {local_ms} ms, 2 nodes via Ray {ray_ms} ms (x{doc['ratio']}); "
          f"driver polling 2 nodes at 1 Hz: {idle_pct}% of a core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
