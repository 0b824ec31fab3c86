"""Rollback as the operator sees it: what will be undone (plain and cascade order), starting it, its end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.figures import counted
from eagle_console.journal import Refused
from eagle_console.ops.hints import NEUTRAL, Hints, refusal_text
from eagle_console.ops.logs import rollback_log_path

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.engine.spec import UndoItem


@dataclass
class RollbackChoice:
    """What `u` will undo: the plain order, or (when dependents block it) the cascade order."""

    target: str
    items: list[UndoItem] = field(default_factory=list)  # without cascade; empty when refused
    refused: str | None = None  # why the plain rollback is refused
    cascade_items: list[UndoItem] = field(default_factory=list)
    cascade_refused: str | None = None
    phase: bool = False  # the target is a phase (its completed steps), not a step

    def items_for(self, cascade: bool) -> list[UndoItem]:
        return self.cascade_items if cascade else self.items

    def refusal_for(self, cascade: bool) -> str | None:
        return self.cascade_refused if cascade else self.refused


def plan_rollback_choice(engine: Engine, target: str, hints: Hints = NEUTRAL) -> RollbackChoice:
    """Both orders, so the confirmation can offer cascade when dependents refuse the plain one."""
    choice = RollbackChoice(target, phase=engine.plan.phase(target) is not None)
    try:
        choice.items = plan(engine, target, cascade=False)
    except Refused as exc:
        choice.refused = refusal_text(exc, hints)
    try:
        choice.cascade_items = plan(engine, target, cascade=True)
    except Refused as exc:
        choice.cascade_refused = refusal_text(exc, hints)
    return choice


def plan(engine: Engine, target: str, cascade: bool = False, force: bool = False) -> list[UndoItem]:
    """What will be undone, in order; raises Refused (`fix` says whether cascade or force gets past it)."""
    from eagle_console.engine.rollback import plan_rollback

    return plan_rollback(engine, target, cascade, force)


class RollbackStarted(NamedTuple):
    rollback_id: int
    items: list[UndoItem]
    log: Path  # where its supervisor writes (ops.logs.rollback_log_path, as the engine wrote it)


def start(engine: Engine, target: str, cascade: bool = False, force: bool = False,
          who: str | None = None) -> RollbackStarted:
    """Hand the undo order to a detached supervisor; raises Refused as `plan` does."""
    from eagle_console.engine.rollback import start_rollback

    rollback_id, items = start_rollback(engine, target, cascade, force, who=who)
    return RollbackStarted(rollback_id, items, rollback_log_path(engine.plan, rollback_id))


def begin_rollback(engine: Engine, target: str, cascade: bool) -> str:
    started = start(engine, target, cascade=cascade)
    what = f"phase {target}" if engine.plan.phase(target) is not None else target
    return f"rolling back {what}: {counted(len(started.items), 'step')} (rollback {started.rollback_id})"


SUPERVISOR_DIED = "the rollback's supervisor died ({reason}); run the rollback again to resume it"


def wait_outcome(engine: Engine, rollback_id: int, poll_s: float = 0.2) -> dict[str, Any]:
    """Wait for the rollback's end: its `rollback_end` data (`outcome`, `failed_step`, `reason`).

    Raises Refused when its supervisor died without one (asking again resumes where it stopped).
    """
    from eagle_console.engine.rollback import rollback_outcome

    while (outcome := rollback_outcome(engine, rollback_id)) is None:
        engine.reconcile()  # a dead supervisor ends the rollback as `lost`, whoever notices it first
        time.sleep(poll_s)
    if outcome.get("outcome") == "lost":
        raise Refused(SUPERVISOR_DIED.format(reason=outcome.get("reason") or "no reason recorded"))
    return outcome
