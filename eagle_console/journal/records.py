"""The journal's records: an event, a step's state, a note, a result, a run, and a refusal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Refused(Exception):
    """A precondition did not hold (needs unmet, already in progress): nothing was written."""

    def __init__(self, message: str, by: str | None = None, at: float | None = None,
                 fix: str | None = None) -> None:
        super().__init__(message)
        self.by = by
        self.at = at
        self.fix = fix  # an option that would get past it ("cascade", "force"): each face names its own control


# The read-only records are NamedTuples (cheap to define: this module loads before the console's first
# screen; see plan/model.py); Run is built up event by event, so it stays a (mutable) dataclass.
class Event(NamedTuple):
    id: int
    at: float
    kind: str  # an EventKind value
    step_id: str | None
    run_id: int | None
    who: str | None
    data: dict[str, Any]
    face: str | None = None  # console | cli | agent:<client>, beside `who` (None: the engine wrote it)


class StepState(NamedTuple):
    status: str
    at: float
    who: str | None
    event_id: int
    run_id: int | None = None
    reason: str | None = None
    face: str | None = None


class Note(NamedTuple):
    step_id: str
    text: str
    who: str | None
    at: float
    face: str | None = None


class Result(NamedTuple):
    step_id: str
    run_id: int | None
    name: str
    value: float | str
    at: float


@dataclass
class Run:
    """One supervised execution: the action of a step, its check, or a rollback."""

    id: int
    step_id: str
    kind: str  # "action" | "rollback"
    started: float
    who: str | None
    command: str
    log: str | None
    service: bool = False
    env: dict[str, str] = field(default_factory=dict)
    supervisor_pid: int | None = None
    supervisor_ctime: str | float | None = None  # processes.start_of; a float: an older epoch create time
    pid: int | None = None  # the action's process (a service's main process)
    pid_ctime: str | float | None = None
    pgid: int | None = None
    sid: int | None = None
    ready_at: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    outcome: str | None = None  # completed | failed | lost | timeout | stopped
    reason: str | None = None
    node: str | None = None  # a cluster run (issue #20): the node its Ray job runs on, and the job
    job_id: str | None = None
    face: str | None = None  # the face that started it: console | cli | agent:<client>
    host: str | None = None  # the machine its supervisor runs on (processes.this_host); None: an older record
    begun: str | None = None  # processes.boot_now() at its begin (None: an older record)

    @property
    def finished(self) -> bool:
        return self.ended is not None
