"""The App's keys that start or undo things — r run, n next, u rollback, K kill orphans — plus f and /,
the notifications for runs that end or services that die, and `q` saying what keeps running.

A mixin for `ConsoleApp` (which supplies ctx, readonly, snapshot, notify, push_screen): every journal read
and every engine call happens in a thread worker; widgets change only on the event loop.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Any

from textual import work
from textual.binding import Binding

from eagle_console.journal import Refused
from eagle_console.ops import notices, rollback, steps

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

STEERING_BINDINGS = [
    Binding("r", "run", "Run"),
    Binding("n", "next", "Next"),
    Binding("u", "rollback", "Rollback"),
    Binding("K", "kill_orphans", "Kill orphans", key_display="K"),
    Binding("f", "follow", "Follow"),
    Binding("slash", "filter", "Filter", key_display="/"),
]
# Hidden and refused under --readonly (with the App's own mark and note).
STEERING_MUTATING = frozenset({"run", "next", "rollback", "kill_orphans"})


class SteeringKeys:
    ctx: ConsoleContext
    _seen_event_id: int = 0
    quit_message: str | None = None
    _notice_lock: threading.Lock

    # -- set-up (called from the App's on_mount) ----------------------------------------------------------

    def steering_mount(self) -> None:
        self._notice_lock = threading.Lock()
        self._seen_event_id = self.ctx.journal.last_event_id()  # only what happens from now on is news

    # -- r: run the selected step ------------------------------------------------------------------------

    def action_run(self) -> None:
        step_id = self.ctx.selected_step_id
        if not step_id or self.ctx.plan.step(step_id) is None:
            self.notify(f"{'phase ' + step_id if step_id else 'nothing selected'}: select a step to run "  # type: ignore[attr-defined]
                        "(n runs the next one)", severity="warning")
            return
        self.confirm_and_start(step_id)

    def confirm_and_start(self, step_id: str) -> None:
        if self.ctx.readonly:
            return
        step = self.ctx.plan.step(step_id)
        if step is None:
            self.notify(f"no step {step_id} in the plan", severity="warning")  # type: ignore[attr-defined]
            return
        if step.action is None:
            self.notify(f"{step.id} is manual: do it by hand and mark it", severity="warning")  # type: ignore[attr-defined]
            return
        if step.confirm:
            from eagle_console.tui.screens.confirm import ConfirmScreen

            def answered(ok: bool | None) -> None:
                if ok:
                    self._start_worker(step_id)

            self.push_screen(ConfirmScreen(f"Run {step.id} — {step.title}?", step.action.describe()),  # type: ignore[attr-defined]
                             answered)
            return
        self._start_worker(step_id)

    @work(thread=True, group="steer", exit_on_error=False)
    def _start_worker(self, step_id: str) -> None:
        try:
            text, severity = steps.start_step(self.ctx.engine, step_id), "information"
        except Refused as exc:
            text, severity = str(exc), "error"
        self.call_from_thread(self.notify, text, severity=severity)  # type: ignore[attr-defined]

    # -- n: select and run the next runnable step -------------------------------------------------------

    def action_next(self) -> None:
        self._next_worker()

    @work(thread=True, group="steer", exit_on_error=False)
    def _next_worker(self) -> None:
        choice = steps.choose_next(self.ctx.engine)
        if choice.step is not None:
            self.call_from_thread(self._select, choice.step.id)
        if not choice.runnable:
            self.call_from_thread(self.notify, choice.message or "nothing to run", severity="warning")  # type: ignore[attr-defined]
            return
        self.call_from_thread(self.confirm_and_start, choice.step.id)  # type: ignore[union-attr]

    def _select(self, node_id: str) -> None:
        from eagle_console.tui.panes.plan_tree import PlanPane

        self.query_one(PlanPane).select_id(node_id)  # type: ignore[attr-defined]
        self.ctx.selected_step_id = node_id

    # -- u: roll back the selected step or phase --------------------------------------------------------

    def action_rollback(self) -> None:
        target = self.ctx.selected_step_id
        if not target:
            self.notify("nothing selected: select a step or a phase to roll back", severity="warning")  # type: ignore[attr-defined]
            return
        self.open_rollback(target)

    def open_rollback(self, target: str) -> None:
        if not self.ctx.readonly:
            self._rollback_plan_worker(target)

    @work(thread=True, group="steer", exit_on_error=False)
    def _rollback_plan_worker(self, target: str) -> None:
        choice = rollback.plan_rollback_choice(self.ctx.engine, target)
        if choice.refused and choice.cascade_refused:
            self.call_from_thread(self.notify, choice.refused, severity="error")  # type: ignore[attr-defined]
            return
        self.call_from_thread(self._push_rollback, choice)

    def _push_rollback(self, choice: rollback.RollbackChoice) -> None:
        from eagle_console.tui.screens.rollback import RollbackScreen

        def answered(cascade: bool | None) -> None:
            if cascade is not None:
                self._rollback_start_worker(choice.target, cascade)

        self.push_screen(RollbackScreen(choice), answered)  # type: ignore[attr-defined]

    @work(thread=True, group="steer", exit_on_error=False)
    def _rollback_start_worker(self, target: str, cascade: bool) -> None:
        try:
            text, severity = rollback.begin_rollback(self.ctx.engine, target, cascade), "information"
        except Refused as exc:
            text, severity = str(exc), "error"
        self.call_from_thread(self.notify, text, severity=severity)  # type: ignore[attr-defined]

    # -- K, f, / ----------------------------------------------------------------------------------------

    def action_kill_orphans(self) -> None:
        from eagle_console.tui.screens.kill import KillScreen

        if self.ctx.readonly:
            return
        self.push_screen(KillScreen(self.ctx))  # type: ignore[attr-defined]

    def _log_view(self) -> Any:
        """The log the operator means: the one holding focus, else the one in the shown tab."""
        from eagle_console.tui.panes._logview import LogView
        from eagle_console.tui.panes.logs import LogTabs

        node = self.focused  # type: ignore[attr-defined]
        while node is not None:
            if isinstance(node, LogView):
                return node
            node = node.parent
        tabs = self.query_one(LogTabs)  # type: ignore[attr-defined]
        found = tabs.query(f"#{tabs.active} LogView")
        return found.first() if found else None

    def action_follow(self) -> None:
        view = self._log_view()
        if view is None:
            self.notify("f follows the Server, NCCL or Output log: open one of those tabs (1, 2, 3)",  # type: ignore[attr-defined]
                        severity="warning")
            return
        view.toggle_follow()

    def action_filter(self) -> None:
        view = self._log_view()
        if view is None:
            self.notify("/ filters the Server, NCCL or Output log: open one of those tabs (1, 2, 3)",  # type: ignore[attr-defined]
                        severity="warning")
            return
        view.open_filter()

    # -- the Detail line's drafter findings (files read off the loop) ---------------------------------------

    def steering_selected(self, item_id: str | None) -> None:
        step = self.ctx.plan.step(item_id) if item_id else None
        uses = {a.uses for a in (step.check, step.action) if a and a.kind == "builtin"} if step else set()
        if uses & {"drafter.check", "drafter.compare_vocab"}:
            self._drafter_worker(item_id)

    @work(thread=True, group="drafter", exclusive=True, exit_on_error=False)
    def _drafter_worker(self, item_id: str) -> None:
        from eagle_console.tui.panes.detail import DetailLine, drafter_lines

        lines = drafter_lines(self.ctx.plan, item_id)
        self.call_from_thread(lambda: self.query_one(DetailLine).show_extra(item_id, lines))  # type: ignore[attr-defined]

    # -- notifications ----------------------------------------------------------------------------------

    def steering_journal_changed(self) -> None:
        """Called on every journal change: notify the runs that ended and the services that died."""
        self._notice_worker()

    @work(thread=True, group="notices", exit_on_error=False)
    def _notice_worker(self) -> None:
        with self._notice_lock:  # two workers must not announce the same event twice
            events = self.ctx.journal.events(self._seen_event_id)
            if events:
                self._seen_event_id = max(e.id for e in events)
        for event in events:
            notice = notices.event_notice(self.ctx.plan, event)
            if notice:
                self.call_from_thread(self.notify, notice[0], severity=notice[1],  # type: ignore[attr-defined]
                                      timeout=8 if notice[1] == "error" else 4)

    # -- q: quit, saying what keeps running -------------------------------------------------------------

    def action_quit(self) -> None:
        self._quit_worker()

    @work(thread=True, group="quit", exit_on_error=False)
    def _quit_worker(self) -> None:
        try:
            line = steps.keep_running_line(steps.running_runs(self.ctx.engine))
        except Exception as exc:  # quitting must always work
            line = f"could not list the runs still going: {exc}"
        self.quit_message = line  # also printed by Textual once the terminal is restored
        self.call_from_thread(self.exit, 0, 0, line)  # type: ignore[attr-defined]

    # -- command palette ---------------------------------------------------------------------------------

    def steering_entries(self) -> list[tuple[str, object, str]]:
        if self.ctx.readonly:
            return []
        out: list[tuple[str, object, str]] = []
        for step in self.ctx.plan.steps():
            if step.action is not None:
                out.append((f"Run step {step.id} {step.title}", partial(self.confirm_and_start, step.id),
                            "start it under a detached supervisor"))
        for item in (*self.ctx.plan.phases, *self.ctx.plan.steps()):
            out.append((f"Roll back {item.id} {item.title}", partial(self.open_rollback, item.id),
                        "lists what will be undone, in order, before anything happens"))
        out.append(("Kill orphaned GPU workers", self.action_kill_orphans, "every GPU holder, orphans preselected"))
        return out
