"""CPU of one CLI process (`eagle-console status PLAN`, `nccl --help`), against a bare Python in the same run.

Every test that runs the CLI as a process, every shell completion and every script calling the CLI in a
loop pays this start-up; the suite starts ~600 of them. Runs are interleaved (bare, this tree, the
`--before` tree) so a busy machine weighs on each the same; each figure is the median of the user+sys CPU
the kernel gives the finished child (`os.wait4`). Bytecode is written first, as an installed package has it.

    .venv/bin/python benchmarks/cli_start.py [--reps 31] [--before OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "plans" / "phase0-aqmedai-probe.toml"


def cpu_of(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """user+sys CPU seconds of one run of `argv` (its output discarded). Not run in a checkout: `-m` puts
    the working directory first on sys.path, ahead of PYTHONPATH."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that makes `python -m eagle_console` import the package from `tree` (PYTHONPATH is
    searched before the editable install's finder)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--before", type=Path, help="an older checkout (its eagle_console/ is imported)")
    args = ap.parse_args()
    trees = {"now": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    plan = Path(tempfile.mkdtemp(prefix="ec-cli-start-")) / PLAN.name  # its journal goes beside it, not here
    shutil.copy(PLAN, plan)
    commands = {"status": ["status", str(plan)], "nccl --help": ["nccl", "--help"]}
    for tree in trees.values():  # bytecode first: a cold first run is not what a user's second run costs
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "eagle_console")], check=True)
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.reps):
        cpu.setdefault(("bare", ""), []).append(cpu_of([sys.executable, "-c", "pass"], tree_env(ROOT), plan.parent))
        for name, tree in trees.items():
            for label, argv in commands.items():
                cpu.setdefault((name, label), []).append(
                    cpu_of([sys.executable, "-m", "eagle_console", *argv], tree_env(tree), plan.parent))
    bare = statistics.median(cpu[("bare", "")])
    print(f"bare python -c pass: {bare * 1000:.1f} ms CPU (median of {args.reps})")
    for label in commands:
        now = statistics.median(cpu[("now", label)])
        line = f"{label:12s} now {now * 1000:6.1f} ms CPU, {now / bare:.2f}x bare"
        if args.before:
            before = statistics.median(cpu[("before", label)])
            line += f"; before {before * 1000:6.1f} ms, {before / bare:.2f}x bare; now/before {now / before:.2f}"
        print(line)
    shutil.rmtree(plan.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
