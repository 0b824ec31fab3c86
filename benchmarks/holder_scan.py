"""The /proc/PID/fd holder scan against `fuser -v` on the same files, which this benchmark holds open.

    python benchmarks/holder_scan.py [--files 9] [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eagle_console.node.procs import scan_device_fds  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=9, help="fake device files held (8 GPUs + ctl)")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dev = Path(tmp).resolve()
        paths = [dev / f"nvidia{i}" for i in range(args.files - 1)] + [dev / "nvidiactl"]
        fds = []
        for p in paths:
            p.touch()
            fds.append(os.open(p, os.O_RDONLY))
        prefix = str(dev / "nvidia")
        found = scan_device_fds(prefix)
        assert os.getpid() in found, "the scan must find this process"
        scan = []
        for _ in range(args.runs):
            t = time.perf_counter()
            scan_device_fds(prefix)
            scan.append(time.perf_counter() - t)
        report = {"processes": sum(1 for n in os.listdir("/proc") if n.isdigit()),
                  "scan_ms_median": round(statistics.median(scan) * 1000, 3)}
        if shutil.which("fuser"):
            argv = ["fuser", "-v", *map(str, paths)]
            out = subprocess.run(argv, capture_output=True, text=True)
            assert str(os.getpid()) in out.stdout, "fuser must find this process too"
            fus = []
            for _ in range(max(5, args.runs // 5)):
                t = time.perf_counter()
                subprocess.run(argv, capture_output=True)
                fus.append(time.perf_counter() - t)
            report["fuser_ms_median"] = round(statistics.median(fus) * 1000, 3)
            report["ratio_fuser_vs_scan"] = round(report["fuser_ms_median"] / report["scan_ms_median"], 1)
        for fd in fds:
            os.close(fd)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
