"""The tabbed log side: Server / NCCL / Output / Extraction / Results. Each tab is a frame for now,
saying honestly which issue fills it; the tab ids are fixed so later panes replace the placeholders."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static, TabbedContent, TabPane

# (tab id, title, what the placeholder says) in key order: `1`…`5` switch to them.
TABS: tuple[tuple[str, str, str], ...] = (
    ("server", "Server", "Server log pane arrives with issue 3 (runs and services)"),
    ("nccl", "NCCL", "NCCL summary pane arrives with issue 5 (NCCL and server logs)"),
    ("output", "Output", "Step output pane arrives with issue 3 (runs and services)"),
    ("extraction", "Extraction", "Extraction progress pane arrives with issue 6 (extraction watch)"),
    ("results", "Results", "Results pane arrives with issue 3 (runs and recorded results)"),
)


class LogTabs(TabbedContent):
    def compose(self) -> ComposeResult:
        for tab_id, title, text in TABS:
            with TabPane(title, id=tab_id):
                yield Static(text, classes="placeholder")
