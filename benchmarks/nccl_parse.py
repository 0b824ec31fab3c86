"""`nccl` parse time at 10k vs 100k lines (issue #18): linear means a ratio near 10.

Two logs per size, each line from another process: every line from a new host (the reported case, 100k
lines took 54 s when each line scanned the hosts seen so far) and lines from 16 hosts (a real multi-node
run). Times the parse + summary (`NcclParser.feed` then `summary()`), best of `--reps`.

    .venv/bin/python benchmarks/nccl_parse.py [--reps 3] [--small 10000] [--large 100000]
"""

from __future__ import annotations

import argparse
import time

from eagle_console.parse.nccl import NcclParser


def lines(n: int, hosts: int | None) -> list[str]:
    """`n` NCCL channel lines; host i % hosts (or a new host per line when hosts is None)."""
    out = []
    for i in range(n):
        host = f"node{i if hosts is None else i % hosts}"
        src, dst = i % 8, (i + 1) % 8
        out.append(f"{host}:{1000 + i}:{2000 + i} [{src}] NCCL INFO Channel {i % 32:02d}/0 : "
                   f"{src}[{src}] -> {dst}[{dst}] via P2P/CUMEM/read")
    return out


def parse_s(text: list[str], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        parser = NcclParser()
        parser.feed(text)
        parser.summary()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=100_000)
    args = ap.parse_args()
    for label, hosts in (("a host per line", None), ("16 hosts", 16)):
        small = parse_s(lines(args.small, hosts), args.reps)
        large = parse_s(lines(args.large, hosts), args.reps)
        print(f"{label:>16}: {args.small:,} lines {small * 1000:8.1f} ms · {args.large:,} lines "
              f"{large * 1000:8.1f} ms · ratio {large / small:5.1f} (linear ≈ {args.large / args.small:g})")


if __name__ == "__main__":
    main()
