"""The Note modal: one line of text (a decision, an observation) for the selected step."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from eagle_console.tui.screens.dialog import Dialog


class NoteScreen(Dialog["str | None"]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_id: str, title: str) -> None:
        super().__init__()
        self.step_id, self.step_title = step_id, title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Note on {self.step_id} — {self.step_title}", id="dialog-title", markup=False)
            # the keys on their own line: in the placeholder they were cut (`Esc to cance`) by the input's width
            yield Input(placeholder="a decision or an observation", id="note")
            yield Static("Enter save · Esc cancel", classes="hint", id="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#note", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.dismiss(text)
        else:
            self.notify("the note is empty", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(None)
