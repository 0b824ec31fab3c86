"""Requests that wait for a person: an agent's run, rollback or kill, asked, decided, carried out (issue 34).

Three events: `approval_asked` (its id is the request's id, the RUN of `approve PLAN RUN`), `approval_decided`
(run_id = the request; approved or denied, by whom, through which face, with a note) and `approval_done` (what
the approval started: a run, a rollback, a kill report, or why it could not). A request is folded from them;
deciding checks, inside the write transaction, that nobody decided it first.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from eagle_console.journal.kinds import EventKind
from eagle_console.journal.records import Event, Refused

AWAITING = "awaiting_approval"
APPROVED = "approved"
DENIED = "denied"
ACTIONS = ("run", "rollback", "kill")
KINDS = (EventKind.APPROVAL_ASKED, EventKind.APPROVAL_DECIDED, EventKind.APPROVAL_DONE)


class Approval(NamedTuple):
    id: int
    action: str  # run | rollback | kill
    target: str | None  # the step (run), the step or phase (rollback); None for a kill
    asked_at: float
    asked_by: str | None
    asked_face: str | None
    summary: str  # what it will do, one line
    reasons: tuple[str, ...]  # why it waits for a person
    params: dict[str, Any]  # force, cascade (run, rollback); pids, grace (kill)
    preview: tuple[str, ...] = ()  # what it will touch: the undo order, the processes to signal
    status: str = AWAITING
    decided_by: str | None = None
    decided_face: str | None = None
    decided_at: float | None = None
    note: str | None = None
    outcome: dict[str, Any] | None = None  # approval_done's data, once the approval was carried out
    # the process that decided and carries it out, and its host: if it dies before approval_done, a reader
    # on that host can tell (ops/approvals.py settle_if_approver_gone) instead of waiting forever
    decided_pid: int | None = None
    decided_ctime: str | float | None = None  # processes.start_of
    decided_host: str | None = None

    @property
    def open(self) -> bool:
        return self.status == AWAITING

    @property
    def settled(self) -> bool:
        """Nothing more will happen to it: denied, or approved and carried out (or refused when it was)."""
        return self.status == DENIED or (self.status == APPROVED and self.outcome is not None)

    def asker(self) -> str:
        return _person(self.asked_by, self.asked_face)

    def decider(self) -> str:
        return _person(self.decided_by, self.decided_face)

    def decision_text(self) -> str:
        """`denied by alice via console at 10:41: not now`, or `awaiting approval since 10:40`."""
        if self.open:
            return f"{AWAITING.replace('_', ' ')} since {_hm(self.asked_at)}"
        note = f": {self.note}" if self.note else ""
        return f"{self.status} by {self.decider()} at {_hm(self.decided_at)}{note}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "action": self.action, "target": self.target, "status": self.status,
                "summary": self.summary, "reasons": list(self.reasons), "preview": list(self.preview),
                "asked": {"who": self.asked_by, "face": self.asked_face, "at": self.asked_at},
                "decided": None if self.open else {"who": self.decided_by, "face": self.decided_face,
                                                    "at": self.decided_at, "note": self.note},
                "outcome": self.outcome}


def _person(who: str | None, face: str | None) -> str:
    if who and face:
        return f"{who} via {face}"
    return who or face or "?"


def _hm(at: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if at else "?"


def fold(events: Iterable[Event]) -> dict[int, Approval]:
    """Requests by id from their events (any order of kinds, in id order)."""
    out: dict[int, Approval] = {}
    for e in events:
        d = e.data
        if e.kind == EventKind.APPROVAL_ASKED:
            out[e.id] = Approval(e.id, d.get("action", "run"), e.step_id, e.at, e.who, e.face, d.get("summary", ""),
                                 tuple(d.get("reasons") or ()), dict(d.get("params") or {}),
                                 tuple(d.get("preview") or ()))
            continue
        req = out.get(e.run_id or -1)
        if req is None:
            continue
        if e.kind == EventKind.APPROVAL_DECIDED and req.open:
            out[req.id] = req._replace(status=APPROVED if d.get("decision") == APPROVED else DENIED,
                                       decided_by=e.who, decided_face=e.face, decided_at=e.at, note=d.get("note"),
                                       decided_pid=d.get("pid"), decided_ctime=d.get("pid_ctime"),
                                       decided_host=d.get("host"))
        elif e.kind == EventKind.APPROVAL_DONE and req.outcome is None:
            out[req.id] = req._replace(outcome=dict(d))
    return out


def open_request(conn: sqlite3.Connection, action: str, target: str | None) -> int | None:
    """The undecided request for the same action on the same target (asking twice gives the first one)."""
    rows = conn.execute(
        "SELECT a.id, a.data FROM events a WHERE a.kind = ? AND a.step_id IS ? AND NOT EXISTS "
        "(SELECT 1 FROM events d WHERE d.kind = ? AND d.run_id = a.id) ORDER BY a.id",
        (EventKind.APPROVAL_ASKED, target, EventKind.APPROVAL_DECIDED)).fetchall()
    for rid, data in rows:
        if json.loads(data).get("action") == action:
            return int(rid)
    return None


def check_undecided(conn: sqlite3.Connection, request_id: int) -> str | None:
    """The request's target while nobody decided it; Refused naming who did, or saying there is no such request."""
    row = conn.execute("SELECT step_id FROM events WHERE id = ? AND kind = ?",
                       (request_id, EventKind.APPROVAL_ASKED)).fetchone()
    if row is None:
        raise Refused(f"no request {request_id} awaits approval (no such request)")
    done = conn.execute("SELECT who, face, at, data FROM events WHERE kind = ? AND run_id = ? ORDER BY id LIMIT 1",
                        (EventKind.APPROVAL_DECIDED, request_id)).fetchone()
    if done is not None:
        who, face, at, data = done
        decision = json.loads(data).get("decision", "decided")
        raise Refused(f"request {request_id} was already {decision} by {_person(who, face)} at {_hm(at)}",
                      by=who, at=at)
    return row[0]
