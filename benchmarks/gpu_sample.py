"""Cost of one full GPU sample (every field + compute processes, and the /proc holder scan) through the
console's NVML backend, against one `nvidia-smi --query-gpu` subprocess, measured in the same run.

    python benchmarks/gpu_sample.py [--samples 300] [--smi 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eagle_console.node.gpus import open_backend  # noqa: E402
from eagle_console.node.procs import scan_holders  # noqa: E402

SMI_QUERY = ["nvidia-smi", "--query-gpu=memory.used,utilization.gpu,temperature.gpu,power.draw",
             "--format=csv,noheader"]


def _time(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--smi", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t = time.perf_counter()
    backend = open_backend(None, prefer="nvml")
    open_ms = (time.perf_counter() - t) * 1000
    first = backend.sample()
    if first.backend != "nvml":
        print(f"no NVML here: {first.error}", file=sys.stderr)
        return 1
    sample_s = _time(backend.sample, args.samples)
    full_s = _time(lambda: scan_holders(backend.sample(), [], device_prefix=backend.device_prefix),
                   args.samples)
    backend.close()
    report = {"gpus": len(first.gpus), "driver": first.driver, "open_ms": round(open_ms, 2),
              "sample_ms_median": round(statistics.median(sample_s) * 1000, 4),
              "sample_plus_holder_scan_ms_median": round(statistics.median(full_s) * 1000, 4)}
    if shutil.which("nvidia-smi"):
        subprocess.run(SMI_QUERY, capture_output=True, check=True)  # warm-up
        smi_s = _time(lambda: subprocess.run(SMI_QUERY, capture_output=True, check=True), args.smi)
        smi_ms = statistics.median(smi_s) * 1000
        report["nvidia_smi_query_ms_median"] = round(smi_ms, 2)
        report["ratio_smi_vs_sample"] = round(smi_ms / report["sample_ms_median"], 1)
        report["ratio_smi_vs_sample_plus_scan"] = round(smi_ms / report["sample_plus_holder_scan_ms_median"], 1)
    print(json.dumps(report, indent=None if not args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
