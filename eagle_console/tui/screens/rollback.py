"""The rollback confirmation: every UndoItem in the order it will be undone; `c` adds or drops its dependents.

When the plain rollback is refused because completed steps depend on the target, the screen says so and
offers the cascade order; Enter confirms only an order that is not refused.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from eagle_console.ops.rollback import RollbackChoice
from eagle_console.tui.screens.dialog import Dialog


def order_text(choice: RollbackChoice, cascade: bool) -> str:
    refused = choice.refusal_for(cascade)
    if refused:
        lines = [f"refused: {refused}"]
        if not cascade and not choice.cascade_refused:
            lines.append("press c to include its dependents")
        return "\n".join(lines)
    items = choice.items_for(cascade)
    return "\n".join(f"{n}. {item.step_id}: {item.description}" for n, item in enumerate(items, 1))


class RollbackScreen(Dialog["bool | None"]):
    """Dismisses with the cascade flag to use (True/False), or None when cancelled."""

    DEFAULT_CSS = "RollbackScreen { align: center middle; }"
    BINDINGS = [
        Binding("enter", "confirm", "Roll back"),
        Binding("c", "toggle_cascade", "Cascade"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, choice: RollbackChoice) -> None:
        super().__init__()
        self.choice = choice
        # Start on the order that can be done: plain when allowed, else cascade.
        self.cascade = bool(choice.refused and not choice.cascade_refused)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self._title_text(), id="dialog-title", markup=False)
            yield Static(order_text(self.choice, self.cascade), id="rollback-order", markup=False)
            yield Static("Enter roll back · c with/without dependents · Esc cancel", id="dialog-keys")

    def _title_text(self) -> str:
        what = f"phase {self.choice.target}" if self.choice.phase else self.choice.target
        return f"Roll back {what}{' with its dependents' if self.cascade else ''}, in this order:"

    @property
    def order_plain(self) -> str:
        return order_text(self.choice, self.cascade)

    def action_toggle_cascade(self) -> None:
        self.cascade = not self.cascade
        self.query_one("#dialog-title", Static).update(self._title_text())
        self.query_one("#rollback-order", Static).update(self.order_plain)

    def action_confirm(self) -> None:
        refused = self.choice.refusal_for(self.cascade)
        if refused:
            self.notify(refused, severity="error")
            return
        self.dismiss(self.cascade)

    def action_cancel(self) -> None:
        self.dismiss(None)
