"""A live run on the simulated node for tests of how other views of the node judge it: a plan whose step
0.1 runs a worker holding 500 MiB of GPU 1, started with `run` (tests/test_clock_step.py,
tests/test_other_host.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
from enginekit import wait_for, write_plan

from eagle_console.processes import alive
from eagle_console.sim import gpustate

Runner = Callable[..., subprocess.CompletedProcess]


def cli(args: list[str], runner: Runner | None = None) -> subprocess.CompletedProcess:
    """The CLI as a process, run by `runner(argv, **popen)` (a view of the node: sim/clockstep, otherhost)."""
    argv = [sys.executable, "-m", "eagle_console", *args]
    return (runner or subprocess.run)(argv, capture_output=True, text=True, timeout=120)


def doc(args: list[str], runner: Runner | None = None) -> dict:
    done = cli(args, runner)
    assert done.stdout.strip(), f"{args}: exit {done.returncode}: {done.stderr}"
    return json.loads(done.stdout)


def step_of(status: dict, step_id: str) -> dict:
    return next(s for p in status["phases"] for s in p["steps"] if s["id"] == step_id)


def start_held_run(tmp_path: Path) -> tuple[Path, Path, int]:
    """(plan, sim dir, worker pid) once the worker holds its memory."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    plan = write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "serve"

          [[phase.step]]
          id = "0.1"
          title = "hold a GPU"
          run = ["{sys.executable}", "-m", "eagle_console.sim.orphans", "worker", "--sim", "{sim}",
                 "--gpu", "1", "--mib", "500"]

          [[phase.step]]
          id = "0.2"
          title = "look at it"
          needs = ["0.1"]
    """)
    started = cli(["run", str(plan), "0.1", "--yes"])
    assert started.returncode == 0, started.stderr
    holders = wait_for(lambda: gpustate.holders(sim), timeout=30)
    return plan, sim, holders[0].pid


def stop_held_run(plan: Path, worker: int) -> None:
    cli(["rollback", str(plan), "0.1", "--yes", "--force"])
    if alive(worker):
        psutil.Process(worker).kill()
