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
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

if TYPE_CHECKING:
    from eagle_console.cluster.local import LocalCluster

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
        cluster = start_retrying(lambda: start_local_cluster(root, sims))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    forget_ray_token()
    return cluster


def forget_ray_token() -> None:
    """This process's Ray keeps the first token it read for its life (`AuthenticationTokenLoader`, ray 2.60;
    Ray's own tests reset it between clusters: ray/_private/authentication_test_utils.py). Each cluster has
    a token of its own: a test's in-process Ray client (JobSubmissionClient) after a second cluster of the
    session was refused, "InvalidAuthToken" (test_cluster_console after test_cluster_node_faults)."""
    import sys

    if "ray._raylet" in sys.modules:  # nothing read yet otherwise
        sys.modules["ray._raylet"].AuthenticationTokenLoader.instance().reset_cache()


# A free port is picked by a bind test and closed again (eagle_console/ports.py): another process, or a
# second pick of the same start, can have it before Ray binds it. `ray start` then fails with one of these.
PORT_TAKEN = ("address already in use", "is trying to use a port number")
# `ray start` gives a raylet a fixed 30 s to appear in the GCS (ray/_private/node.py, 2.60: not settable).
# The suite's first minute (every worker importing, the `ray` and a `netns` group each starting a cluster)
# once kept both clusters' node b from registering in time (.ci/run of 9599733: 4 errors at setup).
OVERLOADED = ("timed out during startup",)


def start_retrying(start, attempts: int = 3):
    """`start()` of a local cluster, again when it failed only because a port it picked was taken meanwhile
    (the product stops what it started first; ports.py: "callers that can retry do"), or because a node's
    raylet missed Ray's fixed registration wait on a loaded machine."""
    for attempt in range(attempts):
        try:
            return start()
        except RuntimeError as exc:
            if attempt + 1 == attempts or not any(m in str(exc) for m in PORT_TAKEN + OVERLOADED):
                raise
            print(f"[clusterkit] the start failed (a port taken, or Ray overloaded), again: {str(exc)[-300:]}")


_SHARED: list = []  # the session's cluster while it runs (at most one)


@pytest.fixture
def ray_cluster():
    """The session's one cluster, started by the first test that needs it and stopped after the last of a run
    of such tests (pytest_runtest_teardown below). A session fixture lived until the session ended: under
    xdist the `ray` group's worker kept its two idle nodes running (~35 CPU-s a suite run) long after the
    group was done."""
    if not HAVE_RAY:
        pytest.skip("Ray is not installed")
    if not _SHARED:
        started = time.monotonic()
        _SHARED.append(start_cluster())
        print(f"\n[clusterkit] cluster up in {time.monotonic() - started:.1f}s at {_SHARED[0].address}")
    return _SHARED[0]


def _stop_kept_drivers() -> None:
    """Before their cluster: a kept driver whose GCS is gone spins in Ray's error-listener thread at a full core
    until its next probe finds the port refused (up to 1 s, cluster/driverserve.py; 5 s before), while the rest of the suite
    runs; a test after this gets a fresh driver, as after any driver's end."""
    from eagle_console.cluster.keptdriver import stop_kept

    if RUNTIME is not None:
        stop_kept(RUNTIME / "eagle-console")


def stop_shared_cluster() -> None:
    while _SHARED:
        cluster = _SHARED.pop()
        _stop_kept_drivers()
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)


def take_shared_cluster(cluster: LocalCluster) -> LocalCluster:
    """`cluster` (the session's, from `ray_cluster`) is the caller's now, to stop itself: a test of the stop
    takes the cluster the `ray` group's tests used instead of starting one more (~10 CPU-s); it runs last in
    the group (file order), and a test after it that asks for `ray_cluster` gets a new one. The session's kept
    drivers are stopped first, as stop_shared_cluster does."""
    _SHARED.remove(cluster)
    _stop_kept_drivers()
    return cluster


@pytest.hookimpl(trylast=True)  # after the item's own fixtures are torn down
def pytest_runtest_teardown(item, nextitem) -> None:
    """The next test of this process does not use the cluster (or there is none): stop it now. The `ray`
    group's tests run one after another on one worker (tests/conftest.py), so this stops it once there; a
    serial run starts it again if a later file needs it."""
    if _SHARED and "ray_cluster" in getattr(item, "fixturenames", ()) and (
            nextitem is None or "ray_cluster" not in getattr(nextitem, "fixturenames", ())):
        stop_shared_cluster()


def pytest_sessionfinish(session) -> None:
    stop_shared_cluster()


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


def cli(*argv: object, timeout: float = 120, env: dict[str, str] | None = None,
        process: bool = False) -> subprocess.CompletedProcess:
    """`eagle-console ARGV` as the operator types it. Run in this process (the CLI's own `main`, its output
    captured) unless `env` is given, which only a process of its own reads at its start (cluster/link.py's
    deadlines), or `process`; a test of the CLI *as a process* (killed under `run --wait`) starts one itself.

    Why in this process: a CLI process asking the cluster starts a Ray driver of its own (cluster/driver.py:
    `import ray` and `ray.init`, ~1 s of CPU each), and a test asks dozens of times, polling a node's log;
    here every call reuses this process's one driver per address, as the console does."""
    args = [str(a) for a in argv]
    if env or process:
        return subprocess.run([sys.executable, "-m", "eagle_console", *args], capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, **(env or {})})
    return cli_here(args, timeout)


_cli_lock = threading.Lock()


def cli_here(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """`main(args)` with stdout and stderr captured; a call past `timeout` raises subprocess.TimeoutExpired (its
    thread is left to finish). This process is marked an eagle-console process only while it runs, as the
    CLI's own process would be (node/selfmark.py): after it, a kill's scan sees this process as before."""
    from eagle_console.cli import main
    from eagle_console.node import selfmark

    done: dict[str, object] = {}
    out, err = io.StringIO(), io.StringIO()

    def call() -> None:
        marked = selfmark.CONSOLE in selfmark._held
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    done["rc"] = main(args)
                except SystemExit as exc:  # argparse's usage errors
                    done["rc"] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except BaseException as exc:  # EAGLE_CONSOLE_DEBUG=1 lets main() raise: the test sees it
            done["raised"] = exc
        finally:
            if not marked and selfmark.CONSOLE in selfmark._held:
                os.close(selfmark._held.pop(selfmark.CONSOLE))

    with _cli_lock:  # one at a time: sys.stdout is this process's
        worker = threading.Thread(target=call, name=f"cli {' '.join(args[:2])}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise subprocess.TimeoutExpired(["eagle-console", *args], timeout, out.getvalue(), err.getvalue())
    if "raised" in done:
        raise done["raised"]  # type: ignore[misc]
    return subprocess.CompletedProcess(["eagle-console", *args], int(done["rc"]), out.getvalue(), err.getvalue())


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


def agent_state(cluster, node: str) -> str:
    """For a failure message: which process answers as `node`'s agent, the raylet it names, its parent, and
    every raylet on this machine."""
    from eagle_console.cluster.connect import ask_agent

    raylets = sorted(p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "raylet")
    try:
        ping = ask_agent(cluster.address, node, "ping", timeout=5)
        env = ask_agent(cluster.address, node, "environ", ["RAY_RAYLET_PID"], timeout=5)
    except Exception as exc:  # noqa: BLE001 - a diagnostic: whatever it was is the answer
        return f"agent of {node}: {type(exc).__name__}: {str(exc)[:200]}; raylets {raylets}"
    try:
        ppid = psutil.Process(ping["pid"]).ppid()
        parent = f"{ppid} {psutil.Process(ppid).name()}"
    except psutil.Error as exc:
        parent = type(exc).__name__
    return (f"agent of {node}: pid {ping['pid']}, RAY_RAYLET_PID {env.get('RAY_RAYLET_PID')}, parent {parent}; "
            f"raylets {raylets}")


def pid_state(pid: int) -> str:
    """For a failure message: what became of a process the test killed (a SIGKILL not yet taken: `disk-sleep`)."""
    try:
        proc = psutil.Process(pid)
        return f"pid {pid} {proc.name()} {proc.status()}"
    except psutil.NoSuchProcess:
        return f"pid {pid} gone"
