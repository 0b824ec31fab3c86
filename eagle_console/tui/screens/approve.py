"""The Approve modal (`a`): an agent's request — who asks, what it will do, why it waits for a person, what
it touches — then approve (it starts now, from this console) or deny (nothing starts), with a note."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from eagle_console.journal.approvals import Approval

CHOICES = (("approve", "✔ Approve — start it now, from this console"), ("deny", "✖ Deny — nothing starts"))


class ApprovalScreen(ModalScreen["tuple[bool, str | None] | None"]):
    """Dismisses with (approved, note or None), or None when closed without answering."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, request: Approval, waiting: int = 1) -> None:
        super().__init__()
        self.request = request
        self.waiting = waiting  # how many requests wait in all (this one is the first to answer)
        self._choice: str | None = None

    def compose(self) -> ComposeResult:
        req = self.request
        more = f" · {self.waiting - 1} more waiting" if self.waiting > 1 else ""
        with Vertical(id="dialog"):
            yield Label(f"Request {req.id}: {req.asker()} asks to {req.summary}{more}", id="dialog-title",
                        markup=False)
            for reason in req.reasons:
                yield Label(f"why it waits for you: {reason}", classes="hint", markup=False)
            for line in req.preview:
                yield Label(f"  {line}", markup=False)
            yield OptionList(*[Option(text, id=key) for key, text in CHOICES], id="choices")
            yield Input(placeholder="note (optional, the agent reads it) — Enter to answer, Esc to close",
                        id="note")

    def on_mount(self) -> None:
        self.query_one("#choices", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._choice = event.option.id
        self.query_one("#note", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        choice = self._choice
        if choice is None:  # Enter in the note without picking: the highlighted one
            options = self.query_one("#choices", OptionList)
            choice = CHOICES[options.highlighted or 0][0]
        self.dismiss((choice == "approve", event.value.strip() or None))

    def action_cancel(self) -> None:
        self.dismiss(None)
