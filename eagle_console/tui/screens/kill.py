"""`K`: kill orphaned GPU workers. Lists every holder (orphans preselected), what will be signalled,
then SIGTERM → grace countdown → SIGKILL in a worker, and the result (killed, survivors, MiB freed).

The scan, the kill plan's preselection and the kill (ops: ops/orphans.py) run in thread workers; the countdown comes back through `call_from_thread`.
Holders that `kill.refusal` protects (PID 1, the console and its ancestors, every eagle-console process,
the console's session, other users, other PID namespaces) are shown with the reason and cannot be
selected, but for another user's process when the console runs as root: it is never preselected, and
selecting it by hand is root's pick (`HolderScan.pickable`). A selection with a tracked process (a live
run's server) asks a second question naming the step; only `y` answers it, Enter alone keeps the selection
and kills nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from eagle_console.node.gpus.unseen import unseen_notes
from eagle_console.ops import KillRecord, memory_by_gpu
from eagle_console.tui.cells import ellipsise
from eagle_console.tui.panes.gpu_rows import holder_command
from eagle_console.tui.screens.dialog import Dialog
from eagle_console.tui.screens.kill_text import left_text, remote_text, result_text, row_key
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.node.procs import Holder
    from eagle_console.ops import HolderScan
    from eagle_console.tui.context import ConsoleContext


CHOOSE_KEYS = "space select · j/k move · enter send SIGTERM · esc close"
KillState = Literal["scanning", "choosing", "confirming", "killing", "done"]
# the key line each state shows (watch_state): set once, where the state changes
STATE_KEYS: dict[str, str] = {
    "scanning": CHOOSE_KEYS, "choosing": CHOOSE_KEYS,
    "confirming": "y kill · n / enter / esc keep it running",  # a tracked one: the second question
    "killing": "killing… the result shows here when it is done",
    "done": "enter / esc close",
}
TABLE_ROWS = 16  # the most the holders table takes; fewer when the terminal is short (`_fit`)
DIALOG_CELLS = 150  # the dialog's width (KillScreen's CSS), less on a narrower screen


class KillScreen(Dialog[KillRecord | None]):
    """Dismisses with the journaled record, or None when nothing was killed."""

    state: reactive[KillState] = reactive("scanning", init=False)  # scanning → choosing ⇄ confirming → killing → done

    DEFAULT_CSS = """
    KillScreen { align: center middle; }
    KillScreen > #kill-dialog {
        width: 150; max-width: 100%; height: auto; max-height: 100%;
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
        from eagle_console.ops import GraceError, resolve_grace

        super().__init__()
        self.ctx = ctx
        self.grace_error: str | None = None
        try:
            self.grace = resolve_grace() if grace is None else grace
        except GraceError as exc:  # a bad EAGLE_CONSOLE_KILL_GRACE: say so instead of guessing a grace
            self.grace, self.grace_error = 0.0, str(exc)
        self.holders: list[Holder] = []  # this machine's
        self.refused: dict[int, str] = {}
        # every row in table order: (node, holder), node None for this machine's (cluster nodes: ctx.plan.cluster)
        self.rows: list[tuple[str | None, Holder]] = []
        self.refused_rows: dict[str, str] = {}  # row_key -> why it cannot be signalled
        self.pickable_rows: set[str] = set()  # refused rows root may still select by hand (another user's)
        self.selected: set[str] = set()  # row keys
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
            yield Static(STATE_KEYS[self.state], classes="hint", id="kill-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("", "sel"), ("PID", "pid"), ("GPU", "gpu"), ("MiB", "mib"), ("CLASS", "cls"),
                           ("OWNER", "owner"), ("COMMAND / why", "cmd")):
            table.add_column(label, key=key)
        table.focus()
        self.run_worker(self._scan, thread=True, group="kill-scan", exit_on_error=False)

    def watch_state(self, state: KillState) -> None:
        if self.is_mounted:
            self.query_one("#kill-hint", Static).update(STATE_KEYS[state])

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
        from eagle_console.ops import scan

        try:
            self._found = scan(self.ctx.sim_dir, self.ctx.journal)
        except Exception as exc:  # show it in the dialog instead of crashing the console
            self.app.call_from_thread(self._show_error, f"cannot scan GPU holders: {exc}")
            return
        self.app.call_from_thread(self._show_holders, self._found, self._scan_nodes())

    def _scan_nodes(self) -> list[dict[str, Any]]:
        """Worker: with a plan's [cluster], every node's holders read now (each node's agent scans there)."""
        cluster = self.ctx.plan.cluster
        if cluster is None:
            return []
        from eagle_console.ops import read_nodes

        try:
            return read_nodes(cluster.address, self.ctx.journal)
        except Exception as exc:  # noqa: BLE001 - the cluster is down: this machine's holders still show
            return [{"name": "?", "reachable": False, "error": f"cannot read the cluster: {exc}", "holders": None}]

    def _show_error(self, message: str) -> None:
        self.state = "done"
        self.query_one("#kill-summary", Static).update(Text(message, style=tstyle("ec.error")))

    def _show_holders(self, found: HolderScan, nodes: list[dict[str, Any]] | None = None) -> None:
        from eagle_console.ops import holders_of, preselect, preselected

        holders, refused = self.holders, self.refused = found.holders, found.refused
        note = found.error if found.unavailable else None
        self.rows = [(None, h) for h in holders]
        self.refused_rows = {row_key(None, pid): why for pid, why in refused.items()}
        self.pickable_rows = {row_key(None, pid) for pid in found.pickable}
        self.selected = {row_key(None, pid) for pid in preselected(found)}
        unreachable = []
        here = self.ctx.this_node(nodes or [])
        for entry in nodes or []:
            if entry["name"] == here:  # this machine's node: its holders are the rows above, scanned here
                continue
            if not entry.get("reachable"):
                unreachable.append(f"node {entry['name']} UNREACHABLE ({entry.get('error')})")
                continue
            node_holders, node_refused = holders_of(entry), entry.get("refused") or {}  # refused: by JSON key
            ticked = preselect(node_holders, node_refused, key=str)  # as this machine's are
            for h in node_holders:
                key = row_key(entry["name"], h.pid)
                self.rows.append((entry["name"], h))
                why = node_refused.get(str(h.pid))
                if why:
                    self.refused_rows[key] = why
                elif h.pid in ticked:
                    self.selected.add(key)
        table = self.query_one(DataTable)
        cells = [(row_key(node, h.pid), ",".join(map(str, h.gpus)) or "-",
                  f"{h.used_mib:.0f}" if h.used_mib is not None else "fd", h.cls, h.owner or "—") for node, h in self.rows]
        room = self._command_cells(cells)
        for (_node, h), (key, gpus, mib, cls, owner) in zip(self.rows, cells, strict=True):
            why = self.refused_rows.get(key)
            if why and key in self.pickable_rows:
                why = f"{why}: space picks it"
            elif why:
                why = f"✗ {why}"
            cmd = ellipsise(f"{why} · {holder_command(h, room)}" if why else holder_command(h, room), room)
            style = tstyle("ec.error.bold") if h.cls == "orphan" else "dim" if why else ""
            table.add_row(self._mark(key), Text(key, style=style), gpus, mib, Text(cls, style=style),
                          Text(owner), Text(cmd, style=style), key=key)
        self.state = "choosing"
        by_gpu = memory_by_gpu(holders)
        mem = ", ".join(f"GPU {g}: {mib:.0f} MiB" for g, mib in sorted(by_gpu.items())) or "no GPU memory held"
        total = len(self.rows)  # every node's holders (issue 26: the header counted this machine's only)
        count = f"{total} GPU holder{'s' if total != 1 else ''}"
        summary = f"{count} · {mem}"
        if nodes:
            per_node = Counter(node for node, _h in self.rows if node is not None)
            where = ", ".join([f"this machine {len(holders)}"] + [f"node {n} {c}" for n, c in sorted(per_node.items())])
            summary = f"{count} ({where}) · this machine: {mem}"
        if note:
            summary += f" · {note}"
        if not self.rows:
            summary = "No GPU holders: nothing to kill." + (f" ({note})" if note else "")
        unseen = unseen_notes(found.sample) if found.sample is not None else []
        if unseen:  # "nothing to kill" must not read as "nothing holds the GPUs"
            summary += "\n" + "\n".join(unseen)
        if unreachable:
            summary += " · " + "; ".join(unreachable)
        self.query_one("#kill-summary", Static).update(summary)
        self._show_plan()

    def _command_cells(self, cells: list[tuple[str, ...]]) -> int:
        """What the COMMAND column has left of the dialog's width once the other columns are as wide as their
        widest cell: a command was cut at 50 cells whatever the width (room to spare at 120 columns, and
        past the dialog's edge at 80)."""
        dialog = min(DIALOG_CELLS, self.size.width) - 4  # its border and padding
        widths = [3] + [max([len(head), *(len(row[i]) for row in cells)]) for i, head in
                        enumerate(("PID", "GPU", "MiB", "CLASS", "OWNER"))]
        # each column's padding (DataTable: one cell each side), and the vertical scrollbar when the rows will
        # not all show (the dialog's other lines take about 12 rows)
        scrollbar = 2 if len(cells) + 1 > min(TABLE_ROWS, self.size.height - 12) else 0
        return max(20, dialog - sum(widths) - 2 * (len(widths) + 1) - scrollbar)

    def _mark(self, key: str) -> Text:
        if key in self.refused_rows and key not in self.pickable_rows:
            return Text("✗", style="dim")
        return Text("[x]", style=tstyle("ec.error.bold")) if key in self.selected else Text("[ ]")

    def _show_plan(self) -> None:
        chosen = self.chosen()
        remote = self.chosen_remote()
        if self.grace_error:
            text = Text(f"{self.grace_error}: fix it to kill from here", style=tstyle("ec.error"))
        elif not chosen and not remote:
            text = Text("Nothing selected.", style="dim")
        else:
            freed = memory_by_gpu(chosen)
            gpus = [f"GPU {g} {mib:.0f} MiB" for g, mib in sorted(freed.items())]
            gpus += [f"node {node} GPU {g} {mib:.0f} MiB" for node, hs in sorted(remote.items())
                     for g, mib in sorted(memory_by_gpu(hs).items())]
            keys = [str(h.pid) for h in chosen] + [row_key(n, h.pid) for n, hs in sorted(remote.items()) for h in hs]
            text = Text(f"Enter sends SIGTERM to {len(keys)} process(es): {' '.join(keys)}\n"
                        f"then SIGKILL to survivors after {self.grace:g}s; expected to free "
                        f"{', '.join(gpus) or '? MiB'}", style="bold")
        self.query_one("#kill-plan", Static).update(text)
        self.call_after_refresh(self._fit)

    def chosen(self) -> list[Holder]:
        """This machine's selected holders."""
        return [h for node, h in self.rows if node is None and row_key(None, h.pid) in self.selected]

    def chosen_remote(self) -> dict[str, list[Holder]]:
        """The cluster nodes' selected holders, by node."""
        out: dict[str, list[Holder]] = {}
        for node, h in self.rows:
            if node is not None and row_key(node, h.pid) in self.selected:
                out.setdefault(node, []).append(h)
        return out

    # ---- keys ------------------------------------------------------------------------------------

    def action_toggle(self) -> None:
        if self.state != "choosing" or not self.rows:
            return
        table = self.query_one(DataTable)
        node, h = self.rows[table.cursor_row]
        key = row_key(node, h.pid)
        if key in self.refused_rows and key not in self.pickable_rows:
            self.app.bell()
            self._say(f"{key} cannot be signalled: {self.refused_rows[key]}")
            return
        self.selected ^= {key}
        table.update_cell(key, "sel", self._mark(key))
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
        remote = [h for hs in self.chosen_remote().values() for h in hs]
        if not targets and not remote:
            self._say("select at least one process (space)")
            return
        tracked = [h for h in targets + remote if h.cls == "tracked"]
        if tracked:
            self._ask(tracked)
            return
        self._start_kill(targets)

    def _ask(self, tracked: list[Holder]) -> None:
        """The second question: a live run's process is not an orphan, killing it fails its step."""
        from eagle_console.ops import tracked_note

        self.state = "confirming"
        them = "them" if len(tracked) > 1 else "it"
        question = "; ".join(tracked_note(h) for h in tracked) + f": kill {them} anyway? y/N"
        self._say(Text(question, style=tstyle("ec.error.bold")))

    def action_answer(self, yes: bool) -> None:
        if self.state != "confirming":
            return
        if yes:
            self._start_kill(self.chosen())
            return
        self.state = "choosing"
        self._say("not killed: the tracked process keeps running")

    def _start_kill(self, targets: list[Holder]) -> None:
        self.state = "killing"
        plan = self.query_one("#kill-plan", Static)  # what Enter would do is done now: not left standing
        plan.update("")
        plan.display = False
        self._say(f"SIGTERM sent · SIGKILL in {self.grace:.0f}s")
        remote = self.chosen_remote()
        self.run_worker(lambda: self._kill(targets, remote), thread=True, group="kill-run", exit_on_error=False)

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

    def _kill(self, targets: list[Holder], remote: dict[str, list[Holder]]) -> None:
        from eagle_console.ops import kill, selection_scope

        def progress(left: float, alive: list[int]) -> None:
            self.app.call_from_thread(self._countdown, left, alive)

        assert self._found is not None  # enter is only live once the scan is shown
        record = None
        try:
            if targets:
                local = {int(k) for k in self.selected if ":" not in k}
                record = kill(self._found, targets, grace=self.grace, face="console", journal=self.ctx.journal,
                              scope=selection_scope(self._found, local), progress=progress,
                              picked=local & self._found.pickable)
            nodes = self._kill_on_nodes(remote) if remote else {}
        except Exception as exc:
            self.app.call_from_thread(self._done, record, f"kill failed: {exc}")
            return
        self.app.call_from_thread(self._done, record, None, self._left() if targets else None, nodes)

    def _kill_on_nodes(self, remote: dict[str, list[Holder]]) -> dict[str, dict[str, Any]]:
        """Worker: each node's agent kills its selected pids there, with that node's protections; one
        KillRecord per node in the journal. `y` to the second question already allowed tracked ones."""
        from eagle_console.ops import SELECTED, kill_on_nodes

        assert self.ctx.plan.cluster is not None
        return kill_on_nodes(self.ctx.plan.cluster.address, scope=SELECTED, match=[], grace=self.grace,
                             journal=self.ctx.journal, include_tracked=True, face="console",
                             pids={node: [h.pid for h in hs] for node, hs in remote.items()})

    def _left(self) -> list[Holder] | None:
        """Worker: the holders after the kill, scanned again (the dialog's first scan is history now)."""
        from eagle_console.ops import scan

        try:
            with scan(self.ctx.sim_dir, self.ctx.journal) as after:
                return after.holders
        except Exception:  # the result stands; the summary says it could not count again
            return None

    def _countdown(self, left: float, alive: list[int]) -> None:
        self._say(
            f"SIGTERM sent · SIGKILL in {left:.0f}s · still alive: {' '.join(map(str, alive))}")

    def _done(self, record: KillRecord | None, error: str | None, left: list[Holder] | None = None,
              nodes: dict[str, dict[str, Any]] | None = None) -> None:
        self.state = "done"
        self.report = record
        progress = self.query_one("#kill-progress", Static)
        shown = result_text(record) if record is not None else Text(error or "", style=tstyle("ec.error"))
        if nodes:
            shown = remote_text(nodes) if record is None and not error else shown + Text("\n") + remote_text(nodes)
        progress.update(shown)
        if record is not None or nodes:  # the totals count every node's kill (issue 26)
            self.query_one("#kill-summary", Static).update(left_text(record, left, nodes))
        self.call_after_refresh(self._fit)
        killed = [row_key(None, pid) for pid in (record.killed if record is not None else [])]
        killed += [row_key(node, pid) for node, r in (nodes or {}).items() for pid in r.get("killed") or []]
        for key in killed:
            try:
                self.query_one(DataTable).update_cell(key, "sel", Text("✔", style=tstyle("ec.ok.bold")))
            except Exception:  # the row may be gone if the table was rebuilt
                pass
        from eagle_console.tui.messages import GpusChanged

        self.post_message(GpusChanged())  # the App has the GPU pane read again
