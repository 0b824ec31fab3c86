"""`K`: kill orphaned GPU workers. Lists every holder (orphans preselected), what will be signalled,
then SIGTERM → grace countdown → SIGKILL in a worker, and the result (killed, survivors, MiB freed).

The scan and the kill (ops.orphans) run in thread workers; the countdown comes back through `call_from_thread`.
Holders that `kill.refusal` protects (PID 1, the console and its ancestors, every eagle-console process,
the console's session, other users, other PID namespaces) are shown with the reason and cannot be
selected. A selection with a tracked process (a live run's server) asks a second question naming the
step; only `y` answers it, Enter alone keeps the selection and kills nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from eagle_console.ops.orphans import KillRecord, memory_by_gpu
from eagle_console.tui.panes.gpus import holder_command
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.procs import Holder
    from eagle_console.ops.orphans import HolderScan
    from eagle_console.tui.context import ConsoleContext


def holders_summary(holders: list) -> str:
    """`3 GPU holders · GPU 0: 12240 MiB, GPU 1: 2048 MiB`."""
    by_gpu = memory_by_gpu(holders)
    mem = ", ".join(f"GPU {g}: {mib:.0f} MiB" for g, mib in sorted(by_gpu.items())) or "no GPU memory held"
    return f"{len(holders)} GPU holder{'s' if len(holders) != 1 else ''} · {mem}"


def result_text(record: KillRecord) -> Text:
    killed, survivors = record.killed, record.survivors
    out = Text(f"killed {len(killed)}: {' '.join(map(str, killed)) or '-'}\n", style=tstyle("ec.ok.bold") if killed else "")
    if survivors:
        out += Text(f"SURVIVORS {len(survivors)}: {' '.join(map(str, survivors))}\n", style=tstyle("ec.error.bold"))
    if record.gone:
        out += Text(f"already gone: {' '.join(map(str, record.gone))}\n", style="dim")
    for r in record.refused:
        out += Text(f"not signalled {r['pid']}: {r['reason']}\n", style=tstyle("ec.warn"))
    freed = record.freed_mib
    per_gpu = ", ".join(f"GPU {g}: {mib:.0f} MiB" for g, mib in sorted(freed.items(), key=lambda kv: int(kv[0])))
    out += Text(f"freed {sum(freed.values()):.0f} MiB" + (f" ({per_gpu})" if per_gpu else ""))
    return out


CHOOSE_KEYS = "space select · j/k move · enter send SIGTERM · esc close"
TABLE_ROWS = 16  # the most the holders table takes; fewer when the terminal is short (`_fit`)


class KillScreen(ModalScreen[KillRecord | None]):
    """Dismisses with the journaled record, or None when nothing was killed."""

    DEFAULT_CSS = """
    KillScreen { align: center middle; }
    KillScreen > #kill-dialog {
        width: 110; max-width: 100%; height: auto; max-height: 100%;
        border: thick $error; background: $surface; padding: 0 1;
    }
    KillScreen #kill-title { text-style: bold; }
    KillScreen DataTable { height: auto; max-height: 16; }  /* _fit lowers it on a short screen */
    KillScreen #kill-progress { color: $warning; text-style: bold; height: auto; }
    KillScreen #kill-progress.-empty { display: none; }
    KillScreen .hint { color: $text-muted; }
    """
    BINDINGS = [
        Binding("space", "toggle", "Select", priority=True),
        Binding("enter", "kill", "Kill selected", priority=True),
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("n", "answer(False)", "No", show=False),
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
    ]

    def __init__(self, ctx: ConsoleContext, grace: float | None = None) -> None:
        from eagle_console.node.kill import GraceError, resolve_grace

        super().__init__()
        self.ctx = ctx
        self.grace_error: str | None = None
        try:
            self.grace = resolve_grace() if grace is None else grace
        except GraceError as exc:  # a bad EAGLE_CONSOLE_KILL_GRACE: say so instead of guessing a grace
            self.grace, self.grace_error = 0.0, str(exc)
        self.holders: list[Holder] = []
        self.refused: dict[int, str] = {}
        self.selected: set[int] = set()
        self.state = "scanning"  # scanning | choosing | confirming (a tracked one) | killing | done
        self.report: KillRecord | None = None
        self._found: HolderScan | None = None

    def compose(self):
        with Vertical(id="kill-dialog"):
            yield Static("Kill GPU processes", id="kill-title")
            # the progress and the result on top, where a short terminal cannot cut them off
            yield Static("", id="kill-progress", markup=False, classes="-empty")
            yield Static("scanning GPU holders…", id="kill-summary")
            table: DataTable = DataTable(id="kill-table", cursor_type="row", zebra_stripes=True)
            yield table
            yield Static("", id="kill-plan")
            yield Static(CHOOSE_KEYS, classes="hint", id="kill-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("", "sel"), ("PID", "pid"), ("GPU", "gpu"), ("MiB", "mib"), ("CLASS", "cls"),
                           ("OWNER", "owner"), ("COMMAND / why", "cmd")):
            table.add_column(label, key=key)
        table.focus()
        self.run_worker(self._scan, thread=True, group="kill-scan", exit_on_error=False)

    def _say(self, text: str | Text) -> None:
        """The progress line, on top: the question, the countdown, then the result."""
        progress = self.query_one("#kill-progress", Static)
        progress.update(text)
        progress.set_class(not str(text), "-empty")
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The holders table takes what the screen has left once the title, result, plan and keys are shown,
        so the keys and the result are never cut off at 80x24."""
        if not self.is_mounted:
            return
        table = self.query_one(DataTable)
        dialog = self.query_one("#kill-dialog")
        others = sum(w.outer_size.height for w in dialog.children if w is not table and w.display)
        room = self.size.height - 2 - others  # the dialog's border
        table.styles.max_height = max(2, min(TABLE_ROWS, room))

    def action_move(self, step: int) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=max(0, table.cursor_row + step))

    # ---- scan ------------------------------------------------------------------------------------

    def _scan(self) -> None:
        from eagle_console.ops import orphans

        try:
            self._found = orphans.scan(self.ctx.sim_dir, self.ctx.journal)
        except Exception as exc:  # show it in the dialog instead of crashing the console
            self.app.call_from_thread(self._show_error, f"cannot scan GPU holders: {exc}")
            return
        self.app.call_from_thread(self._show_holders, self._found)

    def _show_error(self, message: str) -> None:
        self.state = "done"
        self.query_one("#kill-summary", Static).update(Text(message, style=tstyle("ec.error")))

    def _show_holders(self, found: HolderScan) -> None:
        from eagle_console.ops.orphans import preselected

        holders, refused = self.holders, self.refused = found.holders, found.refused
        note = found.error if found.unavailable else None
        self.selected = preselected(found)
        table = self.query_one(DataTable)
        for h in holders:
            why = refused.get(h.pid)
            cmd = holder_command(h, 50)
            if why:
                cmd = f"✗ {why} · {holder_command(h, 40)}"
            style = tstyle("ec.error.bold") if h.cls == "orphan" else "dim" if why else ""
            table.add_row(self._mark(h.pid), Text(str(h.pid), style=style), ",".join(map(str, h.gpus)) or "-",
                          f"{h.used_mib:.0f}" if h.used_mib is not None else "fd", Text(h.cls, style=style),
                          Text(h.owner or "—"), Text(cmd, style=style), key=str(h.pid))
        self.state = "choosing"
        summary = holders_summary(holders)
        if note:
            summary += f" · {note}"
        if not holders:
            summary = "No GPU holders: nothing to kill." + (f" ({note})" if note else "")
        self.query_one("#kill-summary", Static).update(summary)
        self._show_plan()

    def _mark(self, pid: int) -> Text:
        if pid in self.refused:
            return Text("✗", style="dim")
        return Text("[x]", style=tstyle("ec.error.bold")) if pid in self.selected else Text("[ ]")

    def _show_plan(self) -> None:
        chosen = self.chosen()
        if self.grace_error:
            text = Text(f"{self.grace_error}: fix it to kill from here", style=tstyle("ec.error"))
        elif not chosen:
            text = Text("Nothing selected.", style="dim")
        else:
            freed = memory_by_gpu(chosen)
            gpus = ", ".join(f"GPU {g} {mib:.0f} MiB" for g, mib in sorted(freed.items()))
            text = Text(f"Enter sends SIGTERM to {len(chosen)} process(es): {' '.join(str(h.pid) for h in chosen)}\n"
                        f"then SIGKILL to survivors after {self.grace:g}s; expected to free {gpus or '? MiB'}",
                        style="bold")
        self.query_one("#kill-plan", Static).update(text)
        self.call_after_refresh(self._fit)

    def chosen(self) -> list[Holder]:
        return [h for h in self.holders if h.pid in self.selected]

    # ---- keys ------------------------------------------------------------------------------------

    def action_toggle(self) -> None:
        if self.state != "choosing" or not self.holders:
            return
        table = self.query_one(DataTable)
        h = self.holders[table.cursor_row]
        if h.pid in self.refused:
            self.app.bell()
            self._say(f"{h.pid} cannot be signalled: {self.refused[h.pid]}")
            return
        self.selected ^= {h.pid}
        table.update_cell(str(h.pid), "sel", self._mark(h.pid))
        self._show_plan()

    def action_kill(self) -> None:
        if self.state == "done":
            self.action_close()
            return
        if self.state == "confirming":  # Enter is the default answer to the second question: no
            self.action_answer(False)
            return
        if self.state != "choosing":
            return
        if self.ctx.readonly:
            self._say("read-only console: killing is disabled")
            return
        if self.grace_error:
            self._say(Text(self.grace_error, style=tstyle("ec.error")))
            return
        targets = self.chosen()
        if not targets:
            self._say("select at least one process (space)")
            return
        tracked = [h for h in targets if h.cls == "tracked"]
        if tracked:
            self._ask(tracked)
            return
        self._start_kill(targets)

    def _ask(self, tracked: list[Holder]) -> None:
        """The second question: a live run's process is not an orphan, killing it fails its step."""
        from eagle_console.ops.orphans import tracked_note

        self.state = "confirming"
        them = "them" if len(tracked) > 1 else "it"
        question = "; ".join(tracked_note(h) for h in tracked) + f": kill {them} anyway? y/N"
        self._say(Text(question, style=tstyle("ec.error.bold")))
        self.query_one("#kill-hint", Static).update("y kill · n / enter / esc keep it running")

    def action_answer(self, yes: bool) -> None:
        if self.state != "confirming":
            return
        if yes:
            self._start_kill(self.chosen())
            return
        self.state = "choosing"
        self._say("not killed: the tracked process keeps running")
        self.query_one("#kill-hint", Static).update(CHOOSE_KEYS)

    def _start_kill(self, targets: list[Holder]) -> None:
        self.state = "killing"
        self.query_one("#kill-hint", Static).update("killing… the result shows here when it is done")
        plan = self.query_one("#kill-plan", Static)  # what Enter would do is done now: not left standing
        plan.update("")
        plan.display = False
        self._say(f"SIGTERM sent · SIGKILL in {self.grace:.0f}s")
        self.run_worker(lambda: self._kill(targets), thread=True, group="kill-run", exit_on_error=False)

    def action_close(self) -> None:
        if self.state == "confirming":
            self.action_answer(False)
            return
        if self.state == "killing":  # the kill finishes and journals first
            self._say("still killing: wait for the result")
            return
        if self._found is not None:
            self._found.close()
        self.dismiss(self.report)

    # ---- kill ------------------------------------------------------------------------------------

    def _kill(self, targets: list[Holder]) -> None:
        from eagle_console.ops import orphans

        def progress(left: float, alive: list[int]) -> None:
            self.app.call_from_thread(self._countdown, left, alive)

        assert self._found is not None  # enter is only live once the scan is shown
        try:
            record = orphans.kill(self._found, targets, grace=self.grace, face="console", journal=self.ctx.journal,
                                  scope=orphans.selection_scope(self._found, self.selected), progress=progress)
        except Exception as exc:
            self.app.call_from_thread(self._done, None, f"kill failed: {exc}")
            return
        self.app.call_from_thread(self._done, record, None)

    def _countdown(self, left: float, alive: list[int]) -> None:
        self._say(
            f"SIGTERM sent · SIGKILL in {left:.0f}s · still alive: {' '.join(map(str, alive))}")

    def _done(self, record: KillRecord | None, error: str | None) -> None:
        self.state = "done"
        self.report = record
        progress = self.query_one("#kill-progress", Static)
        progress.update(result_text(record) if record is not None else Text(error or "", style=tstyle("ec.error")))
        if record is not None:  # the counts above the table were the scan's: say what is left now
            left = [h for h in self.holders if h.pid not in set(record.killed)]
            self.query_one("#kill-summary", Static).update("after the kill: " + holders_summary(left))
        self.query_one("#kill-hint", Static).update("enter / esc close")
        self.call_after_refresh(self._fit)
        for pid in record.killed if record is not None else []:
            try:
                self.query_one(DataTable).update_cell(str(pid), "sel", Text("✔", style=tstyle("ec.ok.bold")))
            except Exception:  # the row may be gone if the table was rebuilt
                pass
        from eagle_console.tui.messages import GpusChanged

        self.post_message(GpusChanged())  # the App has the GPU pane read again
