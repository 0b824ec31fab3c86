"""A node run's own record on its node: its supervisor, its log file and its action's session, written there by
the supervisor (a Ray job's entrypoint) and read there by the node's agent (cluster/agent.py).

The console knows a node run by its Ray job, and the cluster can forget it: a head restarted knows none of the
old job ids (every one is a 404), and a raylet killed leaves its jobs FAILED while the supervisor and the action
go on on the node (ray 2.60.0 starts the entrypoint in a session of its own, `dashboard/modules/job/
job_supervisor.py` `_exec_entrypoint`; measured here: both still ran after `kill -9` of the raylet). So the
supervisor records itself in a file on its node, named by its job id, and the agent answers from that file:
whether the supervisor and the action still run (pid *and* start time: a reused pid is never taken for them),
the text of the job's log (the file the supervisor writes its events to), and it stops them for a rollback.
No Ray import: the supervisor's side runs without Ray.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

STATE_ENV = "EAGLE_CONSOLE_NODE_STATE"  # where a node keeps its runs' records (default below)
# Ray sets this for a job's entrypoint; its metadata carries the job's submission id (ray 2.60.0,
# job_supervisor.py `_get_driver_env_vars`, JOB_ID_METADATA_KEY "job_submission_id").
JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"
_JOB_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
LOG_LIMIT = 32 * 1024 * 1024  # a job log larger than this is returned from its end (the events are near it)
# A record is the only word on a run whose job the cluster forgot, so an ended run's is kept long (a console
# may come back after weeks); one whose supervisor or action still runs is kept however old.
KEEP_S = 30 * 86400
TMP_KEEP_S = 3600  # a half-written record (its writer died between write and rename)


def state_dir() -> Path:
    value = os.environ.get(STATE_ENV)
    return Path(value) if value else Path.home() / ".local" / "state" / "eagle-console" / "node-runs"


def job_id_here() -> str | None:
    """The Ray job this process is the entrypoint of, or None (not a Ray job)."""
    try:
        return str(json.loads(os.environ[JOB_CONFIG_ENV])["metadata"]["job_submission_id"])
    except (KeyError, ValueError, TypeError):
        return None


def record_path(job_id: str) -> Path:
    if not _JOB_ID.fullmatch(job_id) or job_id.startswith("."):
        raise ValueError(f"not a Ray job id: {job_id!r}")
    return state_dir() / f"{job_id}.json"


class NodeRecord:
    """The supervisor's side: its record, rewritten whole at each change (a reader never sees half of it)."""

    def __init__(self, job_id: str) -> None:
        self.path = record_path(job_id)
        self.data: dict[str, Any] = {"job_id": job_id}

    def update(self, **data: Any) -> None:
        from eagle_console.statedir import private_dirs, write_private

        self.data.update(data)
        try:
            private_dirs(self.path.parent)
            tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            write_private(tmp, json.dumps(self.data, default=str))
            tmp.replace(self.path)
        except OSError:
            pass  # the job's log still carries every event: the record only helps when the cluster forgot it


def prune(now: float | None = None) -> list[str]:
    """Remove the records of runs that ended (supervisor and action gone) and were last written over
    KEEP_S ago, and leftover half-written ones. Called by each new node run's supervisor: the records of a
    node that runs steps for months stay bounded. Returns the names removed."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        entries = list(os.scandir(state_dir()))
    except OSError:
        return removed
    for entry in entries:
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if entry.name.endswith(".tmp"):
            stale = age > TMP_KEEP_S
        elif entry.name.endswith(".json") and age > KEEP_S:
            seen = look(entry.name[: -len(".json")]) if _JOB_ID.fullmatch(entry.name[:-5]) else {"found": False}
            stale = seen.get("supervisor_state") not in ("running", "stopped") and not seen.get("action_pids")
        else:
            stale = False
        if stale:
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except OSError:
                pass
    return removed


def read_record(job_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(record_path(job_id).read_text())
    except (OSError, ValueError):
        return None


def look(job_id: str, with_log: bool = False) -> dict[str, Any]:
    """What runs here of the job's run: `found`, the record's keys, `supervisor_state` (running | stopped |
    dead), `action_pids` (the action's session members still alive) and, asked for, `log_text`."""
    from eagle_console.node.liveness import process_word
    from eagle_console.processes import session_members

    data = read_record(job_id)
    if data is None:
        return {"found": False, "job_id": job_id}
    out = {**data, "found": True,
           "supervisor_state": process_word(data.get("supervisor_pid"), data.get("supervisor_ctime"), "dead")}
    sid = data.get("sid")
    out["action_pids"] = sorted(p.pid for p in session_members(int(sid), data.get("pgid"), data.get("pid_ctime"))) \
        if sid else []
    if with_log and data.get("log"):
        out["log_text"] = _read_log(Path(data["log"]))
    return out


def _read_log(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LOG_LIMIT))
            return f.read().decode(errors="replace")
    except OSError:
        return None


def stop(job_id: str, grace_s: float) -> dict[str, Any]:
    """Stop the run as Ray's stop_job would: SIGTERM to the supervisor's process group (it stops the action's
    session and records `stopped`), SIGKILL after `grace_s`; then whatever of the action's session is left.
    Returns `found`, `stopped` (pids signalled) and `survivors`."""
    import psutil

    from eagle_console.processes import alive, stop_session

    data = read_record(job_id)
    if data is None:
        return {"found": False, "stopped": [], "survivors": []}
    signalled: list[int] = []
    sup, ctime = data.get("supervisor_pid"), data.get("supervisor_ctime")
    if alive(sup, ctime):
        assert sup is not None
        signalled.append(int(sup))
        try:
            psutil.Process(int(sup)).send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
        deadline = time.monotonic() + grace_s + 5.0  # its own grace for the action, and its exit's writing
        while alive(sup, ctime) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(sup, ctime):
            try:
                psutil.Process(int(sup)).send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
    if data.get("sid"):
        signalled += stop_session(int(data["sid"]), data.get("pgid"), grace_s,
                                  leader_start=data.get("pid_ctime"))
    time.sleep(0.1)
    after = look(job_id)
    survivors = ([int(sup)] if after.get("supervisor_state") == "running" and sup else []) + after["action_pids"]
    return {"found": True, "stopped": sorted(set(signalled)), "survivors": survivors}
