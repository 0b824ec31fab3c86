"""Rollback as the operator sees it: what will be undone (plain and cascade order), then starting it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle_console.journal import Refused

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

    def items_for(self, cascade: bool) -> list[UndoItem]:
        return self.cascade_items if cascade else self.items

    def refusal_for(self, cascade: bool) -> str | None:
        return self.cascade_refused if cascade else self.refused


def plan_rollback_choice(engine: Engine, target: str) -> RollbackChoice:
    """Both orders, so the confirmation can offer `--cascade` when dependents refuse the plain one."""
    from eagle_console.engine.rollback import plan_rollback

    choice = RollbackChoice(target)
    try:
        choice.items = plan_rollback(engine, target, cascade=False)
    except Refused as exc:
        choice.refused = str(exc)
    try:
        choice.cascade_items = plan_rollback(engine, target, cascade=True)
    except Refused as exc:
        choice.cascade_refused = str(exc)
    return choice


def begin_rollback(engine: Engine, target: str, cascade: bool) -> str:
    from eagle_console.engine.rollback import start_rollback

    rollback_id, items = start_rollback(engine, target, cascade=cascade)
    return f"rolling back {target}: {len(items)} step(s) (rollback {rollback_id})"
