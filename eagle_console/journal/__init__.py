"""The journal: what happened to a plan (statuses, marks, notes, runs, results), in SQLite."""

from eagle_console.journal.kinds import EventKind
from eagle_console.journal.operator import current_operator
from eagle_console.journal.records import Event, Note, Refused, Result, Run, StepState
from eagle_console.journal.status import DONE, STATUSES, phase_status, plan_statuses, unmet_needs
from eagle_console.journal.store import Journal

__all__ = [
    "DONE", "STATUSES", "Event", "EventKind", "Journal", "Note", "Refused", "Result", "Run", "StepState",
    "current_operator", "phase_status", "plan_statuses", "unmet_needs",
]
