"""What a read-only journal learns without writing: runs (and rollbacks) whose supervisor died, and the pids
and readiness a node run's Ray job reported (journaled by the next reader that can write).

A reader that may not write (`--readonly`, `status`, `export`) still must not show a dead run as running:
the engine's reconcile ends it here, in memory. A journaled end or a newer status always wins over these.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, NamedTuple

from eagle_console.journal.kinds import EventKind


class DerivedEnd(NamedTuple):
    at: float
    data: dict[str, Any]


class Derived:
    def __init__(self) -> None:
        self.exits: dict[int, DerivedEnd] = {}
        # step id → (id of the status event it replaces, status, reason, run id)
        self.statuses: dict[str, tuple[int, str, str | None, int]] = {}
        self.rollback_ends: dict[int, DerivedEnd] = {}
        self.procs: dict[int, dict[str, Any]] = {}  # run id -> pids (and ready_at) a node run's job reported

    def record_proc(self, run_id: int, proc: dict[str, Any]) -> None:
        self.procs.setdefault(run_id, {}).update(proc)

    def touched(self) -> set[int]:
        return set(self.exits) | set(self.procs)

    def end_run(self, conn: sqlite3.Connection, run_id: int, step_id: str, *, exit_code: int | None,
                outcome: str, reason: str | None, step_status: str | None) -> bool:
        if run_id in self.exits or conn.execute("SELECT 1 FROM events WHERE kind = ? AND run_id = ?",
                                                (EventKind.RUN_EXIT, run_id)).fetchone():
            return False
        self.exits[run_id] = DerivedEnd(time.time(), {"exit_code": exit_code, "outcome": outcome, "reason": reason})
        row = conn.execute("SELECT id, run_id FROM events WHERE kind = ? AND step_id = ? ORDER BY id DESC LIMIT 1",
                           (EventKind.STATUS, step_id)).fetchone()
        if step_status and row is not None and row[1] == run_id:
            self.statuses[step_id] = (row[0], step_status, reason, run_id)
        return True

    def end_rollback(self, rollback_id: int, target: str, **data: Any) -> bool:
        if rollback_id in self.rollback_ends:
            return False
        self.rollback_ends[rollback_id] = DerivedEnd(time.time(), {"target": target, **data})
        return True

    def apply_states(self, states: dict[str, Any]) -> dict[str, Any]:
        """`states` (StepState by step) with the derived statuses whose status event is still the latest."""
        for step_id, (replaces, status, reason, run_id) in self.statuses.items():
            cur = states.get(step_id)
            if cur is not None and cur.event_id == replaces:
                states[step_id] = cur._replace(status=status, who=None, run_id=run_id, reason=reason)
        return states

    def apply_run(self, run: Any) -> None:
        for key, value in self.procs.get(run.id, {}).items():
            if getattr(run, key, None) is None and hasattr(run, key):
                setattr(run, key, value)
        end = self.exits.get(run.id)
        if end is not None and run.ended is None:
            run.ended, run.exit_code = end.at, end.data["exit_code"]
            run.outcome, run.reason = end.data["outcome"], end.data["reason"]


def open_readonly(path: Path, schema: str) -> sqlite3.Connection:
    """The journal opened `mode=ro` (nothing can be written to it); a journal not created yet reads empty."""
    if not path.exists() or path.stat().st_size == 0:  # not created yet, or truncated to nothing
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.executescript(schema)
        return conn
    # A folder we cannot write (a read-only mount): SQLite could not create the WAL index (-shm) there, so
    # the file is opened immutable — no locks, no index; nothing writes to a read-only mount meanwhile.
    query = "?mode=ro" if os.access(path.parent, os.W_OK) else "?mode=ro&immutable=1"
    conn = sqlite3.connect(path.resolve().as_uri() + query, uri=True, timeout=30.0, isolation_level=None,
                           check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn
