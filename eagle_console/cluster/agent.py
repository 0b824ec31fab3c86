"""NodeAgent: one small Ray actor per node that reads and kills on that node, returning plain dicts.

It runs inside a Ray worker on its node, whose environment is the raylet's: EAGLE_CONSOLE_SIM set for
`ray start` there names that node's simulated GPUs (unset: NVML). It reads and kills with what the console
uses locally (node/reading.py's GPU reading, node/holders.py's scan, targets and kill with node.kill's
protections), so a remote kill refuses exactly what a local one would.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from eagle_console.cluster import NAMESPACE, node_names, pin

AGENT_PREFIX = "eagle-node-agent:"


def refusals(holders: list) -> dict[str, str]:
    """pid (a JSON key) -> why node.kill refuses it on this node (PID 1, eagle-console processes, …)."""
    from eagle_console.node.kill import protection, refusal

    protected = protection(frozenset())
    return {str(h.pid): why for h in holders if (why := refusal(h, (), protected))}


def _tracked(tracked: list | None) -> list:
    """The console's tracked runs, as it sends them (plain dicts over the driver's JSON pipe)."""
    from eagle_console.node.procs import TrackedRun

    return [t if isinstance(t, TrackedRun) else TrackedRun(**t) for t in tracked or []]


class NodeGone(RuntimeError):
    """A node whose agent is gone and which the GCS lists no live raylet for: an agent started for it would
    wait on a node that is not there (see find_or_start)."""


class RayletGone(RuntimeError):
    """This agent's raylet has died: its node is out of the cluster, whatever the agent could still read."""


# The raylet's start time (/proc/PID/stat field 22) when this process first looked: its identity. A pid is
# reused once its process is reaped, and a suite or a busy node forks enough to wrap pid_max (32768 by
# default) in minutes: a new process at the dead raylet's pid passed the old test and the node read live.
_raylet_started: dict[str, str] = {}


def raylet_gone() -> str | None:
    """Why this worker's raylet is gone (exited, a zombie not yet reaped, killed and not yet dead, or its pid
    now another process's); None while it runs, or outside a Ray worker. A killed raylet's workers go on
    answering direct actor calls until Ray's own check stops them (a poll of the raylet's pid, which a zombie
    passes until `ray start` reaps it): seconds, more on a loaded machine, in which the node would read live.
    RAY_RAYLET_PID is in every Ray worker's environment (Ray 2.60 `_private/ray_constants.py`
    RAY_INTERNAL_FLAGS, read by `_private/process_watcher.py` get_raylet_pid, whose `_check_parent` guards
    against the pid's reuse too). The first look, from the agent's start (its raylet started it), records the
    raylet's start time."""
    pid = os.environ.get("RAY_RAYLET_PID", "")
    if not pid.isdigit():
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return f"its raylet (pid {pid}) has exited"
    except OSError:  # no /proc (not Linux): Ray's own check is all there is
        return None
    # Ray's own test, live or not, plus the zombie it misses; not the name: a raylet run under a profiler or
    # valgrind (Ray's RAY_RAYLET_* debugging options) has another, and a false "gone" would hide a live node
    fields = stat.rpartition(") ")[2].split()
    if fields[:1] in (["Z"], ["X"]):
        return f"its raylet (pid {pid}) has exited"
    started = fields[19] if len(fields) > 19 else ""  # field 22 of the whole line; fields[0] is field 3
    if _raylet_started.setdefault(pid, started) != started:
        return f"its raylet (pid {pid}) has exited (the pid is another process's now)"
    if _sigkill_pending(pid):
        return f"its raylet (pid {pid}) was killed (SIGKILL pending, state {fields[0]})"
    return None


SIGKILL_BIT = 1 << (9 - 1)  # /proc/PID/status signal masks: bit N-1 is signal N


def _sigkill_pending(pid: str) -> bool:
    """A SIGKILL was sent and not yet taken: the process is past saving but still there, in uninterruptible
    sleep (state D: a disk or page-in wait on a loaded machine, a frozen cgroup) until that wait ends. Seen in
    suite runs: a killed raylet still there 10 s later, its workers answering, the node read live. The kernel
    marks every thread of a process it SIGKILLs at once (signal.c complete_signal), so the masks show it."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & SIGKILL_BIT:
            return True
    return False


def _in_the_cluster(node: str) -> None:
    """Refuse to read, kill or answer for a run on a node whose raylet died: the asker takes the node as
    unreachable at once. A stop of a run (`stop_node_run`) is still carried out while the agent lives."""
    if why := raylet_gone():
        raise RayletGone(f"node {node}: {why}")


class NodeAgent:
    def __init__(self, name: str) -> None:
        self.name = name
        raylet_gone()  # its raylet's identity, taken now, while the raylet that started this worker runs

    def _sim(self) -> Path | None:
        value = os.environ.get("EAGLE_CONSOLE_SIM")
        return Path(value) if value else None

    def ping(self) -> dict[str, Any]:
        return {"name": self.name, "pid": os.getpid(), "host": socket.gethostname(),
                "sim": os.environ.get("EAGLE_CONSOLE_SIM")}

    def address(self) -> str:
        """The IP this node's raylet is reached at: what other nodes dial (rank 0's dist-init host)."""
        import ray

        here = ray.get_runtime_context().get_node_id()
        for n in ray.nodes():  # the raylet's own address (its --node-ip-address), not a guess from the routes
            if n["NodeID"] == here:
                return str(n["NodeManagerAddress"])
        return ray.util.get_node_ip_address()

    def interfaces(self) -> list[str]:
        """This node's network interfaces that are up (the multi-node preflight counts them)."""
        from eagle_console.sglang.noderunner import machine_interfaces

        return machine_interfaces()

    def path_exists(self, path: str) -> bool:
        return os.path.exists(path)

    def put_spec(self, data: dict[str, Any]) -> str:
        """A run's spec, into a private file on this node for the job about to start here (cluster/handoff.py)."""
        from eagle_console.cluster.handoff import put_spec

        return put_spec(data)

    def drop_spec(self, path: str) -> None:
        """A spec whose job was never submitted: removed again."""
        from eagle_console.cluster.handoff import drop_spec

        drop_spec(path)

    def node_run(self, job_id: str, with_log: bool = False) -> dict[str, Any]:
        """What its supervisor recorded here of the run of Ray job `job_id`, and whether it still runs
        (cluster/noderuns.py): the console's word on a run whose job the cluster forgot or failed."""
        from eagle_console.cluster.noderuns import look

        _in_the_cluster(self.name)  # as `read`: one verdict on the node, not "reads unreachable, run known"
        return look(job_id, with_log)

    def stop_node_run(self, job_id: str, grace: float) -> dict[str, Any]:
        """Stop that run's supervisor and action here (a rollback of a run whose job the cluster forgot)."""
        from eagle_console.cluster.noderuns import stop

        return stop(job_id, grace)

    def environ(self, keys: list[str]) -> dict[str, str]:
        """These variables of the raylet's environment (what a job started here inherits)."""
        return {k: os.environ[k] for k in keys if k in os.environ}

    def read(self, tracked: list | None = None) -> dict[str, Any]:
        """The node's `gpus --json` document (cli.md) with its holders, taken now."""
        _in_the_cluster(self.name)
        from eagle_console.node.reading import read_once
        from eagle_console.node.tracked import judged_here

        reading = read_once(self._sim(), judged_here(_tracked(tracked)))
        doc = reading.document()
        doc["holders"] = [h.to_dict() for h in reading.holders]
        doc["refused"] = refusals(reading.holders)  # what a kill here would refuse, for `K` to show greyed
        doc["sampled_at"] = time.time()
        return doc

    def kill(self, scope: str, match: list[str], grace: float, tracked: list | None = None,
             pids: list[int] | None = None, include_tracked: bool = False) -> dict[str, Any]:
        """Scan, choose (`pids` narrows it to what the operator ticked) and kill here; the record as a dict
        (the console journals it: the journal is one file on the console's machine)."""
        from eagle_console.node import holders as kills
        from eagle_console.node.tracked import judged_here

        _in_the_cluster(self.name)
        # the console's runs and rank sessions here are the tracked; whether their leaders run is judged here
        with kills.scan(self._sim(), tracked=judged_here(_tracked(tracked))) as found:
            # the console's hand-picked pids (scope "selected") are chosen among all holders, then narrowed
            chosen = kills.targets(found.holders, scope, match, pids=pids, include_tracked=include_tracked)
            holders = [h.to_dict() for h in found.holders]
            record = kills.kill(found, chosen.chosen, grace=grace, scope=scope, face="cli", journal=None)
        data = record._asdict()
        data["holders"] = holders
        return data


def _agent_name(node: str) -> str:
    from eagle_console import __version__

    # the version in the name: an agent left by an older eagle-console is not asked to run newer code
    return f"{AGENT_PREFIX}{node}@{__version__}"


def agent(name: str) -> Any:
    """The handle of node `name`'s agent, started there on first use (detached: it outlives this console,
    so the next console finds it warm; it dies with its node)."""
    return find_or_start(name)[0]


def find_or_start(name: str) -> tuple[Any, bool]:
    """Node `name`'s agent and whether this call started it: a first question to a new agent waits on a new
    Ray worker on that node (seconds on a loaded machine), which is not the node being unreachable."""
    import ray

    try:
        return ray.get_actor(_agent_name(name), namespace=NAMESPACE), False
    except ValueError:  # no such actor: never started, or gone with its node
        pass
    # The GCS ends a node's agent when it finds the node dead: a read that listed the node alive a moment
    # before came here, started an agent that could never run, and gave it the start's grace (15 s) while
    # the pane showed the node's last reading as live. A node no live raylet carries gets no new agent.
    if not any(n.get("Alive") and name in node_names(n.get("Resources") or {}) for n in ray.nodes()):
        raise NodeGone(f"node {name}'s agent is gone and no live raylet carries the node (it died or left)")
    actor = ray.remote(num_cpus=0, max_restarts=0)(NodeAgent)
    # get_if_exists: another console may start it between the lookup and here
    return actor.options(name=_agent_name(name), namespace=NAMESPACE, lifetime="detached",
                         get_if_exists=True, resources=pin(name)).remote(name), True
