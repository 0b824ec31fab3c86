"""Who holds a step right now, read inside a write transaction: runs begun and not ended, rollbacks in progress.

`begin_run` and `begin_rollback` check these under the same BEGIN IMMEDIATE lock, so a run and a rollback of
one step, started by two processes at once, cannot both pass.
"""

from __future__ import annotations

import json
import sqlite3
from typing import NamedTuple

from eagle_console.journal.kinds import EventKind


class OpenRollback(NamedTuple):
    id: int
    target: str
    started: float
    supervisor_pid: int | None
    supervisor_ctime: str | float | None  # processes.start_of
    host: str | None = None  # the machine its supervisor runs on
    begun: str | None = None  # processes.boot_now() at its begin (None: an older record)


class Holder(NamedTuple):
    id: int
    who: str | None
    at: float


def open_rollback_of(conn: sqlite3.Connection, step_id: str, ended: set[int] | frozenset[int] = frozenset()
                     ) -> Holder | None:
    """The rollback in progress (begun, not ended) whose steps include `step_id`."""
    for rid, who, at, data in conn.execute(
            "SELECT b.id, b.who, b.at, b.data FROM events b WHERE b.kind = ? AND NOT EXISTS "
            "(SELECT 1 FROM events e WHERE e.kind = ? AND e.run_id = b.id) ORDER BY b.id",
            (EventKind.ROLLBACK_BEGIN, EventKind.ROLLBACK_END)).fetchall():
        if rid not in ended and step_id in json.loads(data).get("steps", ()):
            return Holder(rid, who, at)
    return None


def open_action_runs(conn: sqlite3.Connection, step_id: str) -> list[Holder]:
    """Action runs of `step_id` begun and not ended (starting or running)."""
    rows = conn.execute(
        "SELECT b.id, b.who, b.at, b.data FROM events b WHERE b.kind = ? AND b.step_id = ? AND NOT EXISTS "
        "(SELECT 1 FROM events e WHERE e.kind = ? AND e.run_id = b.id)",
        (EventKind.RUN_BEGIN, step_id, EventKind.RUN_EXIT)).fetchall()
    return [Holder(rid, who, at) for rid, who, at, data in rows
            if json.loads(data).get("kind", "action") == "action"]


def open_rollbacks(conn: sqlite3.Connection, ended: set[int] | frozenset[int] = frozenset()) -> list[OpenRollback]:
    """Rollbacks without an end, with their supervisor once it reported (a ROLLBACK_PROC event)."""
    rows = conn.execute(
        "SELECT b.id, b.step_id, b.at, b.data, (SELECT p.data FROM events p WHERE p.kind = ? "
        "AND p.run_id = b.id ORDER BY p.id DESC LIMIT 1) FROM events b WHERE b.kind = ? AND NOT EXISTS "
        "(SELECT 1 FROM events e WHERE e.kind = ? AND e.run_id = b.id) ORDER BY b.id",
        (EventKind.ROLLBACK_PROC, EventKind.ROLLBACK_BEGIN, EventKind.ROLLBACK_END)).fetchall()
    out = []
    for rid, target, at, begin, proc in rows:
        if rid in ended:
            continue
        p = json.loads(proc) if proc else {}
        out.append(OpenRollback(rid, target or "", at, p.get("supervisor_pid"), p.get("supervisor_ctime"),
                                p.get("host"), json.loads(begin or "{}").get("begun")))
    return out
