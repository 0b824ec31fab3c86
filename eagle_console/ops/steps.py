"""Next, run, mark, note, and what keeps running: the step operations both faces call."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.journal import Journal, Run
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


def mark(journal: Journal, plan: Plan, step_id: str, status: str, note: str | None) -> str:
    """Mark a step; returns the line the console shows (`0.3: pending → completed`)."""
    if plan.step(step_id) is None:
        raise ValueError(f"unknown step {step_id!r}")
    before = journal.statuses().get(step_id, "pending")
    journal.mark(step_id, status, note=note or None)
    return f"{step_id}: {before} → {status}" + (" (with a note)" if note else "")


def note(journal: Journal, step_id: str, text: str) -> str:
    text = text.strip()
    if not text:
        raise ValueError("the note is empty")
    journal.note(step_id, text)
    return f"{step_id}: noted"


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
