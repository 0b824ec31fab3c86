"""Run, next and rollback for the console, plus the notification each journal event deserves.

Plain functions over the engine (no Textual): the App calls them from thread workers, and they return
what the operator should read, so the console and the CLI say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from eagle_console.journal import Refused

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.engine.spec import UndoItem
    from eagle_console.journal import Event, Run
    from eagle_console.plan.model import Plan, Step


class NextChoice(NamedTuple):
    """What `n` found: a step to run, a manual step to do by hand, or nothing (with why)."""

    step: Step | None
    message: str | None = None  # set when there is nothing to start

    @property
    def runnable(self) -> bool:
        return self.step is not None and self.message is None


def choose_next(engine: Engine) -> NextChoice:
    engine.reconcile()
    step = engine.next_step()
    if step is None:
        return NextChoice(None, engine.why_no_next())
    if step.action is None:
        return NextChoice(step, f"{step.id} is manual: do it by hand and mark it")
    return NextChoice(step)


def start_step(engine: Engine, step_id: str) -> str:
    """Start a step; returns the line to notify. Raises Refused with the engine's reason."""
    run_id = engine.start(step_id)
    return f"{step_id} started (run {run_id})"


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


def running_runs(engine: Engine) -> list[Run]:
    """Runs still going (actions, services, rollbacks): what keeps running after `q`."""
    engine.reconcile()
    return engine.journal.open_runs()


def keep_running_line(runs: list[Run]) -> str | None:
    if not runs:
        return None
    parts = [f"{r.step_id}{' (rollback)' if r.kind == 'rollback' else ''} pid {r.pid or r.supervisor_pid or '?'}"
             for r in runs]
    verb = "run keeps" if len(runs) == 1 else "runs keep"
    return f"{len(runs)} {verb} running: {', '.join(parts)}"


def event_notice(plan: Plan, event: Event) -> tuple[str, str] | None:
    """(message, severity) for a journal event worth a notification, else None."""
    data = event.data or {}
    sid = event.step_id or "?"
    if event.kind == "run_exit":
        outcome = data.get("outcome") or "ended"
        reason = data.get("reason")
        if outcome == "completed":
            return f"{sid} completed", "information"
        if outcome == "lost":
            return f"{sid} lost: {reason or 'its supervisor died'}", "error"
        code = data.get("exit_code")
        why = reason or (f"exit {code}" if code is not None else outcome)
        return f"{sid} {outcome}: {why}", "error"
    if event.kind == "service_died":
        return f"{sid}'s service died: {data.get('reason') or 'exit ' + str(data.get('exit_code'))}", "error"
    if event.kind == "run_ready":
        return f"{sid} is ready", "information"
    if event.kind == "rollback_end":
        if data.get("outcome") == "completed":
            return f"rollback of {sid} completed", "information"
        return f"rollback of {sid} failed: {data.get('reason') or 'see its log'}", "error"
    return None
