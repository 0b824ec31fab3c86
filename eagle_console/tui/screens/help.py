"""The help modal: every key the console answers to, built from its bindings so it cannot drift."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from eagle_console.tui.labels import GLYPHS, RUNNING_MARK, UNMET_MARK


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, keys: list[tuple[str, str]], readonly: bool) -> None:
        super().__init__()
        self.keys, self.readonly = keys, readonly

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Label("eagle-console — keys" + (" (read-only: nothing can be changed)" if self.readonly else ""),
                        id="dialog-title")
            width = max(len(k) for k, _ in self.keys)
            yield Static("\n".join(f"{k.ljust(width)}  {d}" for k, d in self.keys), id="help-keys")
            legend = "  ".join(f"{g} {s}" for s, g in GLYPHS.items())
            yield Static(f"\n{legend}\n! high priority  ↓ low  {RUNNING_MARK} running for  "
                         f"{UNMET_MARK} needs not met\n\nEsc closes", classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
