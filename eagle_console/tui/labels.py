"""How a step or phase reads in the Plan tree: glyph, id, title (ellipsised), priority, elapsed, unmet needs."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from eagle_console.tui import cells
from eagle_console.tui.theme import tstyle

GLYPHS = {
    "completed": "✔", "in_progress": "◐", "pending": "○", "failed": "✖", "skipped": "⊘", "rolled_back": "↺",
}
STATUS_STYLE = {
    "completed": "ec.ok", "in_progress": "ec.warn", "pending": "", "failed": "ec.error.bold",
    "skipped": "dim", "rolled_back": "ec.other",
}
PRIORITY_MARK = {"high": "!", "medium": " ", "low": "↓"}
UNMET_MARK = "⇠"  # waits on a step that is not completed yet
RUNNING_MARK = "⟳"
APPROVAL_MARK = "⚠ approve?"  # an agent's request waits on this step (a answers it)


def elapsed_text(seconds: float) -> str:
    """`12m04s`, `1h02m`, `45s`: short enough to sit beside a title at 80 columns."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def node_label(item_id: str, title: str, status: str, priority: str, *, width: int,
               elapsed: float | None = None, unmet: bool = False, awaiting: bool = False) -> Text:
    """One tree line fitted to `width` cells; the title gives way first, the status and timer never do."""
    glyph = GLYPHS.get(status, "?")
    tail = ""
    if elapsed is not None:
        tail = f"  {RUNNING_MARK} {elapsed_text(elapsed)}"
    if unmet:
        tail += f" {UNMET_MARK}"
    if awaiting:
        tail += f" {APPROVAL_MARK}"
    head = f"{glyph} {PRIORITY_MARK.get(priority, ' ')}{item_id} "
    room = width - cells.cells(head) - cells.cells(tail)
    label = Text()
    label.append(glyph, style=tstyle(STATUS_STYLE.get(status, "")))
    label.append(" ")
    label.append(PRIORITY_MARK.get(priority, " "), style=tstyle("ec.error.bold") if priority == "high" else "dim")
    label.append(f"{item_id} ", style="bold")
    label.append(cells.ellipsise(title, max(room, 8)), style="dim" if status in ("skipped", "completed") else "")
    if elapsed is not None:
        label.append(f"  {RUNNING_MARK} {elapsed_text(elapsed)}", style=tstyle("ec.warn"))
    if unmet:
        label.append(f" {UNMET_MARK}", style=tstyle("ec.info"))
    if awaiting:
        label.append(f" {APPROVAL_MARK}", style=tstyle("ec.warn"))
    return label


FINDING_STYLE = {"error": "ec.error.bold", "warning": "ec.warn"}


def findings_text(findings: list[dict[str, Any]], width: int | None, severity: bool = False) -> Text:
    """One line per finding (`Finding.to_json` dicts), styled by severity; the message cut to `width` cells
    (None: whole, wrapped by the pane)."""
    out = Text()
    for f in findings:
        head = f"{f['severity'].upper()} {f['code']}" if severity else f["code"]
        message = f["message"] if width is None else cells.cut(f["message"], width)
        out += Text(f"\n{head}: {message}", style=tstyle(FINDING_STYLE.get(f["severity"], "dim")))
    return out


def rollback_label(step, why: bool = True) -> str:
    """What `u` does to a step, as the engine's rollback will do it: its `rollback`, the built-in's own undo,
    stopping a service, a mark only (the built-in's `undo_marks` says why, unless `why` is False: the
    Detail line keeps to one line and leaves the reason to the Step pane), or nothing."""
    if step.rollback is not None:
        return f"rollback: {step.rollback.describe()}"
    if step.action is None:
        return "rollback: marks it rolled back" + (" (manual step)" if why else "")
    if step.uses:
        from eagle_console.ops import builtin_class_or_none

        cls = builtin_class_or_none(step.uses)
        if cls is not None:
            if cls.has_undo():
                return f"rollback: {step.uses} undo"
            if cls.service:
                return f"rollback: stops the {step.uses} service"
            if cls.undo_marks:
                reason = f" ({cls.undo_marks.split(':')[0]})" if why else ""
                return f"rollback: marks rolled back{reason}"
    return "no rollback"
