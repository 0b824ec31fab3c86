"""RayRunner: the NodeRunner of multi-node SGLang (sglang/noderunner.py) on a Ray cluster.

Questions about a node (its address, interfaces, whether a path exists, the IFNAME variables its raylet
has) go to that node's NodeAgent actor. A rank is a Ray job pinned to its node (`entrypoint_resources=
pin(node)`) whose entrypoint is `cluster.rank_session` (its argv and env in a private file on the node:
cluster/handoff.py): the rank in a session of its own, stopped as a whole
(its schedulers outlive a dead launcher). `poll` reads the job's status and copies its log into the rank's
log file here, as cluster/jobs.py does for a step; `stop` is `stop_job`, then waits for the job to end.
A rank's environment is its raylet's plus the plan's `[env]`/step `env` (the keys the engine names in
EAGLE_CONSOLE_RANK_ENV), never the console machine's whole environment: that is another machine's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eagle_console.cluster.job_events import copy_job_log, split_log, whole_lines
from eagle_console.cluster.jobs import STOP_EXTRA_S, submit_with_spec
from eagle_console.sglang.multinode import IFNAME_VARS
from eagle_console.sglang.noderunner import CLUSTER_ENV, RANK_ENV, NodeError, RankProcess

AGENT_ANSWER_S = 30.0  # an agent's first call starts its actor on the node: seconds on a busy machine
POLL_EVERY_S = 1.0  # a job's status and log are asked at most this often (they are HTTP calls to the head)
# Never forwarded to a rank: the node's own simulated GPUs, and our import path marker.
NOT_FORWARDED = ("EAGLE_CONSOLE_SIM", "EAGLE_CONSOLE_OWN_PYTHONPATH")


class RayRunner:
    def __init__(self, address: str, forward_env: Mapping[str, str] | None = None) -> None:
        self.cluster = address
        self.forward = {k: v for k, v in (forward_env or {}).items() if k not in NOT_FORWARDED}
        self._known: set[str] = set()
        self._asked: dict[str, float] = {}  # job id -> when poll last asked Ray
        self._ended: dict[str, int] = {}  # job id -> exit code, once terminal
        self._sessions: dict[str, dict[str, Any]] = {}  # job id -> the rank's `proc` event, once seen
        self.problem: str | None = None  # NodeRunner.problem: the last ask about a rank failed, and why

    # -- questions about a node, answered by its agent ------------------------------------------------------

    def _ask(self, node: str, method: str, *args: Any) -> Any:
        from eagle_console.cluster.connect import ClusterError, RemoteError, ask_agent, unknown_nodes

        try:
            if node not in self._known:
                if unknown_nodes(self.cluster, [node]):
                    raise NodeError(f"node {node!r}: no live raylet of the cluster at {self.cluster} has the "
                                    f"resource eagle-node:{node}")
                self._known.add(node)
            return ask_agent(self.cluster, node, method, *args, timeout=AGENT_ANSWER_S)
        except RemoteError as exc:
            raise NodeError(f"node {node!r}: its agent did not answer {method} ({exc.kinds[0] if exc.kinds else ''}: "
                            f"{exc})") from None
        except ClusterError as exc:
            raise NodeError(str(exc)) from None

    def address(self, node: str) -> str:
        return str(self._ask(node, "address"))

    def interfaces(self, node: str) -> list[str]:
        return list(self._ask(node, "interfaces"))

    def path_exists(self, node: str, path: str) -> bool:
        return bool(self._ask(node, "path_exists", path))

    def node_env(self, node: str) -> dict[str, str]:
        """The IFNAME variables the node's raylet has (its ranks inherit them), under what we forward."""
        return {**self._ask(node, "environ", list(IFNAME_VARS)), **self.forward}

    # -- a rank: one Ray job ----------------------------------------------------------------------------------

    def _client(self) -> Any:
        from eagle_console.cluster.jobs import job_client

        return job_client(self.cluster)

    def start(self, node: str, rank: int, argv: list[str], env: Mapping[str, str], log: Path) -> RankProcess:
        from eagle_console.statedir import private_dirs, write_private

        # the rank's env holds the plan's [env] (an HF token): it goes by a private file on the node, never
        # in the entrypoint (cluster/handoff.py)
        spec = {"argv": list(argv), "env": {**self.forward, **env}}
        private_dirs(log.parent)
        log.unlink(missing_ok=True)
        write_private(log, "")  # there from the start: the service tails rank 0's
        try:
            self._ask(node, "ping")  # a node unknown to the cluster is said as such
            job_id = submit_with_spec(self._client(), node, spec, "-m eagle_console.cluster.rank_session --spec-file",
                                      metadata={"eagle_console_rank": str(rank), "node": node}, exec_=True)
        except NodeError:
            raise
        except Exception as exc:  # noqa: BLE001 - the cluster's refusal, said with the node
            raise NodeError(f"node {node}: could not submit rank {rank}'s Ray job: {exc}") from None
        return RankProcess(node=node, rank=rank, ref={"job_id": job_id, "address": self.cluster}, log=str(log))

    def _copy_log(self, proc: RankProcess, final: bool) -> None:
        """The rank's job log into its log file; `final`: the job is over, its last line is whole. The
        wrapper's `proc` event (the rank's session on its node) is kept for `session`."""
        try:
            text = self._client().get_job_logs(proc.ref["job_id"])
        except Exception:  # noqa: BLE001 - the node's agent gone: the copy stays as it was
            return
        lines, events = split_log(text if final else whole_lines(text), ended=final)
        copy_job_log(lines, Path(proc.log))
        event = proc_event(events)
        if event is not None:
            self._sessions.setdefault(proc.ref["job_id"], event)

    def session(self, proc: RankProcess) -> dict[str, Any] | None:
        """The rank's session on its node, {"pid", "ctime"} of its leader (sid == pid), once `poll` saw the
        wrapper report it; None before. No call to the head: poll already reads the job's log."""
        event = self._sessions.get(proc.ref["job_id"])
        return None if event is None else {"pid": int(event["pid"]), "ctime": event.get("pid_ctime")}

    def rank_pid(self, proc: RankProcess) -> dict[str, Any] | None:
        """The rank's pids on its node (the wrapper's `proc` event), once it reported them."""
        try:
            _lines, events = split_log(self._client().get_job_logs(proc.ref["job_id"]))
        except Exception:  # noqa: BLE001 - not known (yet)
            return None
        return proc_event(events)

    def poll(self, proc: RankProcess) -> int | None:
        from eagle_console.cluster.jobs import JobStatus

        job_id = proc.ref["job_id"]
        if job_id in self._ended:
            return self._ended[job_id]
        if time.monotonic() - self._asked.get(job_id, -POLL_EVERY_S) < POLL_EVERY_S:
            return None
        self._asked[job_id] = time.monotonic()
        try:
            info = self._client().get_job_info(job_id)
        # the head unreachable or busy: not an end (NodeRunner.problem)
        except Exception as exc:  # noqa: BLE001
            self.problem = f"cannot ask the cluster about rank {proc.rank} on node {proc.node}: {exc}"
            return None
        self.problem = None
        self._copy_log(proc, final=info.status.is_terminal())  # read after the status: whole once terminal
        if not info.status.is_terminal():
            return None
        if info.status == JobStatus.STOPPED or info.driver_exit_code is None:
            code = -1  # stopped, or its driver died with its node: no exit code to know
        else:
            code = int(info.driver_exit_code)
        self._ended[job_id] = code
        return code

    def stop(self, proc: RankProcess, grace_s: float) -> None:
        """stop_job (Ray SIGTERMs the rank's wrapper, which stops the rank's session), then wait for the end."""
        from eagle_console.cluster.link import HeadUnreachable

        job_id = proc.ref["job_id"]
        try:
            client = self._client()
        except HeadUnreachable as exc:  # no one to ask to stop it or whether it ended: nothing to wait on
            self.problem = f"cannot ask the cluster to stop rank {proc.rank} on node {proc.node}: {exc}"
            return
        try:
            client.stop_job(job_id)
        except Exception:  # noqa: BLE001 - a job already over cannot be stopped: nothing to do
            pass
        deadline = time.monotonic() + grace_s + STOP_EXTRA_S
        while time.monotonic() < deadline:
            try:
                if client.get_job_status(job_id).is_terminal():
                    break
            except Exception:  # noqa: BLE001 - the head busy: ask again
                pass
            time.sleep(0.3)
        self._asked.pop(job_id, None)
        self._copy_log(proc, final=True)


def ray_runner(address: str, rank_env_keys: str = "", environ: Mapping[str, str] | None = None) -> RayRunner:
    """The runner of the cluster at `address`, forwarding the named keys of `environ` to the ranks."""
    import os

    from eagle_console.cluster.connect import ClusterError
    from eagle_console.cluster.jobs import job_client

    try:  # connected here, in the caller's main thread: Ray sets signal handlers when it connects
        job_client(address)
    except ClusterError as exc:
        raise NodeError(str(exc)) from None
    env = os.environ if environ is None else environ
    keys = [k for k in rank_env_keys.split(",") if k]
    return RayRunner(address, {k: env[k] for k in keys if k in env})


def ray_runner_from_env(environ: Mapping[str, str] | None = None) -> RayRunner:
    """The Ray runner of the plan's [cluster], from an action's environment (EAGLE_CONSOLE_CLUSTER, and the
    keys EAGLE_CONSOLE_RANK_ENV names): the factory the engine names for a multi-node server's service."""
    import os

    env = os.environ if environ is None else environ
    return ray_runner(env[CLUSTER_ENV], env.get(RANK_ENV, ""), env)


def proc_event(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rank wrapper's `proc` event (its session's leader on the node), once it reported one."""
    return next((e for e in events if e.get("kind") == "proc" and e.get("pid")), None)
