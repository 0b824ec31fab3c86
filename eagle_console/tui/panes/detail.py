"""The Detail line: the selected step's action, check, rollback, last status change and notes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from eagle_console.journal.status import plan_statuses, unmet_needs
from eagle_console.ops.console import drafter_actions, drafter_inputs_stamp, drafter_lines
from eagle_console.ops.steps import elsewhere, held_end_text
from eagle_console.plan.safe_text import printable
from eagle_console.tui.cells import ELLIPSIS, ellipsise
from eagle_console.tui.labels import rollback_label
from eagle_console.tui.messages import ToastRoomChanged
from eagle_console.tui.panes._logview import UNCHANGED, Poller, QuietStatic

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan
    from eagle_console.tui.live import Snapshot

DRAFTER_POLL_S = 1.0  # the verdict is right within ~1 s of a fix or a rollback
ROWS, ROWS_SHORT = 5, 4  # the most rows the line takes; on a short screen (the App says) fewer: each one is the
# GPU pane's or the log tabs' (issue 32: a five-row Detail line left the GPU pane no holder row at 80x24)


def fit_rows(text: Text, width: int, rows: int, console: Any) -> Text:
    """`text` wrapped to `width`, at most `rows` rows, the last ending with … when some were left out: a
    cut is said, never a sentence that just stops."""
    lines = text.wrap(console, width)
    if len(lines) <= rows:
        return text
    kept = list(lines)[:rows]
    last = kept[-1]
    last.rstrip()
    last.truncate(max(0, width - 1))
    last.append(ELLIPSIS)
    return Text("\n").join(kept)


def _person(who: str | None, face: str | None) -> str:
    """`alice via agent:claude-code`: who acted, and through which face (console, cli, agent:<client>)."""
    return f"{who} via {face}" if who and face else who or face or "?"


def _when(at: float) -> str:
    same_day = time.strftime("%Y-%m-%d", time.localtime(at)) == time.strftime("%Y-%m-%d")
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.localtime(at))


def shown_path(path: str, folder: Path) -> str:
    """A log path as short as it can be and still be typed: relative to the plan's folder when under it (a
    shell opened there, as `eagle-console log` is), else with ~ for the home folder (80 columns fit it)."""
    p = Path(path)
    for base, prefix in ((folder, ""), (Path.home(), "~/")):
        try:
            return prefix + str(p.relative_to(base))
        except ValueError:
            continue
    return path


def describe(plan: Plan, item_id: str | None, snap: Snapshot | None, width: int | None = None) -> Text:
    """Two short lines for the selected phase or step; plain facts, nothing guessed. The first (what `r`
    and `u` do) is cut to `width` with …: a long command took four rows at 80x24, and the Step pane above
    shows it whole."""
    if item_id is None:
        return Text("no step selected", style="dim")
    step_status = snap.statuses() if snap else {}
    phase = plan.phase(item_id) if plan.step(item_id) is None else None
    if phase is not None:
        st = plan_statuses(plan, step_status)[phase.id]
        done = sum(1 for s in phase.steps if step_status.get(s.id) in ("completed", "skipped"))
        ask = snap.awaiting(phase.id) if snap else None
        waiting = (f"\n⚠ request {ask.id}: {ask.asker()} asks to {ask.summary} — a approves or denies"
                   if ask is not None else "")
        return Text(f"phase {phase.id} · {st} · {done}/{len(phase.steps)} steps done · {phase.title}"
                    + printable(waiting, multiline=True))
    step = plan.step(item_id)
    if step is None:
        return Text(f"{item_id}: no longer in the plan", style="dim")
    parts = [step.id, step.action.describe() if step.action else "manual step (mark it by hand)"]
    if step.service:
        parts.append("service")
    if step.check:
        parts.append(f"check {step.check.describe()}")
    parts.append(rollback_label(step, why=False))  # what `u` will really do, as the Step pane says it
    first = " · ".join(parts)
    if width:
        first = ellipsise(first, width)

    second: list[str] = []
    state = snap.states.get(step.id) if snap else None
    if state is None:
        second.append("pending (never changed)")
    else:
        who = f" by {_person(state.who, state.face)}" if state.who or state.face else ""
        second.append(f"{state.status} {_when(state.at)}{who}" + (f" ({state.reason})" if state.reason else ""))
    run = snap.runs.get(step.id) if snap else None
    if run is not None:
        # started through another face than the state's, and not this console's own (said only when it is news:
        # at 80x24 the Detail line has 4 rows, and 0.2b's vocab verdict needs two of them)
        if run.face and run.face not in (state.face if state else None, "console"):
            second.append(f"run by {_person(run.who, run.face)}")
        held = held_end_text(run, plan.state_dir) if not run.finished else None
        if held:  # its action ended, a full disk keeps its end out of the journal: "pid N" reads as running
            second.append(held)
        elif run.pid:  # another machine's (a state dir several share): its pid means nothing here
            second.append(f"pid {run.pid}" + (f" on {run.host} (not this machine)" if elsewhere(run) else ""))
        if run.log:
            second.append(f"log {shown_path(run.log, plan.folder)}")
    unmet = unmet_needs(plan, step, step_status)
    if unmet and step_status.get(step.id) not in ("completed", "skipped"):
        second.append(f"needs {', '.join(unmet)}")
    notes = snap.notes.get(step.id, []) if snap else []
    if notes:
        last = notes[-1]
        more = f" (+{len(notes) - 1} more)" if len(notes) > 1 else ""
        by = f" ({_person(last.who, last.face)})" if last.face else ""
        second.append(f"note{by}: {last.text}{more}")
    ask = snap.awaiting(step.id) if snap else None
    if ask is not None:  # first in line: a person must answer it
        second.insert(0, f"⚠ request {ask.id}: {ask.asker()} asks to {ask.action} it — a approves or denies")
    out = Text(first, style="bold")
    out.append("\n")
    out.append(printable(" · ".join(second), multiline=False))  # notes, who, reasons: journal text
    return out


class DetailLine(QuietStatic):
    """Updated in place. Drafter findings, computed off the loop, are kept per step and shown below.

    They are derived from files and the journal, so they are recomputed whenever either changes, not only
    when the cursor moves: a poll (worker) compares the selected step, the journal's last event and the
    stamps of the files the report reads, and reads the report again only when one of them changed."""

    def __init__(self, content: str = "", *, refresh_s: float = DRAFTER_POLL_S, **kwargs) -> None:
        # QuietStatic: a resize or a poll that leaves the two lines as they were relays nothing out
        super().__init__(content, markup=False, **kwargs)  # notes and titles are text, never markup
        self._extra: dict[str, list[str]] = {}
        self._last: tuple | None = None
        self._drafter_key: tuple | None = None
        self.rows = ROWS
        self.poller = Poller(self, refresh_s, self._read_drafter, self._drafter_read, name="drafter-poll")

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    def on_resize(self) -> None:
        if self._last is not None and self._last[2] is not None:  # the first line is cut to the width
            self.show(*self._last)
        self.post_message(ToastRoomChanged())  # the toasts sit above this line, whatever its height

    def show(self, plan: Plan, item_id: str | None, snap: Snapshot | None) -> None:
        moved = self._last is None or self._last[1] != item_id or self._last[0] is not plan
        self._last = (plan, item_id, snap)
        if moved:  # a new step or plan: its report now, not at the next poll
            self.poller.poke()
        # Before its first layout (the first screen's lines are written in on_mount) the line is as wide as
        # the screen less its padding: cut to that, the resize after the layout finds nothing to redo.
        width = self.content_size.width or (self.app.size.width - self.styles.gutter.width) or None
        text = describe(plan, item_id, snap, width)
        for line in self._extra.get(item_id or "", []):
            text.append("\n" + line, style="italic")
        self.update(fit_rows(text, width, self.rows, self.app.console) if width else text)

    def fit(self, rows: int) -> None:
        """The App's cap for this screen's height."""
        if rows != self.rows:
            self.rows = rows
            if self._last is not None:
                self.show(*self._last)

    def show_extra(self, item_id: str, lines: list[str]) -> None:
        self._extra[item_id] = lines
        if self._last is not None and self._last[1] == item_id:
            self.show(*self._last)

    def _read_drafter(self) -> tuple[str, list[str]] | None:
        """Worker: the selected step's drafter report when its inputs or the journal changed, else UNCHANGED
        (nothing handed to the event loop)."""
        if self._last is None:
            return UNCHANGED
        plan, item_id, snap = self._last
        if not item_id or not drafter_actions(plan.step(item_id)):
            self._drafter_key = None
            return UNCHANGED
        key = (id(plan), item_id, snap.event_id if snap else None, drafter_inputs_stamp(plan, item_id))
        if key == self._drafter_key:
            return UNCHANGED
        self._drafter_key = key
        return item_id, drafter_lines(plan, item_id)

    def _drafter_read(self, result: tuple[str, list[str]] | None) -> None:
        if result is not None:
            self.show_extra(*result)
