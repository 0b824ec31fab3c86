"""The right-hand panes: GPUs on top, and the tabs Server / NCCL / Output / Extraction / Results.

The panes engineer's widgets are constructed as `Pane(ctx)`; until a module exists its place shows one line
saying which issue brings it, so the console runs either way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from textual.app import ComposeResult
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


def compose_tabs(ctx: ConsoleContext, **kwargs) -> ComposeResult:
    """Yield the tabs from the App's compose (a TabbedContent subclass overriding compose loses its tabs)."""
    from textual.lazy import Lazy

    with TabbedContent(**kwargs):
        for n, (tab_id, title, module, name, issue) in enumerate(TABS):
            with TabPane(title, id=tab_id):
                pane = build_pane(ctx, module, name, issue, title)
                # Tabs not shown at start mount after the first paint: the first screen comes sooner.
                yield pane if n == 0 else Lazy(pane)
