"""ExtractionWatch tick cost with 20,000 sample files present vs a full rescan (walk + stat everything).

Lays out 20,000 small files as SpecForge does (`rows_{k}-{k+2000}/data_{i}.ckpt`, 10 folders), then while
one new file per tick arrives in the last folder measures the incremental scanner's tick against
`full_scan`, and prints the ratio. Also reports a flat single-folder layout, the scanner's worst case.

    .venv/bin/python benchmarks/extraction_watch.py [--files 20000] [--ticks 50]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from eagle_console.node.extraction import OutputScanner, full_scan


def lay_out(root: Path, n: int, group: int) -> Path:
    last = root
    for i in range(n):
        if group:
            g = i // group * group
            last = root / f"rows_{g}-{g + group}"
        last.mkdir(parents=True, exist_ok=True)
        (last / f"data_{i}.ckpt").write_bytes(b"x" * 64)
    # a real job wrote these over an hour: backdate them past the scanner's 2 s "too recent to trust" window
    old = time.time() - 3600
    for path in [*root.rglob("*"), root]:
        os.utime(path, (old, old))
    return last


def measure(root: Path, n: int, group: int, ticks: int) -> tuple[float, float]:
    last = lay_out(root, n, group)
    scanner = OutputScanner(root)
    scanner.tick()  # the first tick sees everything once
    t_inc = t_full = 0.0
    for k in range(ticks):
        (last / f"data_{n + k}.ckpt").write_bytes(b"x" * 64)
        t0 = time.perf_counter()
        inc = scanner.tick()
        t_inc += time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = full_scan(root)
        t_full += time.perf_counter() - t0
        assert inc == ref, (inc, ref)
    return t_inc / ticks, t_full / ticks


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=20000)
    p.add_argument("--ticks", type=int, default=50)
    args = p.parse_args()
    for label, group in (("SpecForge layout (2,000 per folder)", 2000), ("flat folder", 0)):
        tmp = Path(tempfile.mkdtemp(prefix="extract-bench-"))
        try:
            inc, full = measure(tmp, args.files, group, args.ticks)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{label}: {args.files} files, tick {inc * 1000:.2f} ms vs full rescan {full * 1000:.2f} ms "
              f"(reference) -> ratio {full / inc:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
