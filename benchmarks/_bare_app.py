"""A bare Textual app measured like the console: it exits right after its first paint (headless)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Static


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("bare")
        yield Footer()

    def on_mount(self) -> None:
        self.call_after_refresh(self.exit)


if __name__ == "__main__":
    BareApp().run(headless=True)
