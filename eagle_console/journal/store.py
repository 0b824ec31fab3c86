"""The SQLite journal: append-only events; statuses, runs, notes and results are folds over them.

Several consoles and CLI invocations share one database: WAL mode, synchronous=FULL, and every mutation
that has a precondition checks it inside its own `BEGIN IMMEDIATE` transaction, so two operators pressing
run on one step start it once. UPDATE and DELETE are refused by triggers: history is never rewritten.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.journal.claims import OpenRollback, open_action_runs, open_rollback_of, open_rollbacks
from eagle_console.journal.derived import Derived, open_readonly
from eagle_console.journal.faults import (
    JournalError,
    check_version,
    closed_to_us,
    file_identity,
    has_column,
    history_lost_note,
    replaced_note,
    said,
)
from eagle_console.journal.kinds import RUN_KINDS, EventKind
from eagle_console.journal.netfs import network_note
from eagle_console.journal.operator import current_operator
from eagle_console.journal.records import Event, Note, Refused, Result, Run, StepState
from eagle_console.journal.runfold import RunFold
from eagle_console.journal.status import STATUSES, unmet
from eagle_console.statedir import journal_path, private_database

if TYPE_CHECKING:
    from eagle_console.journal.approvals import Approval
    from eagle_console.plan.model import Plan

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL    NOT NULL,
    kind    TEXT    NOT NULL,
    step_id TEXT,
    run_id  INTEGER,
    who     TEXT,
    data    TEXT    NOT NULL DEFAULT '{}',
    face    TEXT
);
CREATE INDEX IF NOT EXISTS events_step ON events (step_id, kind, id);
CREATE INDEX IF NOT EXISTS events_run ON events (run_id, id);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
"""


def _ts_text(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "?"


class Journal:
    def __init__(self, path: Path, readonly: bool = False, face: str | None = None) -> None:
        self.path = Path(path)
        self.readonly = readonly
        # Which face writes through this journal (console | cli | agent:<client>): recorded beside `who` on every
        # event that names someone. None for the engine's own processes (supervisors, actions).
        self.face = face
        self._acting = threading.local()  # acting_as(): an approved request carried out for its asker
        # Read-only (`--readonly`, status, export): runs found dead are ended here, in memory, never on disk.
        self._derived = Derived()
        self._lock = threading.RLock()
        # the incremental fold of runs(): every run, by id and by step, and the last event id folded
        self._fold = RunFold()  # runs(), folded incrementally (journal/runfold.py)
        try:
            self._open(readonly)
        except PermissionError as exc:  # another user's state dir (issue 26's shared node)
            raise closed_to_us(self.path, exc) from None
        self._identity = file_identity(self.path)  # to notice the file deleted or replaced while open
        self._network = network_note(self.path)  # read once: a folder does not move to another filesystem

    def _open(self, readonly: bool) -> None:
        with said(self.path):
            if readonly:
                self._conn = open_readonly(self.path, SCHEMA)
                check_version(self._conn, self.path, migrate=False)
            else:
                private_database(self.path)
                # One connection per Journal, shared by the console's worker threads under a lock.
                self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                             check_same_thread=False)
                with self._lock:
                    self._init_schema()
            # A read-only journal of schema 1 (never migrated by a reader) has no `face` column: read it as NULL.
            self._face_col = "face" if has_column(self._conn, "events", "face") else "NULL"
            self._cols = f"{self._COLS}, {self._face_col}"

    def _init_schema(self) -> None:
        """WAL mode and the schema, safe when several processes open a new journal at the same instant.

        Switching to WAL and a deferred CREATE can fail with "database is locked" at once (SQLite does not
        wait when waiting could deadlock), so both are retried; the schema is written under BEGIN IMMEDIATE.
        """
        deadline = time.monotonic() + 30.0
        while True:
            try:
                self._conn.execute("PRAGMA busy_timeout=30000")
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.executescript("BEGIN IMMEDIATE;\n" + SCHEMA)
                check_version(self._conn, self.path, migrate=True)
                self._conn.execute("COMMIT")
                return
            except JournalError:
                self._conn.execute("ROLLBACK")
                raise
            except sqlite3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def file_note(self) -> str | None:
        """What is wrong with the file behind this journal, if anything: deleted or replaced while open,
        empty beside the logs of earlier runs (deleted or truncated before it was opened), or on a network
        filesystem (journal/netfs.py)."""
        return (replaced_note(self.path, self._identity) or history_lost_note(self.path, self.last_event_id())
                or self._network)

    @classmethod
    def for_plan(cls, plan: Plan, readonly: bool = False, face: str | None = None) -> Journal:
        return cls(journal_path(plan.state_dir), readonly=readonly, face=face)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- low level -------------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock before any precondition is read."""
        if self.readonly:
            raise Refused(f"the journal {self.path} is open read-only")
        with self._lock, said(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _insert(self, conn: sqlite3.Connection, event_kind: EventKind, step_id: str | None = None,
                run_id: int | None = None, who: str | None = None, /, **data: Any) -> int:
        face = self._face() if who is not None else None  # an event that names someone says through which face
        cur = conn.execute(
            "INSERT INTO events (at, kind, step_id, run_id, who, data, face) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (time.time(), event_kind, step_id, run_id, who, json.dumps(data, default=str), face),
        )
        return int(cur.lastrowid)

    @contextmanager
    def acting_as(self, who: str | None, face: str | None) -> Iterator[None]:
        """Within this thread, what is written is recorded as done by `who` through `face`: a person's approval
        carries out an agent's request as the agent's (the approval itself names the person)."""
        before = getattr(self._acting, "actor", None)
        self._acting.actor = (who, face)
        try:
            yield
        finally:
            self._acting.actor = before

    def _who(self, who: str | None) -> str:
        actor = getattr(self._acting, "actor", None)
        return who or (actor[0] if actor and actor[0] else None) or current_operator()

    def _face(self) -> str | None:
        actor = getattr(self._acting, "actor", None)
        return actor[1] if actor else self.face

    def append(self, event_kind: EventKind, step_id: str | None = None, run_id: int | None = None,
               who: str | None = None, /, **data: Any) -> int:
        with self._tx() as conn:
            return self._insert(conn, event_kind, step_id, run_id, who, **data)

    def append_held(self, event_kind: EventKind, step_id: str, run_id: int, held: int | None, /,
                    **data: Any) -> int:
        """Append a run's event; with `held` (its number in the supervisor's held slot, journal/heldslot.py)
        only once: the supervisor retrying and a reader replaying the slot write it once. 0 if it was there."""
        with self._tx() as conn:
            if self._held_done(conn, event_kind, run_id, held):
                return 0
            return self._insert(conn, event_kind, step_id, run_id, None, **data,
                                **({"held": held} if held is not None else {}))

    @staticmethod
    def _held_done(conn: sqlite3.Connection, event_kind: EventKind, run_id: int, held: int | None) -> bool:
        return held is not None and conn.execute(
            "SELECT 1 FROM events WHERE run_id = ? AND kind = ? AND json_extract(data, '$.held') = ?",
            (run_id, event_kind, held)).fetchone() is not None

    def _rows(self, sql: str, args: tuple = ()) -> list[Event]:
        with self._lock, said(self.path):
            rows = self._conn.execute(sql, args).fetchall()
        return [Event(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7]) for r in rows]

    _COLS = "id, at, kind, step_id, run_id, who, data"  # + face (self._cols)

    def last_event_id(self) -> int:
        """Cheap change detection for consoles polling the journal."""
        with self._lock, said(self.path):
            row = self._conn.execute("SELECT MAX(id) FROM events").fetchone()
        return int(row[0] or 0)

    def events(self, since_id: int = 0, step_id: str | None = None) -> list[Event]:
        if step_id is None:
            return self._rows(f"SELECT {self._cols} FROM events WHERE id > ? ORDER BY id", (since_id,))
        return self._rows(f"SELECT {self._cols} FROM events WHERE id > ? AND step_id = ? ORDER BY id",
                          (since_id, step_id))

    # -- statuses, marks, notes --------------------------------------------------------------------------

    def _states(self, conn: sqlite3.Connection) -> dict[str, StepState]:
        rows = conn.execute(
            f"SELECT e.id, e.at, e.who, e.run_id, e.data, e.step_id, {self._face_col} FROM events e "
            "JOIN (SELECT MAX(id) AS id FROM events WHERE kind = ? GROUP BY step_id) m ON e.id = m.id",
            (EventKind.STATUS,)).fetchall()
        out: dict[str, StepState] = {}
        for eid, at, who, run_id, data, step_id, face in rows:
            d = json.loads(data)
            out[step_id] = StepState(d["status"], at, who, eid, run_id, d.get("reason"), face)
        return out

    def states(self) -> dict[str, StepState]:
        """The last status event of every step that has one (steps without one are pending)."""
        with self._lock:
            return self._derived.apply_states(self._states(self._conn))

    def statuses(self) -> dict[str, str]:
        return {k: v.status for k, v in self.states().items()}

    def mark(self, step_id: str, status: str, note: str | None = None, who: str | None = None) -> int:
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; one of: {', '.join(STATUSES)}")
        who = self._who(who)
        with self._tx() as conn:
            eid = self._insert(conn, EventKind.STATUS, step_id, None, who, status=status, source="mark")
            if note:
                self._insert(conn, EventKind.NOTE, step_id, None, who, text=note)
            return eid

    def set_status(self, step_id: str, status: str, run_id: int | None = None, reason: str | None = None,
                   source: str = "engine", who: str | None = None) -> int:
        with self._tx() as conn:
            return self._insert(conn, EventKind.STATUS, step_id, run_id, who, status=status, source=source,
                                reason=reason)

    def note(self, step_id: str, text: str, who: str | None = None) -> int:
        return self.append(EventKind.NOTE, step_id, None, self._who(who), text=text)

    def notes(self, step_id: str | None = None) -> list[Note]:
        return [Note(e.step_id or "", e.data.get("text", ""), e.who, e.at, e.face)
                for e in self._kind(EventKind.NOTE, step_id)]

    def _kind(self, kind: EventKind, step_id: str | None = None) -> list[Event]:
        if step_id is None:
            return self._rows(f"SELECT {self._cols} FROM events WHERE kind = ? ORDER BY id", (kind,))
        return self._rows(f"SELECT {self._cols} FROM events WHERE kind = ? AND step_id = ? ORDER BY id",
                          (kind, step_id))

    def history(self, step_id: str) -> list[Event]:
        return self.events(0, step_id)

    # -- results -------------------------------------------------------------------------------------------

    def record_result(self, step_id: str, run_id: int | None, name: str, value: float | str,
                      held: int | None = None) -> int:
        if held is not None and run_id is not None:
            return self.append_held(EventKind.RESULT, step_id, run_id, held, name=name, value=value)
        return self.append(EventKind.RESULT, step_id, run_id, None, name=name, value=value)

    def results(self, step_id: str | None = None) -> list[Result]:
        return [Result(e.step_id or "", e.run_id, e.data["name"], e.data["value"], e.at)
                for e in self._kind(EventKind.RESULT, step_id)]

    # -- runs ----------------------------------------------------------------------------------------------

    def begin_run(self, step_id: str, *, command: str, log: str | None,
                  needs: tuple[str, ...] | Mapping[str, tuple[str, ...]] = (),
                  kind: str = "action", service: bool = False, env: dict[str, str] | None = None,
                  who: str | None = None, force: bool = False,
                  needs_status: dict[str, str] | None = None) -> int:
        """Record the start of a run and set the step in progress — or refuse, writing nothing.

        `needs` are step ids (phases already expanded by the caller), or each need id with the step ids
        behind it (`journal.status.need_steps`); `needs_status` may supply statuses the journal lacks. The
        check is `journal.status.unmet`, the rule `next` and the tree use; check and write share one
        IMMEDIATE transaction.
        """
        who = self._who(who)
        with self._tx() as conn:
            states = self._states(conn)
            if kind == "action" and (rb := open_rollback_of(conn, step_id)):
                raise Refused(f"step {step_id} is being rolled back (rollback {rb[0]} started by {rb[1] or '?'} "
                              f"at {_ts_text(rb[2])}): wait for it to end", by=rb[1], at=rb[2])
            if not force:
                cur = states.get(step_id)
                if cur and cur.status == "in_progress":
                    started = f" by {cur.who}" if cur.who else ""
                    raise Refused(f"step {step_id} is already in progress (started{started} at "
                                  f"{_ts_text(cur.at)})", by=cur.who, at=cur.at)
                known = {**(needs_status or {}), **{sid: st.status for sid, st in states.items()}}
                if missing := unmet(needs if isinstance(needs, Mapping) else {n: (n,) for n in needs}, known):
                    raise Refused(f"step {step_id} needs {', '.join(missing)} completed first")
            # this_host: the machine whose processes the run's are; boot_now: its begin by the boot clock
            from eagle_console.processes import boot_now, this_host

            run_id = self._insert(conn, EventKind.RUN_BEGIN, step_id, None, who, kind=kind, command=command,
                                  log=log, service=service, env=env or {}, host=this_host(), begun=boot_now())
            if kind == "action":
                self._insert(conn, EventKind.STATUS, step_id, run_id, who, status="in_progress", source="run")
            return run_id

    def record_proc(self, run_id: int, step_id: str, held: int | None = None, **proc: Any) -> int:
        """Supervisor and action process ids (supervisor_pid, supervisor_ctime, pid, pid_ctime, pgid, sid).
        Read-only: kept in memory (a node run's pids, read from its job's log by `status`)."""
        if self.readonly:
            with self._lock:
                self._derived.record_proc(run_id, proc)
            return 0
        return self.append_held(EventKind.RUN_PROC, step_id, run_id, held, **proc)

    def record_ready(self, run_id: int, step_id: str, held: int | None = None) -> None:
        if self.readonly:
            with self._lock:
                self._derived.record_proc(run_id, {"ready_at": time.time()})
            return
        with self._tx() as conn:
            if self._held_done(conn, EventKind.RUN_READY, run_id, held):
                return
            self._insert(conn, EventKind.RUN_READY, step_id, run_id, None,
                         **({"held": held} if held is not None else {}))
            if self._owns_status(conn, step_id, run_id):
                self._insert(conn, EventKind.STATUS, step_id, run_id, None, status="completed", source="ready")

    @staticmethod
    def _owns_status(conn: sqlite3.Connection, step_id: str, run_id: int) -> bool:
        row = conn.execute("SELECT run_id FROM events WHERE kind = ? AND step_id = ? "
                           "ORDER BY id DESC LIMIT 1", (EventKind.STATUS, step_id)).fetchone()
        return row is not None and row[0] == run_id

    def end_run(self, run_id: int, step_id: str, *, exit_code: int | None, outcome: str,
                reason: str | None = None, step_status: str | None = None) -> bool:
        """Record a run's end (once: a second end of the same run is ignored and returns False).

        The step's status changes only while the latest status event still belongs to this run: a mark or a
        newer run made since then wins.
        """
        if self.readonly:
            with self._lock:
                return self._derived.end_run(self._conn, run_id, step_id, exit_code=exit_code, outcome=outcome,
                                             reason=reason, step_status=step_status)
        with self._tx() as conn:
            if conn.execute("SELECT 1 FROM events WHERE kind = ? AND run_id = ?",
                            (EventKind.RUN_EXIT, run_id)).fetchone():
                return False
            self._insert(conn, EventKind.RUN_EXIT, step_id, run_id, None, exit_code=exit_code, outcome=outcome,
                         reason=reason)
            if step_status and self._owns_status(conn, step_id, run_id):
                self._insert(conn, EventKind.STATUS, step_id, run_id, None, status=step_status, source="run",
                             reason=reason)
            return True

    def runs(self, step_id: str | None = None) -> list[Run]:
        """Every run (of one step), in start order, folded incrementally (journal/runfold.py). The Run
        objects are shared between calls: treat them as read-only."""
        with self._lock:
            fold = self._folded()
            return list(fold.runs if step_id is None else fold.by_step.get(step_id, []))

    def _folded(self) -> RunFold:
        """The runs folded up to now, with what a read-only reader derived applied (under the lock)."""
        self._fold_runs()
        for run_id in self._derived.touched():
            run = self._fold.index.get(run_id)
            if run is not None:
                self._derived.apply_run(run)
        return self._fold

    def _fold_runs(self) -> None:
        if self._fold.seen and self.last_event_id() < self._fold.seen:  # the file was replaced: fold again
            self._fold = RunFold()
        kinds = f"kind IN ({', '.join('?' * len(RUN_KINDS))})"
        self._fold.apply(self._rows(f"SELECT {self._cols} FROM events WHERE id > ? AND {kinds} ORDER BY id",
                                    (self._fold.seen, *RUN_KINDS)), Run)

    def run(self, run_id: int) -> Run | None:
        with self._lock:
            self.runs()
            return self._fold.index.get(run_id)

    def run_number(self, run_id: int) -> int | None:
        """Which run of its step (and kind) this is, counting from 1: what people call "run 3 of 0.2"; the
        run id is the journal's, across every step."""
        with self._lock:
            run = self.run(run_id)
            if run is None:
                return None
            same = [r.id for r in self._fold.by_step.get(run.step_id, []) if r.kind == run.kind]
            return same.index(run_id) + 1

    def run_label(self, run_id: int) -> str:
        """`run 3 of step 0.2 (id 4817)`, the one way every face names a run."""
        with self._lock:
            number = self.run_number(run_id)  # folds the journal once; the run is then in the fold's index
            run = self._fold.index.get(run_id)
        if run is None or number is None:
            return f"run id {run_id}"
        what = "rollback" if run.kind == "rollback" else "run"
        return f"{what} {number} of step {run.step_id} (id {run_id})"

    def latest_run(self, step_id: str, kind: str | None = "action") -> Run | None:
        # from the end, without a copy: the panes ask each poll, and a long history has thousands of runs
        with self._lock:
            return next((r for r in reversed(self._folded().by_step.get(step_id, []))
                         if kind is None or r.kind == kind), None)

    def latest_service_run(self) -> Run | None:
        """The latest service run (of any step) that has a log: what the Server and Metrics tabs follow."""
        with self._lock:
            return next((r for r in reversed(self._folded().services) if r.log), None)

    def open_runs(self) -> list[Run]:
        with self._lock:
            self._fold_runs()
            runs = list(self._fold.open.values())
            for run in runs:  # ends a read-only reader derived (see Derived)
                self._derived.apply_run(run)
            return [r for r in runs if not r.finished]

    # -- rollbacks -----------------------------------------------------------------------------------------

    def begin_rollback(self, target: str, steps: list[str], stops: dict[str, int], who: str | None = None,
                       **data: Any) -> int:
        """Record a rollback's start — or refuse, writing nothing, while one of its steps is being run
        (unless the rollback stops that very run: `stops` maps step id → run id) or rolled back already.
        Checked in the same IMMEDIATE transaction as `begin_run`'s check, so a run and a rollback of one step
        cannot both pass."""
        with self._tx() as conn:
            for step_id in steps:
                if rb := open_rollback_of(conn, step_id):
                    raise Refused(f"step {step_id} is already being rolled back (rollback {rb[0]} started by "
                                  f"{rb[1] or '?'} at {_ts_text(rb[2])})", by=rb[1], at=rb[2])
                for run_id, run_who, at in open_action_runs(conn, step_id):
                    if stops.get(step_id) != run_id:
                        raise Refused(f"step {step_id} is being run (run {run_id}, started by {run_who or '?'} "
                                      f"at {_ts_text(at)}): wait for it to end, then roll it back", by=run_who,
                                      at=at)
            from eagle_console.processes import boot_now

            return self._insert(conn, EventKind.ROLLBACK_BEGIN, target, None, self._who(who),
                                steps=steps, begun=boot_now(), **data)

    def open_rollbacks(self) -> list[OpenRollback]:
        """Rollbacks without an end (nor one derived in memory), with their supervisor once it reported."""
        with self._lock:
            return open_rollbacks(self._conn, set(self._derived.rollback_ends))

    def end_rollback(self, rollback_id: int, target: str, *, outcome: str, **data: Any) -> bool:
        """Record a rollback's end once (a second end is ignored and returns False)."""
        if self.readonly:
            return self._derived.end_rollback(rollback_id, target, outcome=outcome, **data)
        with self._tx() as conn:
            if conn.execute("SELECT 1 FROM events WHERE kind = ? AND run_id = ?",
                            (EventKind.ROLLBACK_END, rollback_id)).fetchone():
                return False
            self._insert(conn, EventKind.ROLLBACK_END, target, rollback_id, None, outcome=outcome, **data)
            return True

    def rollback_end(self, rollback_id: int) -> dict[str, Any] | None:
        """The data of the rollback's end (journaled, or derived in memory), or None while it goes on."""
        for e in self._rows(f"SELECT {self._cols} FROM events WHERE kind = ? AND run_id = ? ORDER BY id LIMIT 1",
                            (EventKind.ROLLBACK_END, rollback_id)):
            return e.data
        derived = self._derived.rollback_ends.get(rollback_id)
        return derived.data if derived else None

    # -- approvals (journal/approvals.py) ------------------------------------------------------------------

    def ask_approval(self, action: str, target: str | None, **data: Any) -> tuple[int, bool]:
        """Record a request for a person's approval; (its id, True) — or the undecided request for the same
        action and target, (its id, False): an agent asking again gets the first one."""
        from eagle_console.journal import approvals

        with self._tx() as conn:
            existing = approvals.open_request(conn, action, target)
            if existing is not None:
                return existing, False
            return self._insert(conn, EventKind.APPROVAL_ASKED, target, None, self._who(None), action=action,
                                **data), True

    def decide_approval(self, request_id: int, approve: bool, note: str | None = None) -> None:
        """Approve or deny a request, once: Refused when it is unknown or somebody decided it first."""
        import socket  # here, not at the top: every CLI command opens a journal, few decide (~3 ms to import)

        from eagle_console.journal import approvals
        from eagle_console.processes import start_of

        with self._tx() as conn:
            target = approvals.check_undecided(conn, request_id)
            self._insert(conn, EventKind.APPROVAL_DECIDED, target, request_id, self._who(None),
                         decision=approvals.APPROVED if approve else approvals.DENIED, note=note or None,
                         pid=os.getpid(), pid_ctime=start_of(os.getpid()), host=socket.gethostname())

    def approval_done(self, request_id: int, target: str | None, **outcome: Any) -> int:
        """What carrying out an approved request started (run_id, rollback_id, kill) or why it could not (error)."""
        return self.append(EventKind.APPROVAL_DONE, target, request_id, None, **outcome)

    def approvals(self) -> list[Approval]:
        """Every request, in the order asked."""
        from eagle_console.journal import approvals

        kinds = ", ".join("?" * len(approvals.KINDS))
        return list(approvals.fold(self._rows(
            f"SELECT {self._cols} FROM events WHERE kind IN ({kinds}) ORDER BY id", approvals.KINDS)).values())

    def approval(self, request_id: int) -> Approval | None:
        return next((a for a in self.approvals() if a.id == request_id), None)
