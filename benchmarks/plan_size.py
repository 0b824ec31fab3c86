"""A hostile plan file against a normal one, time and peak memory, each in a fresh process (issue: a 10 MB
plan that is one array of 5 million integers took 28.9 s and 2.0 GB to load).

For each case a child process loads the file with `load_plan` (what every face does: read, TOML, positions,
validation; a PlanError is an answer too) and reports its wall time and peak RSS (`ru_maxrss`); the reference
is a child doing `tomllib.loads` of the shipped extraction plan, measured in the same run. Ratios against
the reference; no absolute figure is comparable between machines.

    .venv/bin/python benchmarks/plan_size.py [--mb 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "plans" / "extraction-sglang.toml"

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
t = time.perf_counter()
what = sys.argv[1]
outcome = "loaded"
if what == "tomllib":
    import tomllib
    tomllib.loads(open(sys.argv[2]).read())
else:
    from eagle_console.plan.issues import PlanError
    from eagle_console.plan.loader import load_plan
    try:
        load_plan(sys.argv[2])
    except PlanError as exc:
        outcome = str(exc).splitlines()[0][:160]
print(json.dumps({{"s": time.perf_counter() - t, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "outcome": outcome}}))
"""


def measure(what: str, path: Path, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), what, str(path)],
                             capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    return {"s": statistics.median(r["s"] for r in runs), "rss_mib": max(r["rss_mib"] for r in runs),
            "outcome": runs[0]["outcome"]}


def int_array_plan(megabytes: float) -> str:
    count = int(megabytes * 1e6 / 2)  # "0," per integer: a 10 MB file holds 5 million
    return ('[plan]\nid = "big"\ntitle = "one array"\n\n[vars]\nnumbers = [' + "0," * count + "]\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hostile = Path(tmp) / "hostile.toml"
        hostile.write_text(int_array_plan(args.mb))
        under = Path(tmp) / "under-the-cap.toml"  # the worst a plan file may still cost: an array to the cap
        under.write_text(int_array_plan((1024 * 1024 - 100) / 1e6))
        ref = measure("tomllib", SHIPPED, args.reps)
        cases = {"shipped plan, load_plan": measure("load", SHIPPED, args.reps),
                 f"{hostile.stat().st_size / 1e6:.1f} MB array plan, load_plan": measure("load", hostile, 1),
                 f"{under.stat().st_size / 1e6:.2f} MB array plan (under the cap), load_plan":
                     measure("load", under, 1)}
    print(f"reference: tomllib.loads of {SHIPPED.name}: {ref['s'] * 1000:.1f} ms, peak RSS {ref['rss_mib']:.0f} MiB")
    for name, m in cases.items():
        print(f"{name}: {m['s'] * 1000:.1f} ms ({m['s'] / ref['s']:.1f}x), peak RSS {m['rss_mib']:.0f} MiB "
              f"({m['rss_mib'] / ref['rss_mib']:.1f}x): {m['outcome']}")


if __name__ == "__main__":
    main()
