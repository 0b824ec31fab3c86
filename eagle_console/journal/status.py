"""Statuses and how a phase's status follows from its steps'."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan, Step

STATUSES = ("pending", "in_progress", "completed", "failed", "skipped", "rolled_back")
DONE = frozenset({"completed", "skipped"})


def phase_status(step_statuses: Iterable[str]) -> str:
    """All completed or skipped → completed; any started while others are not → in_progress; else pending."""
    statuses = list(step_statuses)
    if statuses and all(s in DONE for s in statuses):
        return "completed"
    if any(s in ("in_progress", "failed", "completed") for s in statuses):
        return "in_progress"
    return "pending"


def plan_statuses(plan: Plan, step_status: Mapping[str, str]) -> dict[str, str]:
    """Status of every step (pending when the journal has none) and every phase (derived)."""
    out: dict[str, str] = {}
    for phase in plan.phases:
        for step in phase.steps:
            out[step.id] = step_status.get(step.id, "pending")
        out[phase.id] = phase_status(out[s.id] for s in phase.steps)
    return out


def unmet_needs(plan: Plan, step: Step, step_status: Mapping[str, str]) -> list[str]:
    """The ids in `step.needs` that are not completed or skipped (a phase by its derived status)."""
    derived = plan_statuses(plan, step_status)
    return [n for n in step.needs if derived.get(n, "pending") not in DONE]
