"""The Mark modal: pick a status, add an optional note, Enter marks, Esc cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from eagle_console.journal.status import STATUSES
from eagle_console.tui.labels import GLYPHS
from eagle_console.tui.screens.dialog import Dialog


class MarkScreen(Dialog["tuple[str, str | None] | None"]):
    """Dismisses with (status, note or None), or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_id: str, title: str, current: str) -> None:
        super().__init__()
        self.step_id, self.step_title, self.current = step_id, title, current
        self._status: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Mark {self.step_id} — {self.step_title}", id="dialog-title", markup=False)
            yield Label(f"now {self.current}; choose a status, Enter", classes="hint")
            yield OptionList(*[Option(f"{GLYPHS[s]} {s}", id=s) for s in STATUSES], id="statuses")
            yield Input(placeholder="note (optional) — Enter to mark, Esc to cancel", id="note")

    def on_mount(self) -> None:
        options = self.query_one("#statuses", OptionList)
        # Start on the status one would most likely pick next, not on the current one.
        default = "completed" if self.current != "completed" else "pending"
        options.highlighted = STATUSES.index(default)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._status = event.option.id
        self.query_one("#note", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        status = self._status
        if status is None:  # Enter in the note without picking: take the highlighted one
            options = self.query_one("#statuses", OptionList)
            status = STATUSES[options.highlighted or 0]
        self.dismiss((status, event.value.strip() or None))

    def action_cancel(self) -> None:
        self.dismiss(None)
