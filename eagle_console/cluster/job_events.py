"""The supervisor of a Ray job tells the console what happened through its own output (no Ray import).

On another machine the journal (one SQLite file on the console's machine) cannot be written, so the
supervisor of a step with `node` runs with `JobEvents` in place of the journal: each event is one line
`::eagle-console-event {json}` in the job's log, which the console reads back through Ray's job logs
API and journals (eagle_console.cluster.jobs). The action's output goes to the same log.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

EVENT_PREFIX = "::eagle-console-event "
# Ray's job supervisor writes this line into the job log before it starts the entrypoint (ray 2.60,
# dashboard/modules/job/job_supervisor.py, `_exec_entrypoint`): Ray's line, not the step's output. (The
# entrypoint names only a private spec file on the node, cluster/handoff.py: no secret is in it.)
RAY_ENTRYPOINT_LINE = "Running entrypoint for job "
# Ray's dashboard writes into the job's log, before the entrypoint line, with its logger's format
# (ray/_private/ray_constants.py LOGGER_FORMAT "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s --
# %(message)s", written by job_manager.py `_get_job_driver_logger`: "Runtime env is setting up.", 2.60.0).
RAY_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\t[A-Z]+ [\w.-]+:\d+ -- ")
RAY_MARK = "[ray] "
# The pids the console may journal for a node's run: the action's, never the supervisor's (a local
# liveness check of a remote pid would be wrong), and only for `tracked` classification on that node.
PROC_KEYS = ("pid", "pid_ctime", "pgid", "sid")
SUPERVISOR_KEYS = ("supervisor_pid", "supervisor_ctime")


class JobEvents:
    """The subset of Journal a supervisor writes, as lines on stdout (the job's log); its pids, log file and
    exit also go to its record on this node (cluster/noderuns.py), which outlives the cluster's memory of the job."""

    path = None

    def __init__(self) -> None:
        from eagle_console.cluster.noderuns import NodeRecord, job_id_here, prune

        job_id = job_id_here()
        self.record = NodeRecord(job_id) if job_id else None
        if self.record is not None:
            self.record.update(log=os.path.realpath("/proc/self/fd/1"), started=time.time())
            prune()  # the records of runs ended long ago on this node

    def _emit(self, kind: str, **data: Any) -> None:
        """One write of the whole line. The action writes to the same file, and print() is two writes (the
        text, then "\n"): with stdout unbuffered (PYTHONUNBUFFERED=1, common in containers) the action's
        first line landed between them, `…"sid": 20698}LINE1`, and the console lost the event."""
        line = (EVENT_PREFIX + json.dumps({"kind": kind, **data}, default=str) + "\n").encode()
        sys.stdout.flush()  # what this process printed before goes first
        fd = sys.stdout.fileno()
        while line:
            line = line[os.write(fd, line):]

    def record_proc(self, run_id: int, step_id: str, **proc: Any) -> int:
        keep = {k: v for k, v in proc.items() if k in PROC_KEYS}
        if self.record is not None:  # the supervisor's own pid too: judged on this node only, by its agent
            self.record.update(**{k: v for k, v in proc.items() if k in (*PROC_KEYS, *SUPERVISOR_KEYS)})
        if keep:
            self._emit("proc", **keep)
        return 0

    def run_label(self, run_id: int) -> str:
        return f"run id {run_id}"  # the per-step number is the console's to count (its journal)

    def record_result(self, step_id: str, run_id: int, name: str, value: float | str) -> None:
        self._emit("result", name=name, value=value)

    def record_ready(self, run_id: int, step_id: str) -> None:
        self._emit("ready")

    def end_run(self, run_id: int, step_id: str, *, exit_code: int | None, outcome: str,
                reason: str | None = None, step_status: str | None = None) -> bool:
        self._emit("exit", exit_code=exit_code, outcome=outcome, reason=reason, step_status=step_status)
        if self.record is not None:
            self.record.update(exit={"exit_code": exit_code, "outcome": outcome, "reason": reason,
                                     "step_status": step_status})
        return True

    def append(self, kind: str, step_id: str | None, run_id: int | None, who: str | None, **data: Any) -> int:
        self._emit("append", event=str(kind), data=data)
        return 0

    def events(self, *_args: Any, **_kw: Any) -> list:
        return []  # a rollback's stop request is the job's stop (SIGTERM), not a journal event

    def close(self) -> None:
        sys.stdout.flush()


def split_log(text: str, ended: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """A job log → (the step log's lines, the supervisor's events in order).

    Ray's own lines before its entrypoint line ("Runtime env is setting up.") are left out; `ended` (the
    job is over) with no entrypoint line at all: the job never started, and Ray's lines say why, so they
    stay, marked `[ray] `."""
    lines: list[str] = []
    events: list[dict[str, Any]] = []
    started = RAY_ENTRYPOINT_LINE in text
    before = True  # before Ray's entrypoint line: nothing of the step's has run yet
    for line in text.splitlines():
        if before and line.startswith(RAY_ENTRYPOINT_LINE):
            before = False
            continue
        if before and RAY_LOG_LINE.match(line):
            if ended and not started:
                lines.append(RAY_MARK + line)
            continue
        found = _event_in(line)
        if found is not None:
            event, rest = found
            events.append(event)
            if rest:
                lines.append(rest)
            continue
        lines.append(line)
    return lines, events


_JSON = json.JSONDecoder()


def _event_in(line: str) -> tuple[dict[str, Any], str] | None:
    """The supervisor's event in `line` and the step's output around it: an action's last output without a
    newline (a progress line, `Loading...`) puts the event after it on the same line; an older supervisor's
    event could have the action's next line glued after it."""
    at = line.find(EVENT_PREFIX)
    if at < 0:
        return None
    try:
        event, end = _JSON.raw_decode(line, at + len(EVENT_PREFIX))
    except ValueError:
        return None
    if not isinstance(event, dict) or "kind" not in event:
        return None
    return event, line[:at] + line[end:]


def whole_lines(text: str) -> str:
    """A running job's log up to its last newline: the line after it (output or an event) is still being
    written, and copying it half would change the copy's bytes once it is whole."""
    return text[: text.rfind("\n") + 1]


def copy_job_log(lines: list[str], path: Path) -> None:
    """Bring the step log at `path` up to the job's `lines`. The job log only grows, so what is new is
    appended: a reader following the file (node/tail.LogFollower, by offset and inode) reads each line
    once. Only a copy that is not a prefix of the job's log any more is written again whole (a new file:
    its readers start over, as after a rotation)."""
    from eagle_console.statedir import private_dirs, write_private

    data = "".join(line + "\n" for line in lines).encode()
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = None
    if old is not None and data.startswith(old):
        if len(data) > len(old):
            with open(path, "ab") as f:
                f.write(data[len(old):])
        return
    private_dirs(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    write_private(tmp, data.decode())
    tmp.replace(path)
