"""The Approve modal (`a`): an agent's request — who asks, what it will do, why it waits for a person, what
it touches — then approve (it starts now, from this console) or deny (nothing starts), with a note."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from eagle_console.tui.screens.dialog import Dialog

if TYPE_CHECKING:
    from eagle_console.journal.approvals import Approval

CHOICES = (("approve", "✔ Approve — start it now, from this console"), ("deny", "✖ Deny — nothing starts"))


class ApprovalScreen(Dialog["tuple[bool, str | None] | None"]):
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


def ask_approval(app: Any) -> None:
    """`a`: answer the selected step's request (else the oldest) on this screen; the decision is carried
    out off the event loop (ops/approvals.py) and said as the app's other operations are."""
    from eagle_console.ops import approvals
    from eagle_console.tui import workers

    snapshot = app.snapshot
    waiting = list(snapshot.approvals) if snapshot else []
    req = snapshot.awaiting(app.ctx.selected_step_id) if snapshot else None
    req = req or (waiting[0] if waiting else None)  # the selected step's, else the oldest
    if req is None:
        app.notify("no request awaits approval", severity="warning")
        return

    def decide(engine: Any, request_id: int, approve: bool, note: str | None, sim_dir: Any) -> str:
        return approvals.outcome_text(approvals.decide(engine, request_id, approve, note, sim_dir))

    def answered(answer: tuple[bool, str | None] | None) -> None:
        if answer is not None:
            app._in_thread(workers.run_op, decide, app.ctx.engine, req.id, *answer, app.ctx.sim_dir)

    if req.target:
        app._select(req.target)
    app.push_screen(ApprovalScreen(req, len(waiting)), answered)
