"""The console App: header, banner, Plan tree | GPUs + log tabs, Detail line, key line.

Panes are mounted once and updated in place. One thread worker polls the journal (`last_event_id`, every
250 ms) and the plan file (stat, every 500 ms) and posts messages; the handlers on the event loop own every
widget change. Keys that change something go through `eagle_console.ops` in thread workers."""

from __future__ import annotations

import socket
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.message import Message
from textual.widgets import Static, Tree

from eagle_console.tui import fit, keys, messages, theme, toasts, workers, zoom
from eagle_console.tui.commands import ConsoleCommands
from eagle_console.tui.context import ConsoleContext
from eagle_console.tui.keybar import KeyBar
from eagle_console.tui.layout import Column, Row
from eagle_console.tui.live import Snapshot, read_snapshot
from eagle_console.tui.main_screen import ConsoleScreen
from eagle_console.tui.panes.detail import DetailLine
from eagle_console.tui.panes.logs import GPU_PANE, LogTabs, build_pane, mount_hidden_panes
from eagle_console.tui.panes.plan_tree import PlanPane
from eagle_console.tui.panes.step_info import StepInfo
from eagle_console.tui.startup import FirstFrameGate, FirstPaint, benchmark_exit

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan, Step

# The right-hand tab panes built so far (lazily: the App knows them by place) get StepSelected, PlanReloaded.
TAB_PANES = "#logs ContentSwitcher > *"


class ConsoleApp(App[int]):
    CSS_PATH = "console.tcss"
    TITLE = "eagle-console"
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.BINDINGS)

    def __init__(self, ctx: ConsoleContext, state_dir_override: Path | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.state_dir_override = state_dir_override
        self.snapshot: Snapshot | None = None
        self.plan_error: str | None = None
        self.first_paint: FirstPaint | None = None
        self.quit_message: str | None = None  # what keeps running, also printed once the terminal is back
        self._notices = workers.Notices(ctx.journal.last_event_id())
        self.first_frame = FirstFrameGate(self)  # the panes' pollers wait on it (tui/panes/_logview.Poller)
        self.toasts_posted = False  # toasts are placed from the first one on
        self._settings_problem = theme.restore(self)  # the operator's saved theme (tui/theme.py)

    @property
    def readonly(self) -> bool:
        return self.ctx.readonly

    # -- layout -----------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # The panes the App itself tells things to (attributes down; they answer with messages up).
        self.plan_pane = PlanPane(id="plan")
        self.gpus: Any = build_pane(self.ctx, *GPU_PANE, id="gpus")
        self.step_info = StepInfo(id="step-info")
        self.detail = DetailLine("", id="detail")
        yield Static(self._header_text(), id="header", markup=False)
        yield Static("", id="banner", markup=False)  # TOML errors quote "[phase]" and the like
        with Row(id="main"):
            with Column(id="left", classes="column"):
                yield self.plan_pane
                yield self.step_info
            with Column(id="right", classes="column"):
                yield self.gpus
                yield LogTabs(self.ctx, id="logs")
        yield self.detail
        yield KeyBar(id="keys")

    def get_default_screen(self) -> ConsoleScreen:
        return ConsoleScreen(id="_default")

    def _header_text(self) -> str:
        plan = self.ctx.plan
        parts = ["eagle-console", plan.id, socket.gethostname()]
        if plan.node:
            parts.append(plan.node)
        if self.readonly:
            parts.append("read-only")
        return " · ".join(parts)

    def on_resize(self, event: events.Resize) -> None:
        fit.columns(self, event.size.width)
        fit.detail_rows(self, event.size.height)
        self.call_after_refresh(fit.gpu_cap, self)

    def on_mount(self) -> None:
        self.title = f"eagle-console · {self.ctx.plan.id}"
        fit.columns(self, self.size.width)
        self.plan_pane.width_hint = fit.plan_width(self, self.size.width)
        # The first frame shows the journal's statuses, not a tree of "pending" that corrects itself later.
        self.plan_pane.focus()
        self._show_snapshot(read_snapshot(self.ctx.journal))
        self.set_interval(1.0, self._tick)  # elapsed time of running steps
        self.call_after_refresh(self._first_frame_shown)
        theme.follow(self, self.plan_pane.refresh_labels)
        if self._settings_problem:  # a broken settings file: the defaults, said, never a console that hangs
            self.notify(self._settings_problem, title="settings", severity="warning", timeout=30)

    def _first_frame_shown(self) -> None:
        """The first screen is up: now start what it does not show (polling, the hidden tabs' panes)."""
        if benchmark_exit(self):  # the startup benchmark's measuring point
            return
        self.first_frame.open()
        last_id = self.snapshot.event_id if self.snapshot is not None else None  # on_mount read it
        self._in_thread(workers.poll, self.ctx, last_id, self.state_dir_override, group="poll", exclusive=True)
        self.call_after_refresh(mount_hidden_panes, self)
        self.set_timer(0.5, fit.settle_gc)

    def _tick(self) -> None:
        if self.snapshot and any(s.status == "in_progress" for s in self.snapshot.states.values()):
            if not self._shutting_down():
                self.plan_pane.refresh_labels()

    def _in_thread(self, fn: Any, *args: Any, group: str = "ops", exclusive: bool = False) -> None:
        """Run `fn(post, *args)` (a tui.workers function) in a thread worker; it answers with messages."""
        if self.is_running:  # not once stopped (Ctrl+C at start): no one cancels it, and exit waits for ever
            self.run_worker(partial(fn, self.post_message, *args), thread=True, group=group,
                            exclusive=exclusive, exit_on_error=False)

    # -- live: journal and plan file --------------------------------------------------------------------

    def _shutting_down(self) -> bool:
        """The poller's last message can land while the app exits and its panes are already gone."""
        return self._exit or not self.plan_pane.is_mounted

    @on(messages.JournalChanged)
    def _journal_changed(self, message: messages.JournalChanged) -> None:
        if self._shutting_down():
            return
        self._show_snapshot(message.snapshot)
        self._in_thread(self._notices.announce, self.ctx, group="notices")

    def _show_snapshot(self, snapshot: Snapshot) -> None:
        waited = bool(self.snapshot and self.snapshot.approvals)
        self.snapshot = snapshot
        if waited != bool(snapshot.approvals):
            self.refresh_bindings()  # `a Approve` comes and goes with the requests
        self.plan_pane.show(self.ctx.plan, self.snapshot)
        self.ctx.selected_step_id = self.ctx.selected_step_id or self.plan_pane.selected_id  # first show: the tree chose
        self._show_detail()

    @on(messages.PlanFileChanged)
    def _plan_changed(self, message: messages.PlanFileChanged) -> None:
        if self._shutting_down():
            if message.journal is not None:
                message.journal.close()
            return
        banner = self.query_one("#banner", Static)
        load = message.load
        if load.plan is None:
            self.plan_error = load.error
            banner.update(f"✖ the plan file does not load; showing the last good plan — {load.error}")
            banner.display = True
            return
        self.plan_error = None
        banner.display = False
        if message.journal is not None:
            old, self.ctx.journal = self.ctx.journal, message.journal
            self.snapshot = None
            old.close()
        self.ctx.plan = load.plan
        self.query_one("#header", Static).update(self._header_text())
        self.plan_pane.show(load.plan, self.snapshot)
        self._show_detail()
        self.gpus.post_message(messages.PlanReloaded())
        self._tell_panes(messages.PlanReloaded)

    def _tell_panes(self, make: type[Message], *args: Any) -> None:
        for pane in self.query(TAB_PANES):
            pane.post_message(make(*args))

    @on(messages.GpusChanged)
    def _gpus_changed(self) -> None:
        self.gpus.post_message(messages.ReadGpusNow())

    # -- selection --------------------------------------------------------------------------------------

    @on(Tree.NodeHighlighted, "#plan")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data is None:  # the hidden root, highlighted once as the tree is built: no selection
            return
        step_id = self.ctx.selected_step_id = event.node.data
        self._show_detail()  # the Detail line reads the step's drafter report itself, and again when it changes
        self._tell_panes(messages.StepSelected, step_id)

    def _show_detail(self) -> None:
        self.detail.show(self.ctx.plan, self.ctx.selected_step_id, self.snapshot)
        self.step_info.show(self.ctx.plan, self.ctx.selected_step_id)

    @on(messages.ToastRoomChanged)
    def _toast_room_changed(self) -> None:
        if self.toasts_posted:  # until the first toast console.tcss's margin is right: no queries at startup
            self._place_toasts()

    def _place_toasts(self) -> None:
        if not self._shutting_down():
            toasts.place(self)
            fit.gpu_cap(self)  # the Detail line or the Step pane changed size: so may have the columns

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        """A dialog has a toast rack of its own, which the toasts move to: place it as the main screen's."""
        result = super().push_screen(*args, **kwargs)
        self.call_after_refresh(self._place_toasts)
        return result

    def _fit_toasts(self) -> None:
        if not self._shutting_down():
            toasts.fit(self)

    def _select(self, node_id: str) -> None:
        self.plan_pane.select_id(node_id)
        self.ctx.selected_step_id = node_id

    # -- keys -------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.readonly and action in keys.MUTATING:
            return False
        if action == "approve":  # on the key line only while an agent's request waits for a person
            return bool(self.snapshot and self.snapshot.approvals)
        return True

    def _selected_step(self, verb: str, hint: str = "") -> Step | None:
        item = self.ctx.selected_step_id
        step = self.ctx.plan.step(item) if item else None
        if step is None:
            what = f"phase {item}: its status follows its steps;" if item else "nothing selected:"
            self.notify(f"{what} select a step to {verb}{hint}", severity="warning")
        return step

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Never markup: notices quote results, notes, titles and step output (`[/]` crashed the console)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)
        self.call_later(self._toast_posted)  # call_later is thread-safe, as notify is

    def _toast_posted(self) -> None:
        if not self._shutting_down():
            toasts.posted(self, self._fit_toasts)

    @on(messages.OpDone)
    def _op_done(self, message: messages.OpDone) -> None:
        self.notify(message.text, severity=message.severity, timeout=message.timeout)  # type: ignore[arg-type]

    # r / n: run the selected step, or the next runnable one

    def action_run(self) -> None:
        step = self._selected_step("run", " (n runs the next one)")
        if step is not None:
            self.confirm_and_start(step.id)

    def confirm_and_start(self, step_id: str) -> None:
        if self.readonly:
            return
        step = self.ctx.plan.step(step_id)
        if step is None:
            self.notify(f"no step {step_id} in the plan", severity="warning")
        elif step.action is None:
            self.notify(f"{step.id} is manual: do it by hand and mark it", severity="warning")
        elif step.confirm:
            from eagle_console.tui.screens.confirm import ConfirmScreen, kill_args, kill_preview

            def answered(ok: bool | None) -> None:
                if ok:
                    self._start(step_id)

            body = "\n".join(filter(None, [step.description, f"runs {step.action.describe()}"]))
            args = kill_args(step)
            preview = None if args is None else partial(kill_preview, args, self.ctx.sim_dir, self.ctx.journal)
            self.push_screen(ConfirmScreen(f"Run {step.id} — {step.title}?", body, preview), answered)
        else:
            self._start(step_id)

    def _start(self, step_id: str) -> None:
        self._in_thread(workers.start_step, self.ctx.engine, step_id)
        step = self.ctx.plan.step(step_id)  # show what was just started: its service log, else its output
        self.action_tab("server" if step is not None and step.service else "output")

    def action_next(self) -> None:
        self._in_thread(workers.choose_next, self.ctx.engine)

    @on(messages.NextChosen)
    def _next_chosen(self, message: messages.NextChosen) -> None:
        choice = message.choice
        if choice.step is not None:
            self._select(choice.step.id)
        if not choice.runnable:
            self.notify(choice.message or "nothing to run", severity="warning")
        elif choice.step is not None:
            self.confirm_and_start(choice.step.id)

    # m / e: mark, note

    def action_mark(self) -> None:
        step = self._selected_step("mark")
        if step is not None:
            self.open_mark(step.id)

    def open_mark(self, step_id: str) -> None:
        from eagle_console.tui.screens.mark import MarkScreen

        if self.readonly:
            return
        step = self.ctx.plan.step(step_id)
        if step is None:
            self.notify(f"step {step_id} is no longer in the plan", severity="warning")
            return
        current = self.snapshot.statuses().get(step_id, "pending") if self.snapshot else "pending"

        def done(choice: tuple[str, str | None] | None) -> None:
            if choice is not None:
                self._in_thread(workers.mark, self.ctx.journal, self.ctx.plan, step_id, *choice)

        self.push_screen(MarkScreen(step_id, step.title, current), done)

    def action_note(self) -> None:
        from eagle_console.tui.screens.note import NoteScreen

        step = self._selected_step("note")
        if step is None:
            return

        def done(text: str | None) -> None:
            if text:
                self._in_thread(workers.note, self.ctx.journal, step.id, text)

        self.push_screen(NoteScreen(step.id, step.title), done)

    def action_approve(self) -> None:  # a: answer an agent's request (ops/approvals.py)
        from eagle_console.tui.screens.approve import ask_approval

        ask_approval(self)

    # u: roll back the selected step or phase

    def action_rollback(self) -> None:
        target = self.ctx.selected_step_id
        if not target:
            self.notify("nothing selected: select a step or a phase to roll back", severity="warning")
            return
        self.open_rollback(target)

    def open_rollback(self, target: str) -> None:
        if not self.readonly:
            self._in_thread(workers.plan_rollback, self.ctx.engine, target)

    @on(messages.RollbackPlanned)
    def _rollback_planned(self, message: messages.RollbackPlanned) -> None:
        from eagle_console.tui.screens.rollback import RollbackScreen

        target = message.choice.target

        def answered(cascade: bool | None) -> None:
            if cascade is not None:
                self._in_thread(workers.begin_rollback, self.ctx.engine, target, cascade)

        self.push_screen(RollbackScreen(message.choice), answered)

    # K, f, /, 1…5, ?

    def action_kill_orphans(self) -> None:
        from eagle_console.tui.screens.kill import KillScreen

        if not self.readonly:
            self.push_screen(KillScreen(self.ctx))

    def _log_view(self) -> Any:
        """The log the operator means: the one holding focus, else the one in the shown tab."""
        from eagle_console.tui.panes.logview import LogView

        node = self.focused
        while node is not None:
            if isinstance(node, LogView):
                return node
            node = node.parent  # type: ignore[assignment]
        tabs = self.query_one(LogTabs)
        pane = tabs.pane(tabs.active)  # the Server, NCCL and Output panes are LogViews
        return pane if isinstance(pane, LogView) else None

    def action_follow(self) -> None:
        view = self._log_view()
        if view is None:
            self.notify("f follows the Server, NCCL or Output log: open one of those tabs (1, 2, 3)",
                        severity="warning")
            return
        view.toggle_follow()

    def action_filter(self) -> None:
        view = self._log_view()
        if view is None:
            self.notify("/ filters the Server, NCCL or Output log: open one of those tabs (1, 2, 3)",
                        severity="warning")
            return
        view.open_filter()

    def action_tab(self, tab_id: str) -> None:
        self.query_one(LogTabs).active = tab_id

    def action_zoom(self) -> None:
        """z: GPUs alone, then the log tabs, the plan, the step, then every pane again."""
        zoom.zoom(self, zoom.next_zoom(zoom.zoomed(self)))
        fit.columns(self, self.size.width)
        fit.gpu_cap(self)

    def action_help(self) -> None:
        from eagle_console.tui.commands import palette_entries
        from eagle_console.tui.screens.help import HelpScreen

        palette = [text for text, _call, _help in palette_entries(self, per_step=False)]
        self.push_screen(HelpScreen(keys.help_keys(self.readonly), self.readonly, palette))

    # q: quit, saying what keeps running

    async def action_quit(self) -> None:
        self._in_thread(workers.quit_line, self.ctx.engine, self.ctx.runs_stop_on_quit, group="quit")

    @on(messages.QuitReady)
    def _quit_ready(self, message: messages.QuitReady) -> None:
        self.quit_message = message.line
        self.exit(0, 0, message.line)

    # the palette's export

    def export_plan(self, fmt: str) -> None:
        self._in_thread(workers.export, self.ctx.journal, self.ctx.plan, fmt)


def make_app(plan: Plan, journal: Journal, *, readonly: bool = False, sim_dir: Path | None = None,
             state_dir_override: Path | None = None, runs_stop_on_quit: bool = False) -> ConsoleApp:
    from eagle_console.journal.operator import CONSOLE_FACE

    journal.face = CONSOLE_FACE  # what this console writes says so (journal events' `face`)
    ctx = ConsoleContext(plan_path=plan.path, plan=plan, journal=journal, sim_dir=sim_dir, readonly=readonly,
                         runs_stop_on_quit=runs_stop_on_quit)
    return ConsoleApp(ctx, state_dir_override)
