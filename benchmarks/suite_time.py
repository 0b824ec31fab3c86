"""Where the test suite's CPU goes, per module and per test, from what tests/cpukit.py wrote.

    EAGLE_TEST_CPU=/tmp/suite.cpu .venv/bin/pytest -q -n auto
    python benchmarks/suite_time.py /tmp/suite.cpu [--top 30]

Each line of the file is one test: CPU seconds of the process that ran it and of the children it reaped
(setup + call + teardown), wall seconds, node id. The suite is CPU-bound on 2 cores (docs/performance.md),
so the CPU column, not the wall one, says what a change saves.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path


def read(path: Path) -> list[tuple[float, float, str]]:
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split("\t")
        if len(parts) != 3:
            sys.exit(f"{path}:{number}: expected CPU<TAB>wall<TAB>node id")
        rows.append((float(parts[0]), float(parts[1]), parts[2]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--top", type=int, default=25, help="how many modules and tests to list")
    args = ap.parse_args()
    rows = read(args.file)
    cpu = collections.Counter()
    wall = collections.Counter()
    count = collections.Counter()
    for c, w, nodeid in rows:
        module = nodeid.split("::")[0]
        cpu[module] += c
        wall[module] += w
        count[module] += 1
    total = sum(cpu.values())
    print(f"{len(rows)} tests, {total:.1f} CPU-s in the test processes and the children they reaped")
    print(f"\n{'CPU-s':>8} {'share':>6} {'wall-s':>8} {'tests':>5}  module")
    for module, c in cpu.most_common(args.top):
        print(f"{c:8.1f} {c / total:6.1%} {wall[module]:8.1f} {count[module]:5d}  {module}")
    print(f"\n{'CPU-s':>8} {'wall-s':>8}  test")
    for c, w, nodeid in sorted(rows, reverse=True)[:args.top]:
        print(f"{c:8.1f} {w:8.1f}  {nodeid}")


if __name__ == "__main__":
    main()
