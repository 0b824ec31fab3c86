"""A real local Ray cluster for tests/test_cluster_*.py: a head (node "a") and a second raylet (node
"b") on this machine, each with its own simulated node in EAGLE_CONSOLE_SIM, token authentication on.

One cluster per test session (`ray_cluster`), started the product's way (`eagle_console.cluster.
start_local_cluster`, as `demo --nodes` does): every port is picked free, so another cluster on this
machine (another test run) is left alone, and the teardown stops exactly the processes it started.

The session's kept Ray drivers (cluster/keptdriver.py: they outlive the CLI that started them) live in a
runtime dir of the session's own (XDG_RUNTIME_DIR), and are stopped when the session ends.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None
RUNTIME: Path | None = None  # the session's XDG_RUNTIME_DIR (pytest_configure)
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="Ray is not installed (pip install '.[cluster]')")
GPUS = {"a": 2, "b": 3}


def start_cluster():
    """The product's local cluster (eagle_console.cluster.local), on sim nodes told apart by their count."""
    from eagle_console.cluster import start_local_cluster
    from eagle_console.sim import gpustate

    root = Path(tempfile.mkdtemp(prefix="ecr-root-", dir="/tmp"))
    sims = {}
    for name, gpus in GPUS.items():
        sims[name] = root / f"sim-{name}"
        gpustate.create_node(sims[name], gpus=gpus)
    try:
        return start_local_cluster(root, sims)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


@pytest.fixture(scope="session")
def ray_cluster():
    if not HAVE_RAY:
        pytest.skip("Ray is not installed")
    started = time.monotonic()
    cluster = start_cluster()
    print(f"\n[clusterkit] cluster up in {time.monotonic() - started:.1f}s at {cluster.address}")
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


def pytest_configure(config) -> None:
    """Every process of the session (the CLI, consoles, this one) keeps its Ray drivers in a runtime dir of
    the session's, not the user's."""
    global RUNTIME
    RUNTIME = Path(tempfile.mkdtemp(prefix="ecrt-", dir="/tmp"))  # short: a socket path is at most 107 bytes
    os.environ["XDG_RUNTIME_DIR"] = str(RUNTIME)


def pytest_unconfigure(config) -> None:
    """No kept driver outlives the session."""
    from eagle_console.cluster.keptdriver import stop_kept

    if RUNTIME is not None:
        stop_kept(RUNTIME / "eagle-console")
        shutil.rmtree(RUNTIME, ignore_errors=True)


def cluster_plan(tmp_path: Path, cluster, steps: str) -> Path:
    """A plan on `cluster` with `steps` (TOML of [[phase.step]] tables) in one phase."""
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[plan]\nid = "c"\ntitle = "cluster"\n\n[cluster]\naddress = "{cluster.address}"\n\n'
                    f'[[phase]]\nid = "0"\ntitle = "P"\n{steps}')
    return plan


def cli(*argv: object, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eagle_console", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def step_state(plan: Path, step_id: str) -> tuple[str, dict]:
    """(status, latest run) of a step from `status --json`."""
    import json

    doc = json.loads(cli("status", plan, "--json").stdout)
    step = next(s for p in doc["phases"] for s in p["steps"] if s["id"] == step_id)
    return step["status"], step


def running(pid: int) -> bool:
    """Alive and not a zombie left for its parent to reap."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextlib.contextmanager
def orphans_on(cluster, names: tuple[str, ...] = ("a", "b")) -> Iterator[dict[str, list[int]]]:
    """One 1000 MiB orphan on GPU 0 of each named node's sim; whatever a test left alive is killed after."""
    from eagle_console.sim import orphans

    pids = {n: orphans.leave_orphans(cluster.nodes[n].sim, count=1, mib=1000, gpus=[0]) for n in names}
    try:
        yield pids
    finally:
        for pid in (p for ps in pids.values() for p in ps):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
