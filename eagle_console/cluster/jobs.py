"""A step with `node` runs as a Ray job pinned to that node; the console journals what the job reports.

The job's entrypoint is our own supervisor (`python -m eagle_console.engine.supervise --job-spec PATH`),
so timeouts, the check and the exit are the supervisor's as on the console's machine. The run's spec (the
plan's `[env]`, a built-in's `with`) is never in the entrypoint, which every user of the node sees in `ps`
and Ray writes into its logs: the node's agent writes it into a private file there first (cluster/handoff.py). It writes no journal there (the journal is one SQLite file here): its events
are lines of the job's log (cluster.job_events), which `sync_run` reads through the Jobs API, copies
into the step log here and journals. A job that ended without an exit event, or that the cluster forgot,
is judged on its node (cluster/noderuns.py): still running there, ended, or `lost`; a node that does not
answer leaves its runs unknown, never `lost` (docs/cluster.md, "Faults").
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


class NodeUnreachable(Exception):
    """The node does not answer now: not alive in the GCS's node table, or its agent silent or unreachable."""


class NodeNote(NamedTuple):
    """What the console knows of a node run beyond its journal, in memory (never journaled): `unreachable`
    (its node does not answer: the run is unknown, not lost) or `elsewhere` (its Ray job is gone, its
    supervisor still runs on the node)."""

    state: str  # unreachable | elsewhere
    since: float  # when first seen so (time.time())
    text: str
    supervisor_pid: int | None = None


_notes: dict[str, NodeNote] = {}  # job id -> its note


def node_note(job_id: str | None) -> NodeNote | None:
    return _notes.get(job_id or "")


def _note(run: Run, state: str, text: str, supervisor_pid: int | None = None) -> None:
    old = _notes.get(run.job_id or "")
    since = old.since if old is not None and old.state == state else time.time()
    _notes[run.job_id or ""] = NodeNote(state, since, text, supervisor_pid)


def ask_node(address: str, node: str, job_id: str, with_log: bool = False) -> dict[str, Any]:
    """What node `node`'s agent knows of the run of job `job_id` (cluster/noderuns.look); NodeUnreachable
    when it does not answer. No answer is no verdict: a 6 s link blip raised ActorUnavailableError, Ray's
    "temporarily unavailable", which is a RayActorError (ray 2.60.0 `ray/exceptions.py`), and the run was
    journaled `lost` while it went on."""
    from eagle_console.cluster.connect import RemoteError, ask_agent, cluster_nodes

    if not any(n.name == node and n.alive for n in cluster_nodes(address)):
        raise NodeUnreachable(f"node {node} is not alive in the cluster's node table")
    try:
        return ask_agent(address, node, "node_run", job_id, with_log, timeout=NODE_ANSWER_S)  # type: ignore[return-value]
    except RemoteError as exc:  # what Ray raised in the driver, by its class names (cluster/link.py)
        if exc.is_a("GetTimeoutError"):
            raise NodeUnreachable(f"node {node}'s agent did not answer within {NODE_ANSWER_S:g}s") from None
        if exc.is_a("RayletGone"):  # the agent outlived its raylet (cluster/agent.py raylet_gone)
            raise NodeUnreachable(f"node {node}'s raylet has died") from None
        if exc.is_a("NodeGone"):  # gone since the table above was read (cluster/agent.py find_or_start)
            raise NodeUnreachable(f"node {node} is not alive in the cluster's node table") from None
        if exc.is_a("RayError"):  # RayActorError and its ActorUnavailableError / ActorDiedError among them
            raise NodeUnreachable(f"node {node}'s agent cannot be reached ({exc.kinds[0]})") from None
        raise


def job_info(client: Any, job_id: str) -> Any | None:
    """The job's info, or None when the cluster does not know the job (a 404: its head was restarted and
    forgot every job). Any other failure (the head unreachable) is raised."""
    from eagle_console.cluster.connect import RemoteError

    try:
        return client.get_job_info(job_id)
    except RemoteError as exc:  # ray 2.60.0 dashboard_sdk._raise_error: "Request failed with status code 404"
        if exc.is_a("RuntimeError") and "status code 404" in str(exc):
            return None
        raise


def _forgotten(run: Run, info: Any | None) -> str:
    if info is None:
        return f"its Ray job {run.job_id} is unknown to the cluster (its head restarted?)"
    said = (info.message or "no message").strip().splitlines()[0]  # Ray's message spans 10 lines (the actor's)
    return f"its Ray job {run.job_id} ended {info.status} without an exit ({said})"


def _take_events(journal: Journal, run: Run, text: str | None, whole: bool) -> list[dict[str, Any]]:
    """Copy the job's log into the step log and record its pids and readiness; returns its events. A
    read-only journal keeps them in memory (journal/derived.py), as it does a dead local run's end."""
    if text is None:
        return []
    lines, events = split_log(text if whole else whole_lines(text), ended=whole)
    if run.log:
        try:
            copy_job_log(lines, Path(run.log))
        except OSError:
            pass  # the copy stays as it was; the events still judge
    for e in events:
        if e["kind"] == "proc" and run.pid is None:
            journal.record_proc(run.id, run.step_id, **{k: v for k, v in e.items() if k != "kind"})
        elif e["kind"] == "ready" and run.ready_at is None:
            journal.record_ready(run.id, run.step_id)
    return events


def _end_from(journal: Journal, run: Run, events: list[dict[str, Any]], exit_: dict[str, Any] | None) -> bool | None:
    """End the run from its exit event (or the exit its node's record kept); None when there is none."""
    ends = [e for e in events if e["kind"] == "exit"] or ([exit_] if exit_ else [])
    if not ends:
        return None
    if not journal.readonly:
        for e in events:  # recorded once, with the end: the end is the claim (end_run returns False twice)
            if e["kind"] == "result":
                journal.record_result(run.step_id, run.id, e["name"], e["value"])
    end = ends[-1]
    _notes.pop(run.job_id or "", None)
    return journal.end_run(run.id, run.step_id, exit_code=end["exit_code"], outcome=end["outcome"],
                           reason=end["reason"], step_status=end["step_status"])


def sync_run(journal: Journal, run: Run, address: str, check_node: bool = True) -> bool:
    """Bring `run` up to date from its job: log, pids, readiness, and its end. True if it ended now.

    `lost` only when it is: a node that does not answer leaves its runs unknown (a NodeNote, in memory), and
    a job the cluster forgot or failed (its head restarted, its raylet killed) is judged by what the run's
    supervisor recorded on its node (cluster/noderuns.py), asked through the node's agent."""
    client = job_client(address)
    info = job_info(client, run.job_id or "")
    events: list[dict[str, Any]] = []
    if info is not None:
        try:  # served by the node's own agent: gone with its raylet, when the node matters most
            events = _take_events(journal, run, client.get_job_logs(run.job_id), info.status.is_terminal())
        except Exception:  # noqa: BLE001 - the log stays as last copied; the job's status still judges
            events = []
    if (ended := _end_from(journal, run, events, None)) is not None:
        return ended
    if info is not None and info.status in (JobStatus.PENDING, JobStatus.RUNNING):
        if check_node and info.status == JobStatus.RUNNING:
            try:
                ask_node(address, run.node or "", run.job_id or "")
                _notes.pop(run.job_id or "", None)
            except NodeUnreachable as exc:
                _note(run, "unreachable", f"unknown: {exc}; its Ray job is {info.status}")
        return False
    if info is not None and info.status == JobStatus.STOPPED:
        _notes.pop(run.job_id or "", None)
        return journal.end_run(run.id, run.step_id, exit_code=None, outcome="stopped",
                               reason="its Ray job was stopped", step_status=None)
    return _judge_on_node(journal, run, address, _forgotten(run, info))


def _judge_on_node(journal: Journal, run: Run, address: str, why: str) -> bool:
    """The cluster no longer runs the run's job: its node says whether the supervisor still runs there."""
    node = run.node or "?"
    try:
        here = ask_node(address, node, run.job_id or "", with_log=True)
    except NodeUnreachable as exc:
        _note(run, "unreachable", f"unknown: {why}; {exc}")
        return False
    if here.get("found"):
        supervisor_dead = here.get("supervisor_state") == "dead"
        events = _take_events(journal, run, here.get("log_text"), supervisor_dead)
        if (ended := _end_from(journal, run, events if supervisor_dead else [], here.get("exit"))) is not None:
            return ended
        sup = here.get("supervisor_pid")
        if not supervisor_dead:
            _note(run, "elsewhere", f"{why}; still running on node {node}, supervisor pid {sup} "
                                    f"({here.get('supervisor_state')})", sup)
            return False
        action = (f"its action still runs (pids {', '.join(map(str, here['action_pids']))})"
                  if here.get("action_pids") else "its action is gone")
        reason = f"lost: {why}; its supervisor (pid {sup} on node {node}) died without recording an exit; {action}"
    else:
        reason = f"lost: {why}, and node {node} has no record of its run"
    _notes.pop(run.job_id or "", None)
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
            # unknown, said where the run is shown (status, the console, `run --wait`): once, not a line a retry
            _note(run, "unreachable", f"unknown: {_why_unread(address, run, exc)}")
    return lost


def _why_unread(address: str, run: Run, exc: Exception) -> str:
    """Why a node run's job could not be read: the head down (its GCS port), else the error itself."""
    from eagle_console.cluster.link import check_head

    return check_head(address) or f"cannot read its Ray job {run.job_id}: {exc}"


def stop_job_run(journal: Journal, stop: dict[str, Any], grace_s: float) -> tuple[bool, str]:
    """Rollback: stop the run's job (Ray: SIGTERM to the supervisor, which stops the action's session) and
    wait until it ended; then journal its end. A job the cluster forgot or failed is stopped on its node by
    the node's agent, from what the supervisor recorded there. Returns (stopped, what happened): False when
    nothing could be stopped — the rollback must not then say "rolled back"."""
    from eagle_console.cluster.connect import ClusterError, ask_agent

    address, job_id, node = stop["address"], stop["job_id"], stop.get("node") or "?"
    client = job_client(address)
    try:
        info = job_info(client, job_id)
    except Exception as exc:  # noqa: BLE001 - the head unreachable: nothing can be stopped through it
        return False, f"could not stop Ray job {job_id}: the cluster did not answer ({exc})"
    run = journal.run(int(stop["run_id"]))
    if info is not None and not info.status.is_terminal():
        try:
            client.stop_job(job_id)
        except Exception as exc:  # noqa: BLE001 - said, then its node is asked below
            info = None
            why = f"could not stop Ray job {job_id}: {exc}"
        else:
            deadline = time.monotonic() + grace_s + STOP_EXTRA_S
            while not client.get_job_status(job_id).is_terminal():
                if time.monotonic() > deadline:
                    return False, f"Ray job {job_id} did not stop within {grace_s + STOP_EXTRA_S:g}s"
                time.sleep(0.2)
            if run is not None and not run.finished:
                sync_run(journal, run, address, check_node=False)
            return True, f"stopped Ray job {job_id} on node {node} ({client.get_job_status(job_id)})"
    else:
        why = _forgotten(run, info) if run is not None else f"its Ray job {job_id} is not running"
    try:
        if not any(n.name == node and n.alive for n in cluster_nodes_of(address)):
            raise NodeUnreachable(f"node {node} is not alive in the cluster's node table")
        out: dict[str, Any] = ask_agent(address, node, "stop_node_run", job_id, grace_s,  # type: ignore[assignment]
                                        timeout=grace_s + STOP_EXTRA_S)
    except (NodeUnreachable, ClusterError) as exc:
        return False, f"could not stop the run: {why}, and node {node} cannot be reached ({exc})"
    if not out["found"]:
        return True, f"{why}; node {node} has no record of its run: nothing of it is known to run there"
    if out["survivors"]:
        return False, f"{why}; on node {node} pids {out['survivors']} survived SIGKILL"
    if run is not None and not run.finished:
        _synced.pop(job_id, None)
        sync_run(journal, run, address, check_node=False)
        journal.end_run(run.id, run.step_id, exit_code=None, outcome="stopped",  # no exit was recorded there
                        reason=f"stopped on node {node} by its agent (pids {out['stopped']})", step_status=None)
    return True, f"{why}; stopped on node {node} by its agent: pids {out['stopped'] or 'none left'}"


def cluster_nodes_of(address: str) -> list:
    from eagle_console.cluster.connect import cluster_nodes

    return cluster_nodes(address)
