"""What the console polls, without Textual: a journal snapshot and the plan file's stamp.

Everything here blocks (SQLite, stat, TOML parsing), so the App calls it from a thread worker only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from eagle_console.plan.model import EMPTY

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Note, Run, StepState
    from eagle_console.journal.approvals import Approval
    from eagle_console.plan.model import Plan


class Snapshot(NamedTuple):
    """The journal as the Plan pane and the Detail line need it, read in one go."""

    event_id: int
    states: Mapping[str, StepState] = EMPTY
    runs: Mapping[str, Run] = EMPTY  # latest action run per step
    notes: Mapping[str, list[Note]] = EMPTY
    approvals: tuple[Approval, ...] = ()  # requests awaiting a person (an agent's run, rollback, kill), oldest first

    def statuses(self) -> dict[str, str]:
        return {k: v.status for k, v in self.states.items()}

    def awaiting(self, item_id: str | None) -> Approval | None:
        """The request awaiting approval on this step or phase, if any."""
        return next((a for a in self.approvals if item_id is not None and a.target == item_id), None)


def read_snapshot(journal: Journal) -> Snapshot:
    # Read the id first: a change landing during the reads is seen again on the next poll.
    event_id = journal.last_event_id()
    runs: dict[str, Run] = {}
    for run in journal.runs():
        if run.kind == "action":
            runs[run.step_id] = run  # runs() is in event order, so the last one wins
    notes: dict[str, list[Note]] = {}
    for note in journal.notes():
        notes.setdefault(note.step_id, []).append(note)
    return Snapshot(event_id, journal.states(), runs, notes, tuple(a for a in journal.approvals() if a.open))


class FileStamp(NamedTuple):
    mtime_ns: int
    size: int
    ino: int


def stamp(path: Path) -> FileStamp | None:
    """mtime, size and inode: an editor that writes a new file and renames it changes the inode."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileStamp(st.st_mtime_ns, st.st_size, st.st_ino)


class PlanLoad(NamedTuple):
    """The outcome of reloading the plan file: a plan, or the first error as file:line:column: message."""

    plan: Plan | None
    error: str | None


def reload_plan(path: Path, state_dir: Path | None) -> PlanLoad:
    from eagle_console.plan.loader import PlanError, load_plan

    try:
        return PlanLoad(load_plan(path, state_dir=state_dir), None)
    except PlanError as exc:
        return PlanLoad(None, exc.format_first())
