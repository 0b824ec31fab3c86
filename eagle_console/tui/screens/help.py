"""The help modal: every key the console answers to, built from its bindings so it cannot drift; the keys
inside the dialogs; and every command the palette (ctrl+p) offers."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from eagle_console.tui.keys import dialog_keys
from eagle_console.tui.labels import APPROVAL_MARK, GLYPHS, RUNNING_MARK, UNMET_MARK
from eagle_console.tui.screens.dialog import Dialog


def key_lines(keys: list[tuple[str, str]]) -> str:
    width = max((len(k) for k, _ in keys), default=0)
    return "\n".join(f"{k.ljust(width)}  {d}" for k, d in keys)


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = "HelpScreen .help-head { text-style: bold; }"  # its #dialog's size: dialogs.tcss
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close"),
                Binding("j,down", "scroll(1)", "Down", show=False), Binding("k,up", "scroll(-1)", "Up", show=False)]

    def __init__(self, keys: list[tuple[str, str]], readonly: bool, palette: list[str] | None = None) -> None:
        super().__init__()
        self.keys, self.readonly, self.palette = keys, readonly, palette or []

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Label("eagle-console — keys" + (" (read-only: nothing can be changed)" if self.readonly else ""),
                        id="dialog-title")
            yield Static("Esc closes · j/k scroll", classes="hint")
            yield Static(key_lines(self.keys), id="help-keys")
            legend = "  ".join(f"{g} {s}" for s, g in GLYPHS.items())
            yield Static(f"\n{legend}\n! high priority  ↓ low  {RUNNING_MARK} running for  "
                         f"{UNMET_MARK} needs not met  {APPROVAL_MARK} an agent asks (a)", classes="hint")
            inside = dialog_keys(self.readonly)
            if inside:
                yield Static("\nInside the dialogs", classes="help-head")
                yield Static(key_lines(inside), id="help-dialog-keys")
            if self.palette:
                yield Static("\nctrl+p palette (also: mark, run, roll back any step by name)", classes="help-head")
                yield Static("\n".join(self.palette), id="help-palette", markup=False)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#dialog").scroll_relative(y=lines, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
