"""Two hosts on one machine, for the cluster's faults (tests/test_cluster_faults.py, benchmarks/cluster_connect.py).

A host is a network namespace (`ip netns add`) joined to the other by a veth pair (10.77.0.1/24 and
10.77.0.2/24), with its own PID namespace and its own /tmp (a tmpfs): `unshare --pid --fork --mount-proc
--mount` run by `ip netns exec`. Its PID 1 is a small reaper; anything else runs on the host through
`nsenter` into that reaper's namespaces (`Host.argv`), so the head, the console and the CLI on host A share
A's /tmp (Ray's sockets live there) and see A's processes only. Killing the reaper ends the host: the kernel
kills every process of a PID namespace whose init dies.

The cluster is the product's (`start_local_cluster`), each node's `ray start` placed on its host
(`cluster.local.Placement`): head "a" on A, raylet "b" on B, token auth on, a simulated 8-GPU node each.
Files every host must see (the plan, the journal, the token, the sims) live under /var/tmp, not /tmp. A
checkout or a venv under /tmp (a clone in /tmp/x) is bound into each host's /tmp at the same path
(`kept_under_tmp`): hidden there, the hosts' Ray could not start (`Module MetricsHead failed to start`).

Faults: `kill_gcs` (the head's GCS, kill -9), `link(False)` / `link(True)` (the veth down and up again),
`kill_node` (a node's Ray processes, its steps spared) and `cluster.restart(name)` (the head too),
`restart_node`. Root and `ip netns` are needed: `skip_reason()` says why not.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

SUBNET = "10.77.0"
GPUS = 8
# the console's short deadlines, so a test does not wait Ray's own minute (cluster/link.py)
FAST = {"EAGLE_CONSOLE_RAY_CALL_S": "3", "EAGLE_CONSOLE_RAY_CONNECT_S": "20", "EAGLE_CONSOLE_RAY_RETRY_S": "3"}
# Ray's own health checks, as on a real cluster: a node is declared dead after 5 failed 3 s probes
# (`ray_config_def.h` health_check_period_ms 3000 / timeout 10000 / failure_threshold 5, Ray 2.60)
RAY_DEFAULT_HEALTH = {"RAY_health_check_period_ms": "3000", "RAY_health_check_timeout_ms": "10000",
                      "RAY_health_check_failure_threshold": "5"}
# PID 1 of a host: reaps whatever is reparented to it (Ray's workers, a step's orphans), ends on SIGTERM.
REAPER = ("import os, signal, sys, time\n"
          "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
          "while True:\n"
          "    try:\n        os.wait()\n"
          "    except ChildProcessError:\n        time.sleep(0.5)\n")


def skip_reason() -> str | None:
    """Why the two hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (ip netns, unshare, mount)"
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"ecprobe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass
class Host:
    name: str  # "a", "b"
    netns: str
    ip: str
    veth: str  # this host's end of the pair
    reaper: subprocess.Popen

    @property
    def init_pid(self) -> int:
        """The host's PID 1, as this machine's root namespace numbers it."""
        for child in psutil.Process(self.reaper.pid).children(recursive=True):
            return child.pid
        raise LookupError(f"host {self.name}: its init is gone")

    def argv(self, argv: list[str] | tuple[str, ...], cwd: str | None = None) -> list[str]:
        """`argv` run on this host: its network, PIDs and /tmp."""
        return ["nsenter", "-t", str(self.init_pid), "-p", "-m", "-n", f"--wd={cwd or os.getcwd()}", *argv]

    def run(self, argv: list[str], timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run on this host; past `timeout` the whole process group is killed (nsenter's child keeps it) and
        subprocess.TimeoutExpired raised, with what it wrote until then."""
        cmd = self.argv(argv)
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              text=True, env={**os.environ, **(env or {})}, start_new_session=True) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def link(self, up: bool) -> None:
        """This host's end of the veth down (nothing passes either way) or up again."""
        subprocess.run(["ip", "-n", self.netns, "link", "set", self.veth, "up" if up else "down"], check=True)


@dataclass
class TwoHosts:
    root: Path  # seen by both hosts (not /tmp): plans, journals, token, sims
    a: Host
    b: Host

    def cli(self, *argv: object, host: str = "a", timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`eagle-console ARGV` on a host."""
        h = self.a if host == "a" else self.b
        return h.run([sys.executable, "-m", "eagle_console", *map(str, argv)], timeout=timeout, env=env)

    def close(self) -> None:
        for h in (self.a, self.b):
            with contextlib.suppress(ProcessLookupError, LookupError, psutil.Error):
                os.kill(h.init_pid, signal.SIGKILL)  # every process of the host with it
            with contextlib.suppress(subprocess.TimeoutExpired):
                h.reaper.wait(10)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def kept_under_tmp() -> list[str]:
    """The top-level folders of /tmp that hold this checkout or the venv running the tests: each host mounts
    a tmpfs of its own over /tmp, and binds these back into it."""
    kept = set()
    for path in (Path(__file__).resolve().parent.parent, Path(sys.prefix).resolve()):
        with contextlib.suppress(ValueError):
            kept.add(path.relative_to("/tmp").parts[0])
    return sorted(kept)


def _host_tmp(outer: Path) -> str:
    """Shell: the real /tmp kept at `outer` (inside this host's mount namespace only), a tmpfs of its own
    over /tmp, and `kept_under_tmp()` bound back from the real one."""
    steps = [f"mount --bind /tmp {shlex.quote(str(outer))}", "mount -t tmpfs -o size=256m,mode=1777 tmpfs /tmp"]
    for name in kept_under_tmp():
        inner, real = shlex.quote(f"/tmp/{name}"), shlex.quote(str(outer / name))
        steps.append(f"mkdir -p {inner} && mount --bind {real} {inner}")
    return " && ".join(steps)


def make_hosts() -> TwoHosts:
    tag = uuid.uuid4().hex[:6]
    root = Path(tempfile.mkdtemp(prefix="ecnet-", dir="/var/tmp"))
    hosts: dict[str, Host] = {}
    try:
        va, vb = f"eca{tag}", f"ecb{tag}"
        for n, (name, veth) in enumerate((("a", va), ("b", vb)), start=1):
            ns = f"ec{name}-{tag}"
            outer = root / f"outer-tmp-{name}"  # where this host keeps the real /tmp in sight
            outer.mkdir()
            subprocess.run(["ip", "netns", "add", ns], check=True)
            # a host's /tmp is its own; `exec` keeps the reaper PID 1 of the new PID namespace
            reaper = subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--pid", "--fork", "--mount-proc", "--mount",
                 "--propagation", "private", "sh", "-c",
                 f'{_host_tmp(outer)} && exec "{sys.executable}" -c "$0"', REAPER],
                # its stderr to a file: unshare says "sigprocmask unblock failed" as the host ends, every time
                stdin=subprocess.DEVNULL, stderr=open(root / f"host-{name}.err", "wb"), start_new_session=True)
            hosts[name] = Host(name, ns, f"{SUBNET}.{n}", veth, reaper)
        subprocess.run(["ip", "link", "add", va, "type", "veth", "peer", "name", vb], check=True)
        for h in hosts.values():
            subprocess.run(["ip", "link", "set", h.veth, "netns", h.netns], check=True)
            subprocess.run(["ip", "-n", h.netns, "addr", "add", f"{h.ip}/24", "dev", h.veth], check=True)
            subprocess.run(["ip", "-n", h.netns, "link", "set", h.veth, "up"], check=True)
            subprocess.run(["ip", "-n", h.netns, "link", "set", "lo", "up"], check=True)
        deadline = time.monotonic() + 10
        for h in hosts.values():  # the reaper is up once unshare forked it
            while not psutil.Process(h.reaper.pid).children():
                if h.reaper.poll() is not None or time.monotonic() > deadline:
                    why = (root / f"host-{h.name}.err").read_text(errors="replace").strip()
                    raise RuntimeError(f"host {h.name} did not start (unshare exited {h.reaper.returncode}): {why}")
                time.sleep(0.05)
    except BaseException:
        TwoHosts(root, *hosts.values()).close() if len(hosts) == 2 else _undo(hosts, root)
        raise
    return TwoHosts(root, hosts["a"], hosts["b"])


def _undo(hosts: dict[str, Host], root: Path) -> None:
    for h in hosts.values():
        h.reaper.kill()
        subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def start_two_host_cluster(net: TwoHosts, extra_env: dict[str, str] | None = None):
    """Head "a" on host A, raylet "b" on host B (the product's `start_local_cluster`), 8 sim GPUs each."""
    from eagle_console.cluster.local import Placement, start_local_cluster
    from eagle_console.sim import gpustate

    sims = {}
    for name in ("a", "b"):
        sims[name] = net.root / f"sim-{name}"
        gpustate.create_node(sims[name], gpus=GPUS)
    places = {h.name: Placement(h.ip, tuple(h.argv([]))) for h in (net.a, net.b)}
    from clusterkit import start_retrying  # a port taken during the start: again

    return start_retrying(lambda: start_local_cluster(net.root / "ray", sims, extra_env, placement=places))


def kill_gcs(cluster) -> int:
    """kill -9 the head's GCS server; returns its pid. Every node's Ray processes are left running, at the
    lowest CPU priority (`spare_the_cpu`)."""
    head = next(iter(cluster.nodes.values()))
    for p in psutil.Process(head.proc.pid).children(recursive=True):
        if p.name() == "gcs_server":
            p.kill()
            spare_the_cpu(cluster, list(cluster.nodes))
            return p.pid
    raise LookupError("no gcs_server under the head's ray start")


def kill_node(cluster, name: str) -> None:
    """kill -9 node `name`'s `ray start` and every Ray process under it (its GCS and dashboard too, for the
    head). A step's supervisor and action under it are spared: they run in a session of their own (Ray 2.60
    `_exec_entrypoint`) and outlive the raylet on a real node too."""
    for p in ray_processes(cluster, name):
        with contextlib.suppress(psutil.Error):
            p.kill()
    cluster.nodes[name].proc.wait(10)
    if name == next(iter(cluster.nodes)):  # the head: the other nodes' Ray processes lose their GCS
        spare_the_cpu(cluster, [n for n in cluster.nodes if n != name])


def ray_processes(cluster, name: str) -> list[psutil.Process]:
    """Node `name`'s Ray processes: its `ray start` and what runs under it, but not a step's supervisor or
    action (eagle_console, sleep, sh), which live on without Ray."""
    leader = psutil.Process(cluster.nodes[name].proc.pid)
    found = []
    for p in [*leader.children(recursive=True), leader]:
        with contextlib.suppress(psutil.Error):
            if "eagle_console" not in " ".join(p.cmdline()) and p.name() not in ("sleep", "sh"):
                found.append(p)
    return found


def spare_the_cpu(cluster, names: list[str]) -> None:
    """Nice 19 for the Ray processes of nodes whose GCS just died. In Ray 2.60 each process that joined as a
    driver (the dashboard agent of every node, a job's driver) then busy-loops until its raylet gives up,
    60 s later: `listen_error_messages` (ray/_private/worker.py:2467-2474) calls the error subscriber's
    poll(), which returns at once with nothing while the GCS is down, and loops again. The test measures
    the console through those minutes, not Ray's spin; at nice 19 the spin takes only CPU nobody else
    wants, instead of a core from the tests beside it (docs/performance.md, "The test suite on 2 cores").
    With the scheduler's autogroups (kernel.sched_autogroup_enabled, on here and on most desktops) a task's
    nice only weighs inside its session, and `ray start` has a session of its own: its group is niced too
    (sched(7), "The autogroup feature"), or the spinning agents kept a whole core (53 CPU-s a suite run)."""
    for name in names:
        if name in cluster.nodes and cluster.nodes[name].proc.poll() is None:
            for p in ray_processes(cluster, name):
                with contextlib.suppress(psutil.Error):
                    p.nice(19)
                with contextlib.suppress(OSError):
                    Path(f"/proc/{p.pid}/autogroup").write_text("19")


def restart_node(cluster, name: str) -> None:
    """kill -9 node `name`'s `ray start` and everything under it, then start it again (a raylet the GCS
    declared dead while its link was cut exits, or is refused, when it comes back: Ray 2.60)."""
    leader = psutil.Process(cluster.nodes[name].proc.pid)
    for p in [*leader.children(recursive=True), leader]:
        with contextlib.suppress(psutil.Error):
            p.kill()
    cluster.nodes[name].proc.wait(10)
    cluster.restart(name)


@contextlib.contextmanager
def two_host_cluster(extra_env: dict[str, str] | None = None) -> Iterator[tuple[TwoHosts, object]]:
    """Two hosts and a cluster on them (head on A, raylet on B), stopped and taken down on the way out."""
    with two_hosts() as net:
        started = time.monotonic()
        cluster = start_two_host_cluster(net, extra_env)
        print(f"\n[netnskit] two hosts, cluster up in {time.monotonic() - started:.1f}s at {cluster.address}")
        try:
            yield net, cluster
        finally:
            cluster.stop()


@contextlib.contextmanager
def two_hosts() -> Iterator[TwoHosts]:
    net = make_hosts()
    try:
        yield net
    finally:
        net.close()
