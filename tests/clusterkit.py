"""A real local Ray cluster for tests/test_cluster_*.py: a head (node "a") and a second raylet (node
"b") on this machine, each with its own simulated node in EAGLE_CONSOLE_SIM, token authentication on.

One cluster per test session (`ray_cluster`); every port is picked free, so another cluster on this
machine (another test run) is left alone, and the teardown stops exactly the processes it started.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="Ray is not installed (pip install '.[cluster]')")
RAY_START_TIMEOUT_S = 90.0
GPUS = {"a": 2, "b": 3}
HEALTH_CHECK = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
                "RAY_health_check_failure_threshold": "3"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_flags() -> list[str]:
    """Every port a raylet and its agents open, chosen free: two raylets on one host must not collide."""
    flags = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port")
    return [f"{flag}={free_port()}" for flag in flags]


@dataclass
class RayNode:
    name: str
    sim: Path
    proc: subprocess.Popen
    log: Path

    def raylet_pid(self) -> int:
        import psutil

        for child in psutil.Process(self.proc.pid).children(recursive=True):
            if child.name() == "raylet":
                return child.pid
        raise LookupError(f"no raylet under ray start of node {self.name}")


@dataclass
class RayCluster:
    root: Path
    address: str  # the GCS "host:port": what [cluster] address names
    dashboard: str
    env: dict[str, str]
    nodes: dict[str, RayNode] = field(default_factory=dict)

    def start_node(self, name: str, head: bool) -> RayNode:
        from eagle_console.sim import gpustate

        sim = self.root / f"sim-{name}"
        gpustate.create_node(sim, gpus=GPUS[name])  # told apart by their count
        ray = str(Path(sys.executable).parent / "ray")
        argv = [ray, "start", "--block", "--num-cpus=1", "--node-ip-address=127.0.0.1",
                f'--resources={{"eagle-node:{name}": 1}}', *_port_flags()]
        if head:
            port = self.address.rpartition(":")[2]
            argv += ["--head", f"--port={port}", "--dashboard-host=127.0.0.1",
                     f"--dashboard-port={self.dashboard.rpartition(':')[2]}", f"--temp-dir={self.root / 't'}",
                     "--include-dashboard=true"]
        else:
            argv += [f"--address={self.address}"]
        log = self.root / f"ray-{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**self.env, "EAGLE_CONSOLE_SIM": str(sim)}, start_new_session=True)
        node = RayNode(name, sim, proc, log)
        self.nodes[name] = node
        deadline = time.monotonic() + RAY_START_TIMEOUT_S
        while b"block forever" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start of node {name} failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        return node

    def restart(self, name: str) -> None:
        """Start node `name` again after a test killed it (its old `ray start` is kept for the teardown)."""
        old = self.nodes.pop(name)
        self.nodes[f"{name}-killed-{old.proc.pid}"] = old
        self.start_node(name, head=False)
        self.wait_alive({name})

    def wait_alive(self, names: set[str], timeout: float = 60.0) -> None:
        from eagle_console.cluster.connect import cluster_nodes

        deadline = time.monotonic() + timeout
        while {n.name for n in cluster_nodes(self.address) if n.alive} < names:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nodes {names} not alive after {timeout:g}s")
            time.sleep(0.2)

    def stop(self) -> None:
        import psutil

        try:
            import ray

            ray.shutdown()
        except Exception:  # noqa: BLE001 - stopping the processes matters more
            pass
        ours: list[psutil.Process] = []
        for node in self.nodes.values():
            try:
                leader = psutil.Process(node.proc.pid)
                ours += [leader, *leader.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        # whatever left its `ray start` (workers, a job's driver, its action), by our temp dir in its
        # command line or its environment
        root = str(self.root)
        for p in psutil.process_iter(["pid", "cmdline", "environ"]):
            try:
                env = p.info["environ"] or {}
                if p.pid != os.getpid() and (root in " ".join(p.info["cmdline"] or ())
                                             or root in env.get("EAGLE_CONSOLE_SIM", "")):
                    ours.append(p)
            except (psutil.Error, TypeError):
                continue
        for p in ours:  # SIGTERM first: the GCS and raylets flush and close their sockets
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(ours, timeout=5)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)
        for node in self.nodes.values():
            node.proc.poll()
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster() -> RayCluster:
    root = Path(tempfile.mkdtemp(prefix="ecr-", dir="/tmp"))  # short: Ray's unix socket paths are limited
    token = secrets.token_hex(16)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0",
           # the GCS declares a silent raylet dead after ~1.5 s, not Ray's default of tens of seconds
           # (docs/cluster.md recommends the same on a real cluster)
           **HEALTH_CHECK}
    env.pop("RAY_ADDRESS", None)
    cluster = RayCluster(root, f"127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}", env)
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)  # this process is a client of it too
    try:
        cluster.start_node("a", head=True)
        cluster.start_node("b", head=False)
        cluster.wait_alive({"a", "b"})
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def ray_cluster():
    if not HAVE_RAY:
        pytest.skip("Ray is not installed")
    started = time.monotonic()
    cluster = start_cluster()
    print(f"\n[clusterkit] cluster up in {time.monotonic() - started:.1f}s at {cluster.address}")
    yield cluster
    cluster.stop()


def cluster_plan(tmp_path: Path, cluster: RayCluster, steps: str) -> Path:
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
