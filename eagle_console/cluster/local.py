"""A local Ray cluster on this machine: a head for the first node, one raylet per further node (demo, tests).

Each raylet is a `ray start --block` whose environment carries its node's EAGLE_CONSOLE_SIM (Ray workers
inherit it: the node's agent and jobs see that node's simulated GPUs) and the `eagle-node:NAME` resource.
Token authentication is on (a token generated here, kept in `root/ray-auth-token`, 0600), the dashboard on
127.0.0.1, and every port is picked free, so another cluster on this machine is left alone. `stop()` stops
exactly the processes it started (never `ray stop`, which would stop every cluster of this user), the way
Ray takes a node down: each node's `ray start` is asked to, the other nodes before the head.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from eagle_console.cluster import node_resource
from eagle_console.cluster.noderuns import STATE_ENV
from eagle_console.ports import free_port
from eagle_console.processes import start_of

RAY_START_TIMEOUT_S = 90.0
OBJECT_STORE_BYTES = 100 * 1000 * 1000  # Ray's minimum is 75 MiB
TOKEN_FILE = "ray-auth-token"
# The GCS declares a silent raylet dead after ~1.5 s, not Ray's default of tens of seconds
# (docs/cluster.md recommends the same on a real cluster).
HEALTH_CHECK = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
                "RAY_health_check_failure_threshold": "3"}
# Ray's Prometheus endpoints answer anyone, without the token (node IPs, resources, session name), and
# Ray has no option for their bind address: each binds loopback only when the node's IP is a loopback
# address (ray 2.60.0: dashboard/modules/reporter/reporter_agent.py `address=get_localhost_ip() if
# is_localhost(self._ip) else ""`, the same test in dashboard/head.py `_setup_metrics` and
# autoscaler/_private/monitor.py), and `ray start --node-ip-address=127.0.0.1` is turned into the machine's
# routable IP (scripts/scripts.py → services.resolve_ip_for_localhost). So a local cluster exports none it
# can do without: no per-node metrics exporter (the raylet starts its dashboard agent with
# --disable-metrics-collection), no autoscaler monitor on the head (`--no-monitor`: its metrics server, and
# a fixed cluster has nothing to autoscale). The head's dashboard keeps its own small one on all interfaces
# (its request counters): on a free port (DASHBOARD_METRIC_PORT, dashboard/consts.py; fixed 44227 by default,
# where two clusters on one machine collide). docs/cluster.md, Security.
NO_METRICS_EXPORT = {"RAY_enable_metrics_collection": "0"}
# On SIGTERM a `ray start --block` first asks the GCS to drain its node and waits, up to 30 s, for the raylet
# to end once it holds no worker lease (ray 2.60.0 `_private/node.py` `_drain_node_before_shutdown`, for
# Serve's proxies), then stops its node's processes. A local cluster serves nothing, and its nodes hold the
# console's agents' leases to the end: no drain, the node's processes are stopped at once.
NO_DRAIN = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
STOP_GRACE_S = 5.0  # for each step of stop(): the other nodes, the head, what is left after them
# Every port a raylet and its agents open: two raylets on one host must not collide.
_PORT_FLAGS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
               "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port")


def auth_env(token_path: Path) -> dict[str, str]:
    """What a client of the cluster (this process, a CLI, a step) needs in its environment."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}


@dataclass(frozen=True)
class Placement:
    """Where a node's `ray start` runs when not simply here: on another host (tests/netnskit.py: network,
    PID and mount namespaces), reached at `ip`. `prefix` is the argv that runs a command on that host."""
    ip: str
    prefix: tuple[str, ...] = ()


@dataclass
class RayNode:
    name: str
    sim: Path | None
    proc: subprocess.Popen
    log: Path
    started: str | None = None  # the `ray start`'s (or its host prefix's) start: its session is the node's

    def ray_start(self):  # noqa: ANN201 (psutil.Process | None; psutil is imported late)
        """This node's live `ray start --block`: its own process, or the one under its host's prefix."""
        import psutil

        if self.proc.poll() is not None:
            return None
        try:
            top = psutil.Process(self.proc.pid)
            for p in (top, *top.children(recursive=True)):
                argv = p.cmdline()
                if len(argv) > 2 and os.path.basename(argv[1]) == "ray" and argv[2] == "start":
                    return p
        except psutil.Error:
            pass
        return None

    def raylet_pid(self) -> int:
        import psutil

        for child in psutil.Process(self.proc.pid).children(recursive=True):
            if child.name() == "raylet":
                return child.pid
        raise LookupError(f"no raylet under ray start of node {self.name}")


@dataclass
class LocalCluster:
    root: Path  # the token and the `ray start` logs
    temp: Path  # Ray's --temp-dir: short (Ray's unix socket paths are limited), inside a 0700 folder of ours
    address: str  # the GCS "host:port": what [cluster] address names
    dashboard: str
    env: dict[str, str]  # the environment of every `ray start` (a node adds its EAGLE_CONSOLE_SIM)
    nodes: dict[str, RayNode] = field(default_factory=dict)
    placement: dict[str, Placement] = field(default_factory=dict)  # node name -> its host, when not here
    _stopped: bool = False
    # what this process's own Ray auth variables were before it became this cluster's client: put back on
    # stop, so a second cluster started and stopped in the same process (tests) does not leave its removed
    # token file named for the first one's clients
    _env_before: dict[str, str | None] = field(default_factory=dict)

    @property
    def token_path(self) -> Path:
        return self.root / TOKEN_FILE

    def start_node(self, name: str, sim: Path | None, head: bool) -> RayNode:
        ray = str(Path(sys.executable).parent / "ray")
        # a small object store: nothing large travels here, and a container's 64 MiB /dev/shm (Docker's
        # default) then only makes Ray fall back to /tmp with a warning instead of sizing it from RAM
        place = self.placement.get(name, Placement("127.0.0.1"))
        # no log monitor: it streams workers' output to drivers that ask for it, and ours join with
        # log_to_driver=False (cluster/driver.py); a job's log is its supervisor's file, not this stream
        argv = [*place.prefix, ray, "start", "--block", "--num-cpus=1", f"--node-ip-address={place.ip}",
                f"--object-store-memory={OBJECT_STORE_BYTES}", "--include-log-monitor=false",
                f'--resources={{"{node_resource(name)}": 1}}', *(f"{f}={free_port()}" for f in _PORT_FLAGS)]
        if head:
            argv += ["--head", f"--port={self.address.rpartition(':')[2]}", "--dashboard-host=127.0.0.1",
                     f"--dashboard-port={self.dashboard.rpartition(':')[2]}", f"--temp-dir={self.temp}",
                     f"--ray-client-server-port={free_port()}", "--include-dashboard=true", "--no-monitor"]
        else:
            argv += [f"--address={self.address}"]
        log = self.root / f"ray-{name}.log"
        env = {**self.env, **({"EAGLE_CONSOLE_SIM": str(sim)} if sim else {})}
        if head:
            env["DASHBOARD_METRIC_PORT"] = str(free_port())
        env.setdefault(STATE_ENV, str(self.root / f"node-{name}"))  # each node's own runs' records (noderuns.py)
        if not sim:
            env.pop("EAGLE_CONSOLE_SIM", None)
        with open(log, "wb") as out, signals_held():  # started and known to stop(), or neither
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)  # Ctrl+C in our terminal is ours to handle
            node = RayNode(name, sim, proc, log, start_of(proc.pid))
            self.nodes[name] = node
        deadline = time.monotonic() + RAY_START_TIMEOUT_S
        while b"block forever" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start of node {name} failed:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        return node

    def restart(self, name: str) -> None:
        """Start node `name` again after it was killed (its old `ray start` is kept for stop()). The head
        comes back on its address and token: a new cluster there, which knows none of the old jobs."""
        head = next(iter(self.nodes)) == name
        old = self.nodes.pop(name)
        self.nodes = {**({name: old} if head else {}), **self.nodes}  # the head stays first (on_head)
        self.start_node(name, old.sim, head=head)
        self.nodes[f"{name}-killed-{old.proc.pid}"] = old
        self.wait_alive({name})

    def on_head(self, argv: list[str]) -> list[str]:
        """`argv` run where the head is (its host's namespaces when placed)."""
        head = next(iter(self.nodes.values())).name if self.nodes else ""
        return [*self.placement.get(head, Placement("127.0.0.1")).prefix, *argv]

    def wait_alive(self, names: set[str], timeout: float = 60.0) -> None:
        if self.placement:  # this process may not reach the head's host: asked from there
            done = subprocess.run(self.on_head([sys.executable, "-m", "eagle_console.cluster.local", "--wait-alive",
                                                self.address, *sorted(names), f"--timeout={timeout}"]),
                                  capture_output=True, text=True, env=self.env)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip()[-2000:] or f"nodes {sorted(names)} not alive")
            return
        wait_alive(self.address, names, timeout)

    def pids(self) -> list[int]:
        """Every live process this cluster started: the `ray start`s, their descendants, and whatever runs
        with our temp dir in its command line (a worker that outlived its raylet)."""
        return [p.pid for p in self._processes()]

    def _processes(self) -> list:
        import psutil

        ours: dict[int, psutil.Process] = {}
        for node in self.nodes.values():
            try:
                leader = psutil.Process(node.proc.pid)
                for p in (leader, *leader.children(recursive=True)):
                    ours[p.pid] = p
            except psutil.NoSuchProcess:
                pass
        temp = str(self.temp)
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if p.pid != os.getpid() and temp in " ".join(p.info["cmdline"] or ()):
                    ours.setdefault(p.pid, p)
            except (psutil.Error, TypeError):
                continue
        return list(ours.values())

    def stop(self) -> list:  # psutil.Process: psutil is imported late
        """Stop what this cluster started; idempotent. Each node's `ray start` stops its node's processes on
        SIGTERM (Ray's own order, the raylet first): the other nodes first, then the head, as nodes leave a
        running cluster; whatever is left after them gets SIGTERM and then SIGKILL. SIGTERM to every process
        at once, as this did, left the raylets and the GCS waiting on each other (none gone 15 s later): each
        stop ended in SIGKILL after its 5 s grace. Returns the processes that needed SIGKILL."""
        import psutil

        from eagle_console.processes import session_members, terminate_and_wait, terminate_then_kill

        if self._stopped:
            return []
        self._stopped = True
        try:
            import ray

            ray.shutdown()  # our own driver connection, if any: no reconnect attempts after the GCS is gone
        except Exception:  # noqa: BLE001 - stopping the processes matters more
            pass
        procs = self._processes()
        starts = [node.ray_start() for node in self.nodes.values()]  # the head's first
        for step in ([p for p in starts[1:] if p], [p for p in starts[:1] if p]):
            if step:
                terminate_and_wait(step, STOP_GRACE_S)
        _gone, left = psutil.wait_procs(procs, timeout=STOP_GRACE_S if any(starts) else 0)
        killed = terminate_then_kill(left, STOP_GRACE_S)
        for _ in range(3):  # started after the first look (a stop early in a start): each node's session's
            late = [p for node in self.nodes.values() if node.started
                    for p in session_members(node.proc.pid, leader_start=node.started)]
            if not late:
                break
            killed += terminate_then_kill(late, STOP_GRACE_S)
        for node in self.nodes.values():
            node.proc.poll()
        shutil.rmtree(self.temp.parent, ignore_errors=True)  # the private folder around Ray's temp dir
        ours = auth_env(self.token_path)
        for key, before in self._env_before.items():
            if os.environ.get(key) == ours.get(key):  # not changed since by another cluster
                if before is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = before
        return killed

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


@contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl+C, SIGTERM or SIGHUP (the demo's: they end it through `stop`) held while a node's `ray start`
    is spawned and recorded, then handled as they would have been: one landing between the two left a
    node running that stop() did not know of. Only where Python handles them (the main thread; a signal
    ignored or at its default is left so)."""
    import signal
    import threading

    held: list[tuple[int, object]] = []
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            handler = signal.getsignal(sig)
            if callable(handler):
                before[sig] = handler
                signal.signal(sig, lambda signum, frame: held.append((signum, frame)))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if held:
            signum, frame = held[0]
            before[signum](signum, frame)


def wait_alive(address: str, names: set[str], timeout: float = 60.0) -> None:
    from eagle_console.cluster.connect import ClusterError, cluster_nodes

    deadline = time.monotonic() + timeout
    while True:
        try:
            if {n.name for n in cluster_nodes(address) if n.alive} >= names:
                return
        except ClusterError:
            pass  # the head still starting
        if time.monotonic() > deadline:
            raise RuntimeError(f"nodes {sorted(names)} not alive after {timeout:g}s")
        time.sleep(0.2)


def private_ray_temp() -> Path:
    """Ray's temp dir for a local cluster, inside a new folder of ours alone (0700).

    Ray makes its temp dir and its session, logs and sockets folders mode 0777 whatever the umask (ray
    2.60, `ray/_common/utils.py` try_to_create_directory → try_make_directory_shared, called from
    `ray/_private/node.py`), and writes its logs 0644: a job's driver log, every worker's output, open to
    every local user, and its files deletable by any of them. A temp dir of Ray's own cannot be 0700, so the
    folder around it is: nobody else can reach anything inside. It stays in /tmp, short: Ray's unix sockets
    live under it and a socket path is limited to 107 bytes (`validate_socket_filepath`), which a state dir
    deep in a home directory would pass."""
    from eagle_console.statedir import DIR_MODE, tighten

    private = Path(tempfile.mkdtemp(prefix="ecr-", dir="/tmp"))  # 0700 and ours (mkdtemp), unguessable
    tighten(private, DIR_MODE)
    return private / "ray"


def start_local_cluster(root: str | os.PathLike[str], nodes: Mapping[str, str | os.PathLike[str] | None],
                        extra_env: Mapping[str, str] | None = None, *,
                        placement: Mapping[str, Placement] | None = None) -> LocalCluster:
    """Start a head for the first of `nodes` (name → its sim dir, None: NVML) and a raylet per other one.
    `placement`: a node's `ray start` on another host, at its IP (tests/netnskit.py); default here, 127.0.0.1.

    This process becomes a client of it (RAY_AUTH_MODE / RAY_AUTH_TOKEN_PATH set in os.environ, so what it
    starts inherits them). Stopped again on an exception or Ctrl+C during the start, and at exit."""
    from eagle_console.pyenv import own_process_env
    from eagle_console.statedir import write_private

    if not nodes:
        raise ValueError("a local cluster needs at least one node")
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    token_path = root / TOKEN_FILE
    token_path.unlink(missing_ok=True)
    write_private(token_path, secrets.token_hex(32))
    env = own_process_env(os.environ)  # a source checkout: the nodes' workers and jobs import this package
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_AUTH_TOKEN", None)  # it would win over the token file
    # one dict, later keys winning: `extra_env` may override the health check (keywords would clash)
    env.update({"RAY_USAGE_STATS_ENABLED": "0", **auth_env(token_path), **HEALTH_CHECK, **NO_METRICS_EXPORT,
                **NO_DRAIN, **(extra_env or {})})
    temp = private_ray_temp()
    places = dict(placement or {})
    head_ip = places.get(next(iter(nodes)), Placement("127.0.0.1")).ip
    cluster = LocalCluster(root, temp, f"{head_ip}:{free_port()}", f"http://127.0.0.1:{free_port()}", env,
                           placement=places)
    cluster._env_before = {k: os.environ.get(k) for k in auth_env(token_path)}
    os.environ.pop("RAY_AUTH_TOKEN", None)
    os.environ.update(auth_env(token_path))  # this process is a client of it too
    try:
        for i, (name, sim) in enumerate(nodes.items()):
            cluster.start_node(name, Path(sim) if sim else None, head=i == 0)
        cluster.wait_alive(set(nodes))
    except BaseException:
        cluster.stop()
        raise
    atexit.register(cluster.stop)
    return cluster


def main(argv: list[str] | None = None) -> int:
    """`python -m eagle_console.cluster.local --wait-alive ADDRESS NAME...`: run on a placed head's host."""
    import argparse

    ap = argparse.ArgumentParser(prog="eagle_console.cluster.local")
    ap.add_argument("--wait-alive", required=True, metavar="ADDRESS")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    try:
        wait_alive(args.wait_alive, set(args.names), args.timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
