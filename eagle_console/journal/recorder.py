"""The supervisor's writes to the journal, which must never kill it: what the journal cannot take now (a
full disk: ENOSPC; an I/O error) is held — in memory, and in the run's held slot (journal/heldslot.py) — and
written, in order, when it can be; the run's exit waits for them. A supervisor that dies meanwhile leaves
the slot to the readers (Engine.reconcile replays it). What could be neither written nor held is said in the
run's reason: exactly which records were not recorded.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from eagle_console.journal import EventKind, Journal, heldslot
from eagle_console.journal.exitslot import RETRY_S
from eagle_console.journal.faults import JournalError

WRITE_ERRORS = (JournalError, sqlite3.Error, OSError)  # a full disk, an I/O error, a vanished file
MAX_HELD = 100_000  # records held in memory; past this they are counted as not recorded
T = TypeVar("T")


def warn(text: str) -> None:
    """To the supervisor's own log — likely on the same full disk, so never fatal."""
    try:
        print(f"[eagle-console] {text}", file=sys.stderr, flush=True)
    except OSError:
        pass


def apply_record(journal: Journal, run_id: int, step_id: str, record: dict[str, Any], held: bool) -> None:
    """Write one record; `held` ones carry their sequence number and are written once (journal.append_held).
    Not held, the plain calls: a Ray job's supervisor writes to cluster.job_events.JobEvents, not a Journal."""
    once = {"held": int(record["seq"])} if held else {}
    kind = record["kind"]
    if kind == "result":
        journal.record_result(step_id, run_id, record["name"], record["value"], **once)
    elif kind == "ready":
        journal.record_ready(run_id, step_id, **once)
    elif kind == "proc":
        journal.record_proc(run_id, step_id, **once, **record["proc"])
    elif kind == "service_died" and held:
        journal.append_held(EventKind.SERVICE_DIED, step_id, run_id, once["held"], **record["data"])
    elif kind == "service_died":
        journal.append(EventKind.SERVICE_DIED, step_id, run_id, None, **record["data"])


class Recorder:
    """One run's records on their way to the journal."""

    def __init__(self, journal: Journal, run_id: int, step_id: str, slot: Path | None) -> None:
        self.journal, self.run_id, self.step_id, self.slot = journal, run_id, step_id, slot
        self.pending: list[dict[str, Any]] = []
        self.lost: list[dict[str, Any]] = []  # neither written nor held (past MAX_HELD)
        self.seq = 0
        self._next_try = 0.0

    # -- what the supervisor records -------------------------------------------------------------------
    def result(self, name: str, value: float | str) -> None:
        self._record({"kind": "result", "name": name, "value": value})

    def ready(self) -> None:
        self._record({"kind": "ready"})

    def proc(self, **proc: Any) -> None:
        self._record({"kind": "proc", "proc": proc})

    def service_died(self, **data: Any) -> None:
        self._record({"kind": "service_died", "data": data})

    # -- holding and retrying --------------------------------------------------------------------------
    def _record(self, record: dict[str, Any]) -> None:
        self.seq += 1
        record["seq"] = self.seq
        if not self.pending and self._write(record, held=False):
            return
        if len(self.pending) >= MAX_HELD:
            self.lost.append(record)
        else:
            self.pending.append(record)
        if len(self.pending) == 1:
            warn(f"the journal cannot take the run's records now; holding them (runs/{self.run_id}.held) and "
                 f"retrying every {RETRY_S:g}s")
        self._keep()

    def _write(self, record: dict[str, Any], held: bool) -> bool:
        try:
            apply_record(self.journal, self.run_id, self.step_id, record, held)
            return True
        except WRITE_ERRORS:
            return False

    def _keep(self) -> None:
        if self.slot is not None:
            heldslot.keep(self.slot, self.pending, self.lost)

    def flush(self) -> bool:
        """Write what is held, in order; True once nothing is."""
        if not self.pending:
            return True
        while self.pending:
            if not self._write(self.pending[0], held=True):
                self._keep()
                return False
            self.pending.pop(0)
        self._keep()
        warn("the journal took the held records")
        return True

    def retry(self) -> None:
        """From the supervisor's poll: a flush every RETRY_S while something is held."""
        if self.pending and time.monotonic() >= self._next_try:
            self._next_try = time.monotonic() + RETRY_S
            self.flush()

    def not_recorded(self) -> str | None:
        """What was neither recorded nor held, for the run's reason."""
        if not self.lost:
            return None
        return f"not recorded (the journal could not take them): {heldslot.unkept_text(self.lost)}"

    def release(self) -> None:
        if self.slot is not None and not self.pending:
            heldslot.release(self.slot)


def persist(write: Callable[[], T], what: str) -> T:
    """`write()` until the journal takes it (every RETRY_S): for a rollback's steps and end, whose supervisor
    must outlive a full disk rather than die of it."""
    said = False
    while True:
        try:
            return write()
        except WRITE_ERRORS as exc:
            if not said:
                warn(f"{what}: {exc}; retrying every {RETRY_S:g}s")
                said = True
        time.sleep(RETRY_S)
