"""The right-hand panes: GPUs on top, and the tabs Server / NCCL / Output / Extraction / Results.

The panes engineer's widgets are constructed as `Pane(ctx)`; until a module exists its place shows one line
saying which issue brings it, so the console runs either way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

# (tab id, title, module, class, issue) in key order: `1`…`5` switch to them.
TABS: tuple[tuple[str, str, str, str, int], ...] = (
    ("server", "Server", "eagle_console.tui.panes.server", "ServerPane", 3),
    ("nccl", "NCCL", "eagle_console.tui.panes.nccl", "NcclPane", 5),
    ("output", "Output", "eagle_console.tui.panes.output", "OutputPane", 3),
    ("extraction", "Extraction", "eagle_console.tui.panes.extraction", "ExtractionPane", 6),
    ("results", "Results", "eagle_console.tui.panes.results", "ResultsPane", 3),
)
GPU_PANE = ("eagle_console.tui.panes.gpus", "GpuPane", 4)


def build_pane(ctx: ConsoleContext, module: str, name: str, issue: int, title: str, **kwargs) -> Widget:
    """`name(ctx)` from `module`, or a one-line placeholder while that module does not exist yet."""
    try:
        cls = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise  # the pane exists but something it imports is missing: that is a bug to see
        return Static(f"{title} pane arrives with issue {issue}", classes="placeholder", **kwargs)
    return cls(ctx, **kwargs)


class HiddenPane(Static):
    """Holds the place of a pane in a tab that is not shown at start, until the first frame is on screen
    (the App calls `mount_pane` then) or the tab is shown, whichever comes first.

    Textual's `Lazy` mounts after the first refresh, which still comes before the first frame has settled:
    the four hidden panes cost more than the rest of the first screen together.
    """

    DEFAULT_CSS = "HiddenPane { height: 1; }"

    def __init__(self, pane: Widget) -> None:
        super().__init__("")
        self._pane: Widget | None = pane

    def on_show(self) -> None:  # the operator opened this tab before the idle mount came round
        self.mount_pane()

    def mount_pane(self) -> None:
        pane, self._pane = self._pane, None
        if pane is None or self.parent is None:
            return
        self.parent.mount(pane, after=self)
        self.remove()


def compose_tabs(ctx: ConsoleContext, **kwargs) -> ComposeResult:
    """Yield the tabs from the App's compose (a TabbedContent subclass overriding compose loses its tabs)."""
    with TabbedContent(**kwargs):
        for n, (tab_id, title, module, name, issue) in enumerate(TABS):
            with TabPane(title, id=tab_id):
                pane = build_pane(ctx, module, name, issue, title)
                yield pane if n == 0 else HiddenPane(pane)


def mount_hidden_panes(app: App) -> None:
    """Mount the hidden tabs' panes one per frame, so keys stay answered while they come."""
    waiting = list(app.query(HiddenPane))
    if waiting:
        waiting[0].mount_pane()
        if len(waiting) > 1:
            app.call_after_refresh(mount_hidden_panes, app)
