"""A yes/no confirmation: Enter or y confirms, Esc or n cancels. Used for `confirm` steps."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = "ConfirmScreen { align: center middle; }"
    BINDINGS = [
        Binding("enter,y", "answer(True)", "Confirm"),
        Binding("escape,n", "answer(False)", "Cancel"),
    ]

    def __init__(self, title: str, body: str = "") -> None:
        super().__init__()
        self._title = title
        self._body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self._title, id="dialog-title", markup=False)
            if self._body:
                yield Static(self._body, id="dialog-body", markup=False)
            yield Static("Enter confirm · Esc cancel", id="dialog-keys")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
