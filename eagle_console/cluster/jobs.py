"""A step with `node` runs as a Ray job pinned to that node; the console journals what the job reports.

The job's entrypoint is our own supervisor (`python -m eagle_console.engine.supervise --job-spec PATH`),
so timeouts, the check and the exit are the supervisor's as on the console's machine. The run's spec (the
plan's `[env]`, a built-in's `with`) is never in the entrypoint, which every user of the node sees in `ps`
and Ray writes into its logs: the node's agent writes it into a private file there first (cluster/handoff.py). It writes no journal there (the journal is one SQLite file here): its events
are lines of the job's log (cluster.job_events), which `sync_run` reads through the Jobs API, copies
into the step log here and journals. A job that ended without an exit event lost its driver (`lost`);
a running job whose node no longer answers is `lost` too (docs/cluster.md).
"""

from __future__ import annotations

import shlex
import sys
import time
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.cluster import pin
from eagle_console.cluster.job_events import copy_job_log, split_log, whole_lines

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Run

NODE_ANSWER_S = 2.0
SYNC_EVERY_S = 1.0  # a node run's job is asked at most this often by reconcile (HTTP calls, an agent ping)
_synced: dict[str, float] = {}  # job id -> when reconcile last asked (monotonic)
AGENT_ANSWER_S = 30.0  # an agent's first call starts its actor on the node: seconds on a busy machine
STOP_EXTRA_S = 30.0  # Ray's own stop wait (RAY_JOB_STOP_WAIT_TIME_S) and the status' lag, on top of the grace


JOB_S = 5.0  # a Jobs API call (its status, its log: the log is served by the job's node, maybe cut off)
RETRY_NODE_RUN_S = 5.0  # a node run whose sync failed is not asked again before this: local work goes on


class JobStatus(str, Enum):
    """Ray's job statuses (`ray/dashboard/modules/job/common.py` JobStatus, 2.60.0), without importing Ray."""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    def is_terminal(self) -> bool:
        return self not in (JobStatus.PENDING, JobStatus.RUNNING)

    def __str__(self) -> str:
        return self.value


class JobInfo(NamedTuple):
    status: JobStatus
    message: str | None
    driver_exit_code: int | None


class JobClient:
    """The Jobs API of the cluster at `address`, asked through the out-of-process driver (cluster/link.py),
    each call with a deadline (Ray's JobSubmissionClient sets none)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def _job(self, call: str, timeout: float = JOB_S, **args: Any) -> Any:
        from eagle_console.cluster.link import call as ask

        return ask(self.address, "job", timeout, call=call, **args)

    def get_job_info(self, job_id: str) -> JobInfo:
        d = self._job("info", job_id=job_id)
        return JobInfo(JobStatus(d["status"]), d.get("message"), d.get("driver_exit_code"))

    def get_job_status(self, job_id: str) -> JobStatus:
        return JobStatus(self._job("status", job_id=job_id))

    def get_job_logs(self, job_id: str) -> str:
        return str(self._job("logs", job_id=job_id))

    def stop_job(self, job_id: str) -> bool:
        return bool(self._job("stop", job_id=job_id))

    def submit_job(self, **submit: Any) -> str:
        return str(self._job("submit", AGENT_ANSWER_S, submit=submit))


@lru_cache(maxsize=4)
def job_client(address: str) -> JobClient:
    """The Jobs API client of the cluster at `address` (its dashboard's URL is looked up in the GCS)."""
    from eagle_console.cluster.connect import connect

    connect(address)
    return JobClient(address)


def submit_run(address: str, node: str, run_id: int, step_id: str, spec: dict[str, Any]) -> str:
    """Submit the run's supervisor as a job pinned to `node`; returns the job id. The spec goes to a private
    file on the node first (its agent writes it); the entrypoint names only that file."""
    client = job_client(address)
    return submit_with_spec(client, node, spec, "-m eagle_console.engine.supervise --job-spec",
                            metadata={"eagle_console_run": str(run_id), "step": step_id, "node": node})


def submit_with_spec(client: Any, node: str, spec: dict[str, Any], command: str, metadata: dict[str, str],
                     exec_: bool = False) -> str:
    """A job on `node` running `python COMMAND PATH`, PATH a private file on the node holding `spec`
    (cluster/handoff.py); the file is removed again if the job cannot be submitted."""
    from eagle_console.cluster.connect import ask_agent

    path = str(ask_agent(client.address, node, "put_spec", spec, timeout=AGENT_ANSWER_S))
    entry = f"{'exec ' if exec_ else ''}{shlex.quote(sys.executable)} {command} {shlex.quote(path)}"
    try:
        return client.submit_job(entrypoint=entry, entrypoint_resources=pin(node), entrypoint_num_cpus=0,
                                 metadata=metadata)
    except BaseException:
        try:
            ask_agent(client.address, node, "drop_spec", path, timeout=NODE_ANSWER_S)  # no job will take it
        except Exception:  # noqa: BLE001 - the submit's failure is the one to say
            pass
        raise


def _node_gone(address: str, node: str) -> str | None:
    """Why `node` is gone (the GCS says dead, its agent died), or None; a slow answer is not gone."""
    from eagle_console.cluster.connect import RemoteError, ask_agent, cluster_nodes

    if not any(n.name == node and n.alive for n in cluster_nodes(address)):
        return f"node {node} is dead in the cluster's node table"
    try:
        ask_agent(address, node, "ping", timeout=NODE_ANSWER_S)
    except RemoteError as exc:
        if exc.is_a("GetTimeoutError"):
            return None
        if exc.is_a("RayActorError"):
            return f"node {node}'s agent died ({exc.kinds[0]}): its raylet is gone"
        raise
    return None


def sync_run(journal: Journal, run: Run, address: str, check_node: bool = True) -> bool:
    """Bring `run` up to date from its job: log, pids, readiness, and its end. True if it ended now."""
    client = job_client(address)
    info = client.get_job_info(run.job_id)
    try:  # served by the node's own agent: gone with its raylet, when the node matters most
        text = client.get_job_logs(run.job_id)
        ended = info.status.is_terminal()
        lines, events = split_log(text if ended else whole_lines(text), ended=ended)
        if run.log:
            copy_job_log(lines, Path(run.log))
    except Exception:  # noqa: BLE001 - the log stays as last copied; the job's status still judges
        lines, events = [], []
    for e in events:
        if e["kind"] == "proc" and run.pid is None:
            journal.record_proc(run.id, run.step_id, **{k: v for k, v in e.items() if k != "kind"})
        elif e["kind"] == "ready" and run.ready_at is None:
            journal.record_ready(run.id, run.step_id)
    ends = [e for e in events if e["kind"] == "exit"]
    if info.status in (JobStatus.PENDING, JobStatus.RUNNING) and not ends:
        gone = _node_gone(address, run.node or "") if check_node and info.status == JobStatus.RUNNING else None
        if gone:
            reason = f"lost: {gone}"
            return journal.end_run(run.id, run.step_id, exit_code=None, outcome="lost", reason=reason,
                                   step_status="failed" if run.kind == "action" else None)
        return False
    if ends:
        for e in events:  # recorded once, with the end: the end is the claim (end_run returns False twice)
            if e["kind"] == "result":
                journal.record_result(run.step_id, run.id, e["name"], e["value"])
        end = ends[-1]
        return journal.end_run(run.id, run.step_id, exit_code=end["exit_code"], outcome=end["outcome"],
                               reason=end["reason"], step_status=end["step_status"])
    if info.status == JobStatus.STOPPED:
        return journal.end_run(run.id, run.step_id, exit_code=None, outcome="stopped",
                               reason="its Ray job was stopped", step_status=None)
    reason = f"lost: its Ray job {run.job_id} ended {info.status} without an exit ({info.message or 'no message'})"
    return journal.end_run(run.id, run.step_id, exit_code=None, outcome="lost", reason=reason,
                           step_status="failed" if run.kind == "action" else None)


def reconcile_node_runs(journal: Journal, runs: list[Run], address: str) -> list[Run]:
    """`Engine.reconcile` for the runs on cluster nodes, each at most every SYNC_EVERY_S (a CLI's `--wait`
    reconciles every 0.2 s); the ones found lost are returned."""
    lost = []
    now = time.monotonic()
    for run in runs:
        if now - _synced.get(run.job_id or "", -SYNC_EVERY_S) < SYNC_EVERY_S:
            continue
        _synced[run.job_id or ""] = now
        try:
            if sync_run(journal, run, address):
                ended = journal.run(run.id)
                if ended is not None and ended.outcome == "lost":
                    lost.append(ended)
        except Exception as exc:  # noqa: BLE001 - the cluster unreachable: the run is not judged now
            _synced[run.job_id or ""] = now + RETRY_NODE_RUN_S  # nor asked again at once: local work goes on
            print(f"eagle-console: cannot read run {run.id}'s Ray job {run.job_id}: {exc}", file=sys.stderr)
    return lost


def stop_job_run(journal: Journal, stop: dict[str, Any], grace_s: float) -> str:
    """Rollback: stop the run's job (Ray: SIGTERM to the supervisor, which stops the action's session) and
    wait until it ended; then journal its end. Returns what happened, for the rollback log."""
    client = job_client(stop["address"])
    job_id = stop["job_id"]
    try:
        client.stop_job(job_id)
    except Exception as exc:  # noqa: BLE001 - a job already gone cannot be stopped: say so, go on
        return f"could not stop Ray job {job_id}: {exc}"
    deadline = time.monotonic() + grace_s + STOP_EXTRA_S
    while not client.get_job_status(job_id).is_terminal():
        if time.monotonic() > deadline:
            return f"Ray job {job_id} did not stop within {grace_s + STOP_EXTRA_S:g}s"
        time.sleep(0.2)
    run = journal.run(int(stop["run_id"]))
    if run is not None and not run.finished:
        sync_run(journal, run, stop["address"], check_node=False)
    return f"stopped Ray job {job_id} on node {stop.get('node')} ({client.get_job_status(job_id)})"
