"""The console App: header, banner, Plan tree | GPUs + log tabs, Detail line, key line.

Panes are mounted once and updated in place. One thread worker polls the journal (`last_event_id`, every
250 ms) and the plan file (stat, every 500 ms) and posts messages; the handlers on the event loop own every
widget change. Keys that change something go through `eagle_console.ops` in thread workers.
"""

from __future__ import annotations

import gc
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static, Tree
from textual.worker import get_current_worker

from eagle_console.ops import export as export_op
from eagle_console.ops import steps
from eagle_console.tui.commands import ConsoleCommands
from eagle_console.tui.context import ConsoleContext
from eagle_console.tui.keybar import KeyBar
from eagle_console.tui.live import PlanLoad, Snapshot, read_snapshot, reload_plan, stamp
from eagle_console.tui.panes.detail import DetailLine
from eagle_console.tui.panes.logs import GPU_PANE, TABS, LogTabs, build_pane, mount_hidden_panes
from eagle_console.tui.panes.plan_tree import PlanPane
from eagle_console.tui.steering_keys import STEERING_BINDINGS, STEERING_MUTATING, SteeringKeys

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan

EXIT_AFTER_FIRST_PAINT = "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT"
NARROW_BELOW = 120  # columns
PLAN_WIDTH, PLAN_WIDTH_NARROW = "45%", "55%"
JOURNAL_POLL_S = 0.25
PLAN_POLL_S = 0.5
RECONCILE_S = 3.0
# Actions that change the journal, the node or the plan's state: hidden and refused under --readonly.
# Issues 3/4 add run, next, rollback, kill_orphans here (keys r n u K) and their bodies call tui.actions.
MUTATING = frozenset({"mark", "note"}) | STEERING_MUTATING
# Keys that exist but are not bindings (Textual's own), for the help screen.
EXTRA_KEYS = (("tab / shift+tab", "move focus between panes"), ("ctrl+p", "command palette: mark, export"),
              ("↑ ↓ ← → enter", "move in the plan tree, fold a phase"))


class JournalChanged(Message):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class PlanFileChanged(Message):
    def __init__(self, load: PlanLoad, journal: Journal | None) -> None:
        super().__init__()
        self.load = load
        self.journal = journal  # a new journal when the plan's state dir moved (its id changed)


class FirstPaint(NamedTuple):
    seconds: float  # from process start to the first refresh
    modules: dict[str, bool]


def _process_age() -> float:
    """Seconds since this process was spawned: from the spawner's CLOCK_MONOTONIC reading when it passed
    one (benchmarks/startup.py), else from /proc (10 ms ticks; Linux), else 0.0."""
    spawned = os.environ.get("EAGLE_CONSOLE_SPAWNED_AT")
    if spawned:
        return time.monotonic() - float(spawned)
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class ConsoleApp(SteeringKeys, App[int]):
    CSS_PATH = "console.tcss"
    TITLE = "eagle-console"
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        # The order of console.md's key line: r n m u K e f /.
        *STEERING_BINDINGS[:2],
        Binding("m", "mark", "Mark"),
        *STEERING_BINDINGS[2:4],
        Binding("e", "note", "Note"),
        *STEERING_BINDINGS[4:],
        *[Binding(str(i), f"tab('{tab_id}')", title, show=False) for i, (tab_id, title, *_) in enumerate(TABS, 1)],
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, ctx: ConsoleContext, state_dir_override: Path | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.state_dir_override = state_dir_override
        self.snapshot: Snapshot | None = None
        self.plan_error: str | None = None
        self.first_paint: FirstPaint | None = None

    @property
    def readonly(self) -> bool:
        return self.ctx.readonly

    # -- layout -----------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._header_text(), id="header", markup=False)
        yield Static("", id="banner", markup=False)  # TOML errors quote "[phase]" and the like
        with Horizontal(id="main"):
            yield PlanPane(id="plan")
            with Vertical(id="right"):
                yield build_pane(self.ctx, *GPU_PANE, id="gpus")
                yield LogTabs(self.ctx, id="logs")
        yield DetailLine("", id="detail")
        yield KeyBar(id="keys")

    def _header_text(self) -> str:
        plan = self.ctx.plan
        parts = ["eagle-console", plan.id, socket.gethostname()]
        if plan.node:
            parts.append(plan.node)
        if self.readonly:
            parts.append("read-only")
        return " · ".join(parts)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_width(event.size.width)

    def _fit_width(self, width: int) -> None:
        """The Plan pane takes more of a narrow terminal. Set on the one widget rather than through a
        breakpoint class on the Screen, which restyles every widget (~40 ms before the first frame)."""
        self.query_one(PlanPane).styles.width = PLAN_WIDTH_NARROW if width < NARROW_BELOW else PLAN_WIDTH

    def on_mount(self) -> None:
        self.title = f"eagle-console · {self.ctx.plan.id}"
        self._fit_width(self.size.width)
        # The first frame shows the journal's statuses, not a tree of "pending" that corrects itself later.
        self.query_one(PlanPane).focus()
        self.steering_mount()
        self._show_snapshot(read_snapshot(self.ctx.journal))
        self.set_interval(1.0, self._tick)  # elapsed time of running steps
        self.call_after_refresh(self._first_frame_shown)

    def _first_frame_shown(self) -> None:
        """The first screen is up: now start what it does not show (polling, the hidden tabs' panes)."""
        if os.environ.get(EXIT_AFTER_FIRST_PAINT):  # the startup benchmark's measuring point
            seconds = _process_age()
            self.first_paint = FirstPaint(seconds, {m: m in sys.modules for m in ("torch", "safetensors", "numpy")})
            self.exit(0)
            return
        self._poll()
        self.call_after_refresh(mount_hidden_panes, self)
        self.set_timer(0.5, self._settle_gc)

    @staticmethod
    def _settle_gc() -> None:
        """`open_console` runs the startup with the cyclic GC off: collect once, now that the first screen
        is up, keep what survived out of later collections, and collect as usual from here on."""
        if not gc.isenabled():
            gc.collect()
            gc.freeze()
            gc.enable()

    def _tick(self) -> None:
        if self.snapshot and any(s.status == "in_progress" for s in self.snapshot.states.values()):
            for pane in self.query(PlanPane):  # none while the app exits
                pane.refresh_labels()

    # -- live: journal and plan file --------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def _poll(self) -> None:
        worker = get_current_worker()
        path = self.ctx.plan_path
        last_id: int | None = None
        journal = self.ctx.journal
        if self.snapshot is not None:  # on_mount read it for the first frame
            last_id = self.snapshot.event_id
        plan_stamp = stamp(path)
        next_plan_check = time.monotonic() + PLAN_POLL_S
        next_reconcile = time.monotonic()
        while not worker.is_cancelled:
            try:
                if self.ctx.journal is not journal:
                    journal, last_id = self.ctx.journal, None
                if time.monotonic() >= next_reconcile:  # runs whose supervisor died become `lost`
                    next_reconcile = time.monotonic() + RECONCILE_S
                    if self.ctx.engine.reconcile():  # read-only: found in memory, no new event to notice
                        last_id = None
                if journal.last_event_id() != last_id:
                    snap = read_snapshot(journal)
                    last_id = snap.event_id
                    self.post_message(JournalChanged(snap))
                if time.monotonic() >= next_plan_check:
                    next_plan_check = time.monotonic() + PLAN_POLL_S
                    now_stamp = stamp(path)
                    if now_stamp != plan_stamp:
                        plan_stamp = now_stamp
                        self._plan_file_changed(path)
            except Exception as exc:  # a locked or closed database, a vanished file: say so, keep polling
                self.call_from_thread(self.notify, f"poll: {type(exc).__name__}: {exc}", severity="error")
                time.sleep(1.0)
            time.sleep(JOURNAL_POLL_S)

    def _plan_file_changed(self, path: Path) -> None:
        load = reload_plan(path, self.state_dir_override)
        journal = None
        if load.plan is not None and load.plan.state_dir != self.ctx.plan.state_dir:
            from eagle_console.journal import Journal

            journal = Journal.for_plan(load.plan, readonly=self.readonly)
        self.post_message(PlanFileChanged(load, journal))

    def _shutting_down(self) -> bool:
        """The poller's last message can land while the app exits and its panes are already gone."""
        return self._exit or not self.query(PlanPane)

    @on(JournalChanged)
    def _journal_changed(self, message: JournalChanged) -> None:
        if self._shutting_down():
            return
        self._show_snapshot(message.snapshot)
        self.steering_journal_changed()

    def _show_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.query_one(PlanPane).show(self.ctx.plan, self.snapshot)
        self._show_detail()

    @on(PlanFileChanged)
    def _plan_changed(self, message: PlanFileChanged) -> None:
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
        self.query_one(PlanPane).show(load.plan, self.snapshot)
        self._show_detail()
        for pane in self.query("*"):
            if hasattr(pane, "plan_reloaded"):
                pane.plan_reloaded()

    # -- selection --------------------------------------------------------------------------------------

    @on(Tree.NodeHighlighted, "#plan")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        self.ctx.selected_step_id = event.node.data
        self._show_detail()
        self.steering_selected(self.ctx.selected_step_id)
        for pane in self.query("*"):
            if hasattr(pane, "step_selected"):
                pane.step_selected(self.ctx.selected_step_id)

    def _show_detail(self) -> None:
        self.query_one(DetailLine).show(self.ctx.plan, self.ctx.selected_step_id, self.snapshot)

    # -- keys -------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.readonly and action in MUTATING:
            return False
        return True

    def _selected_step(self, verb: str):
        item = self.ctx.selected_step_id
        step = self.ctx.plan.step(item) if item else None
        if step is None:
            what = f"phase {item}: its status follows its steps;" if item else "nothing selected:"
            self.notify(f"{what} select a step to {verb}", severity="warning")
        return step

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
                self._run_action(steps.mark, self.ctx.journal, self.ctx.plan, step_id, choice[0], choice[1])

        self.push_screen(MarkScreen(step_id, step.title, current), done)

    def action_note(self) -> None:
        from eagle_console.tui.screens.note import NoteScreen

        step = self._selected_step("note")
        if step is None:
            return

        def done(text: str | None) -> None:
            if text:
                self._run_action(steps.note, self.ctx.journal, step.id, text)

        self.push_screen(NoteScreen(step.id, step.title), done)

    def export_plan(self, fmt: str) -> None:
        def run() -> str:
            return f"exported ({fmt}) to {export_op.export(self.ctx.journal, self.ctx.plan, fmt)}"

        self._run_action(run)

    @work(thread=True, group="actions", exit_on_error=False)
    def _run_action(self, fn, *args) -> None:
        """Run a core action off the event loop and say how it went."""
        try:
            text = fn(*args)
        except Exception as exc:
            self.call_from_thread(self.notify, f"{exc}", severity="error")
            return
        self.call_from_thread(self.notify, text)

    def action_tab(self, tab_id: str) -> None:
        self.query_one(LogTabs).active = tab_id

    def action_help(self) -> None:
        from eagle_console.tui.screens.help import HelpScreen

        keys: list[tuple[str, str]] = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if self.check_action(binding.action, ()) is False:
                continue
            key = binding.key_display or binding.key
            if binding.action.startswith("tab("):
                continue
            keys.append((key, binding.description))
        keys.append(("1…5", ", ".join(title for _, title, *_ in TABS) + " tab"))  # one line in the dialog
        keys.extend(EXTRA_KEYS)
        self.push_screen(HelpScreen(keys, self.readonly))


def make_app(plan: Plan, journal: Journal, *, readonly: bool = False, sim_dir: Path | None = None,
             state_dir_override: Path | None = None) -> ConsoleApp:
    ctx = ConsoleContext(plan_path=plan.path, plan=plan, journal=journal, sim_dir=sim_dir, readonly=readonly)
    return ConsoleApp(ctx, state_dir_override)
