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


def unmet(needs: Mapping[str, Iterable[str]], step_status: Mapping[str, str]) -> list[str]:
    """The needs not met: the one rule. A need is met when every step behind it is completed or skipped.

    `needs` maps each need id to the step ids behind it (a step: itself; a phase: its steps, none for an
    empty phase, which is met). Statuses absent from `step_status` are pending. Pure, so the journal's
    check inside its transaction, `next`, the tree and the detail line cannot disagree.
    """
    return [need for need, ids in needs.items() if any(step_status.get(i, "pending") not in DONE for i in ids)]


def need_steps(plan: Plan, ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each need id with the step ids behind it (a phase stands for all of its steps)."""
    out: dict[str, tuple[str, ...]] = {}
    for i in ids:
        phase = plan.phase(i)
        out[i] = tuple(s.id for s in phase.steps) if phase is not None else (i,)
    return out


def unmet_needs(plan: Plan, step: Step, step_status: Mapping[str, str]) -> list[str]:
    """The ids in `step.needs` that are not met (see `unmet`), in the order the plan names them."""
    return unmet(need_steps(plan, step.needs), step_status)
