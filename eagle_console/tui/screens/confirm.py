"""A yes/no confirmation: Enter or y confirms, Esc or n cancels. Used for `confirm` steps.

What the step will do comes with the question: its description, and for a step whose built-in declares
`kill_preview` the GPU holders it would signal (scope, pids, MiB per GPU, grace), read in a thread worker
with the same scan and choice as the kill itself (the kill plan of `ops.orphans`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from eagle_console.tui.panes.gpu_rows import holder_command
from eagle_console.tui.screens.dialog import Dialog

if TYPE_CHECKING:
    from pathlib import Path

    from eagle_console.journal import Journal
    from eagle_console.plan.model import Step


def kill_args(step: Step) -> Mapping[str, Any] | None:
    """The step's `with` when its built-in previews a kill (declared by the built-in, not by its name)."""
    if not step.uses or step.action is None:
        return None
    from eagle_console.ops import builtin_class_or_none

    cls = builtin_class_or_none(step.uses)
    return step.action.with_ if cls is not None and cls.kill_preview else None


def kill_preview(args: Mapping[str, Any], sim_dir: Path | None, journal: Journal) -> str:
    """What the kill would do now (ops.kill_preview: the kill plan the step itself follows)."""
    from eagle_console.ops import kill_preview as preview

    return preview(args, sim_dir, journal, command=lambda h: holder_command(h, 40))


class ConfirmScreen(Dialog[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen #dialog-preview { color: $warning; }
    """
    BINDINGS = [
        Binding("enter,y", "answer(True)", "Confirm"),
        Binding("escape,n", "answer(False)", "Cancel"),
    ]

    def __init__(self, title: str, body: str = "", preview: Any = None) -> None:
        """`preview()`, when given, returns more text; it blocks, so it runs in a thread worker."""
        super().__init__()
        self._title = title
        self._body = body
        self._preview = preview

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self._title, id="dialog-title", markup=False)
            if self._body:
                yield Static(self._body, id="dialog-body", markup=False)
            if self._preview is not None:
                yield Static("reading what it would signal…", id="dialog-preview", markup=False)
            yield Static("Enter confirm · Esc cancel", id="dialog-keys")

    def on_mount(self) -> None:
        if self._preview is not None:
            self.run_worker(self._read_preview, thread=True, group="confirm-preview", exit_on_error=False)

    def _read_preview(self) -> None:
        try:
            text = self._preview()
        except Exception as exc:  # the question stays answerable; say why the list is missing
            text = f"cannot list what it would signal: {exc}"
        self.app.call_from_thread(self._show_preview, text)

    def _show_preview(self, text: str) -> None:
        if self.is_mounted:
            self.query_one("#dialog-preview", Static).update(text)

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
