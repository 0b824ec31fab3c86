"""The blocking half of the console's keys and live view: each function runs in a thread worker, calls
`eagle_console.ops` (or reads the journal) and posts the outcome as a message (`tui.messages`);
the App's handlers change the widgets on the event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.worker import WorkerState, get_current_worker

from eagle_console.journal import EventKind, Refused
from eagle_console.ops import notices
from eagle_console.ops.hints import Hints, refusal_text
from eagle_console.ops.steps import held_end_text
from eagle_console.tui import messages
from eagle_console.tui.live import read_snapshot, reload_plan, stamp

if TYPE_CHECKING:
    from textual.message import Message

    from eagle_console.journal import Journal
    from eagle_console.ops.console import Engine
    from eagle_console.plan.model import Plan
    from eagle_console.tui.context import ConsoleContext

Post = Callable[["Message"], Any]
JOURNAL_POLL_S = 0.25
PLAN_POLL_S = 0.5
RECONCILE_S = 3.0
# How the console names its controls in texts from ops (the CLI names its commands and flags instead).
CONSOLE_HINTS = Hints(run=" (r)", mark=" (m)", cascade=", or roll back with its dependents (c)",
                      force="", rollback=" (u)", approve=" (a)")


def run_op(post: Post, fn: Callable[..., str], *args: Any) -> None:
    """An operation that returns the line to notify; a refusal or failure is notified as an error."""
    try:
        text = fn(*args)
    except Refused as exc:
        post(messages.OpDone(refusal_text(exc, CONSOLE_HINTS), "error"))
        return
    except Exception as exc:
        post(messages.OpDone(str(exc), "error"))
        return
    post(messages.OpDone(text))


# The keys' operations: ops.steps, ops.rollback and ops.export are imported here, in the worker of the first
# key that needs one, not before the console's first frame (with ops.export: ~5 ms of its start).

def start_step(post: Post, engine: Engine, step_id: str) -> None:
    from eagle_console.ops import steps

    run_op(post, steps.start_step, engine, step_id)


def mark(post: Post, journal: Journal, plan: Plan, step_id: str, status: str, note: str | None) -> None:
    from eagle_console.ops import steps

    run_op(post, steps.mark, journal, plan, step_id, status, note)


def note(post: Post, journal: Journal, step_id: str, text: str) -> None:
    from eagle_console.ops import steps

    run_op(post, steps.note, journal, step_id, text)


def begin_rollback(post: Post, engine: Engine, target: str, cascade: bool) -> None:
    from eagle_console.ops import rollback

    run_op(post, rollback.begin_rollback, engine, target, cascade)


def export(post: Post, journal: Journal, plan: Plan, fmt: str) -> None:
    from eagle_console.ops import export as export_op

    run_op(post, lambda: f"exported ({fmt}) to {export_op.export(journal, plan, fmt)}")


def choose_next(post: Post, engine: Engine) -> None:
    from eagle_console.ops import steps

    post(messages.NextChosen(steps.choose_next(engine, CONSOLE_HINTS)))


def plan_rollback(post: Post, engine: Engine, target: str) -> None:
    from eagle_console.ops import rollback

    choice = rollback.plan_rollback_choice(engine, target, CONSOLE_HINTS)
    if choice.refused and choice.cascade_refused:
        post(messages.OpDone(choice.refused, "error"))
    else:
        post(messages.RollbackPlanned(choice))


def quit_line(post: Post, engine: Engine, runs_stop: bool = False) -> None:
    """`runs_stop`: the demo stops its runs when the console closes, and says so itself."""
    from eagle_console.ops import steps

    if runs_stop:
        post(messages.QuitReady(None))
        return
    try:
        line = steps.keep_running_line(steps.running_runs(engine))
    except Exception as exc:  # quitting must always work
        line = f"could not list the runs still going: {exc}"
    post(messages.QuitReady(line))


class Notices:
    """Journal events since the console opened, announced once each (runs that ended, services that died)."""

    def __init__(self, last_event_id: int) -> None:
        self._seen = last_event_id  # only what happens from now on is news
        self._lock = threading.Lock()  # two workers must not announce the same event twice

    def announce(self, post: Post, ctx: ConsoleContext) -> None:
        with self._lock:
            events = ctx.journal.events(self._seen)
            if events:
                self._seen = max(e.id for e in events)
        for event in events:
            run = ctx.journal.run(event.run_id) if event.kind == EventKind.RUN_EXIT and event.run_id else None
            notice = notices.event_notice(ctx.plan, event, CONSOLE_HINTS, run.kind if run is not None else None)
            if notice:  # a request for approval stays up longer: someone has to answer it
                timeout = 8 if notice[1] == "error" else 30 if event.kind == EventKind.APPROVAL_ASKED else 4
                post(messages.OpDone(notice[0], notice[1], timeout))


def poll(post: Post, ctx: ConsoleContext, last_id: int | None, state_dir_override: Path | None) -> None:
    """Until cancelled: the journal every 250 ms, the plan file's stamp every 500 ms, lost runs every 3 s."""
    worker = get_current_worker()
    path = ctx.plan_path
    journal = ctx.journal
    plan_stamp = stamp(path)
    next_plan_check = time.monotonic() + PLAN_POLL_S
    next_reconcile = time.monotonic()
    said_file_note: str | None = None
    held_said: set[int] = set()  # runs whose end a full disk holds, said once
    # a worker whose task was cancelled without `cancel()` (its app's main task cancelled) reads CANCELLED
    # but not is_cancelled: either ends the loop, or the thread outlives the app
    while not worker.is_cancelled and worker.state is not WorkerState.CANCELLED:
        try:
            if ctx.journal is not journal:
                journal, last_id = ctx.journal, None
            if time.monotonic() >= next_reconcile:  # runs whose supervisor died become `lost`
                next_reconcile = time.monotonic() + RECONCILE_S
                note = journal.file_note()  # the journal deleted, replaced or emptied: said once
                if note and note != said_file_note:
                    post(messages.OpDone(note, "error", 30))
                said_file_note = note
                if ctx.engine.reconcile():  # read-only: found in memory, no new event to notice
                    last_id = None
                for run in journal.open_runs():  # the journal cannot change then: nothing else would say it
                    if run.id not in held_said and (held := held_end_text(run, ctx.plan.state_dir)):
                        held_said.add(run.id)
                        post(messages.OpDone(f"{run.step_id}: {held}", "error", 30))
            if journal.last_event_id() != last_id:
                snap = read_snapshot(journal)
                last_id = snap.event_id
                post(messages.JournalChanged(snap))
            if time.monotonic() >= next_plan_check:
                next_plan_check = time.monotonic() + PLAN_POLL_S
                now_stamp = stamp(path)
                if now_stamp != plan_stamp:
                    plan_stamp = now_stamp
                    post(_plan_file_changed(ctx, path, state_dir_override))
        except Exception as exc:  # a locked or closed database, a vanished file: say so, keep polling
            post(messages.OpDone(f"poll: {type(exc).__name__}: {exc}", "error"))
            time.sleep(1.0)
        time.sleep(JOURNAL_POLL_S)


def _plan_file_changed(ctx: ConsoleContext, path: Path, state_dir_override: Path | None) -> messages.PlanFileChanged:
    load = reload_plan(path, state_dir_override)
    journal = None
    if load.plan is not None and load.plan.state_dir != ctx.plan.state_dir:
        from eagle_console.journal import Journal

        journal = Journal.for_plan(load.plan, readonly=ctx.readonly, face=ctx.journal.face)
    return messages.PlanFileChanged(load, journal)
