"""The notification a journal event deserves (a run ended, a service died, a rollback finished)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagle_console.journal.kinds import EventKind
from eagle_console.ops.hints import NEUTRAL, Hints

if TYPE_CHECKING:
    from eagle_console.journal import Event
    from eagle_console.plan.model import Plan


def event_notice(plan: Plan, event: Event, hints: Hints = NEUTRAL, run_kind: str | None = None) -> tuple[str, str] | None:
    """(message, severity) for a journal event worth a notification, else None. `run_kind`: the kind of the
    run a RUN_EXIT ends (a rollback's undo of a step is a run too, and "0.4 completed" would say the opposite
    of what happened to 0.4)."""
    data = event.data or {}
    sid = event.step_id or "?"
    if event.kind == EventKind.APPROVAL_ASKED:  # an agent waits for a person: every console says so at once
        who = f"{event.who} via {event.face}" if event.who and event.face else event.who or event.face or "?"
        why = "; ".join(data.get("reasons") or [])
        return (f"request {event.id}: {who} asks to {data.get('summary') or data.get('action')}"
                + (f" — {why}" if why else "") + f": approve or deny it{hints.approve}", "warning")
    if event.kind == EventKind.APPROVAL_DECIDED:
        who = f"{event.who} via {event.face}" if event.who and event.face else event.who or event.face or "?"
        note = f": {data['note']}" if data.get("note") else ""
        return f"request {event.run_id} {data.get('decision', 'decided')} by {who}{note}", "information"
    if event.kind == EventKind.RUN_EXIT and run_kind == "rollback":
        if data.get("outcome") == "completed":
            return f"{sid} rolled back", "information"
        return f"{sid}: its undo failed: {data.get('reason') or 'see the rollback log'}", "error"
    if event.kind == EventKind.RUN_EXIT:
        outcome = data.get("outcome") or "ended"
        reason = data.get("reason")
        if outcome == "completed":
            return f"{sid} completed", "information"
        if outcome == "stopped" and reason == "stopped by rollback":  # asked for: not an error
            return f"{sid} {reason}", "information"
        if outcome == "lost":
            # the reason itself starts "lost: " (engine/runner.py, cluster/jobs.py): said once
            return f"{sid} lost: {(reason or '').removeprefix('lost: ') or 'its supervisor died'}", "error"
        code = data.get("exit_code")
        why = reason or (f"exit {code}" if code is not None else outcome)
        return f"{sid} {outcome}: {why}", "error"
    if event.kind == EventKind.SERVICE_DIED:
        return f"{sid}'s service died: {data.get('reason') or 'exit ' + str(data.get('exit_code'))}", "error"
    if event.kind == EventKind.RUN_READY:
        return f"{sid} is ready", "information"
    if event.kind == EventKind.ROLLBACK_END:
        if data.get("outcome") == "completed":
            return f"rollback of {sid} completed", "information"
        return f"rollback of {sid} failed: {data.get('reason') or 'see its log'}", "error"
    return None
