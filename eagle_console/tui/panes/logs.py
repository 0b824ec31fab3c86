"""The right-hand panes: GPUs on top, and the tabs Server / NCCL / Output / Extraction / Results / Metrics.

`LogTabs` is one line of tab titles over a ContentSwitcher. Textual's TabbedContent does the same with a
dozen widgets (a Tabs bar with a widget per tab and an animated underline) and cost the first frame
~50 ms; one Static that draws the titles and maps a click back to a tab costs a few. Only the Server
tab is built for the first frame; the others are added to the switcher once the frame is on screen
(`mount_hidden_panes`), or when shown, whichever comes first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from eagle_console.tui.layout import Column, Switcher
from eagle_console.tui.messages import TabShown

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

# (tab id, title, module, class) in key order: `1`…`6` switch to them.
TABS: tuple[tuple[str, str, str, str], ...] = (
    ("server", "Server", "eagle_console.tui.panes.server", "ServerPane"),
    ("nccl", "NCCL", "eagle_console.tui.panes.nccl", "NcclPane"),
    ("output", "Output", "eagle_console.tui.panes.output", "OutputPane"),
    ("extraction", "Extraction", "eagle_console.tui.panes.extraction", "ExtractionPane"),
    ("results", "Results", "eagle_console.tui.panes.results", "ResultsPane"),
    ("metrics", "Metrics", "eagle_console.tui.panes.metrics", "MetricsPane"),
)
GPU_PANE = ("eagle_console.tui.panes.gpus", "GpuPane")


def build_pane(ctx: ConsoleContext, module: str, name: str, **kwargs) -> Widget:
    """`name(ctx)` from `module` (imported here, so a hidden tab's parsers load when it is built)."""
    return getattr(importlib.import_module(module), name)(ctx, **kwargs)


def mount_hidden_panes(app: App) -> None:
    """Add the tabs not built for the first frame, one per frame, so keys stay answered while they come.

    Neither the tabs nor their panes are in the first frame's DOM: 8 widgets fewer to style and lay out
    (a placeholder per tab, as before, was still a widget and a container each), and each pane's module,
    parsers and all, is imported here."""
    tabs = app.query(LogTabs)
    if tabs and tabs.first().add_next_tab():
        app.call_after_refresh(mount_hidden_panes, app)


class TabStrip(Static):
    """The tab titles on one line, the active one highlighted; narrows the others to fit the width."""

    DEFAULT_CSS = """
    TabStrip { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """

    class Clicked(Message):
        def __init__(self, tab_id: str) -> None:
            super().__init__()
            self.tab_id = tab_id

    def __init__(self, tabs: list[tuple[str, str]], active: str, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.tabs, self.active = tabs, active
        self._spans: list[tuple[int, int, str]] = []

    def show_active(self, active: str) -> None:
        self.active = active
        self.refresh()  # repaint only: one line

    def render(self) -> Text:
        # Fitted to the width as it is drawn (not updated from a resize handler: a layout pass of its own
        # before the first screen settled).
        return self.line(self.content_size.width or 80)

    def line(self, width: int) -> Text:
        """` Server │ NCCL │ …`; when that is too wide, the inactive titles lose their padding and are cut
        (`Extr…`) until the line fits `width`. The active title is always whole."""
        for keep in (0, 6, 4, 3, 2, 1):  # 0: the full line
            cells = [(tab_id, title if tab_id == self.active or not keep or len(title) <= keep
                      else title[:keep] + "…") for tab_id, title in self.tabs]
            padded = [(tab_id, f" {t} " if not keep or tab_id == self.active else t) for tab_id, t in cells]
            sep = "│"
            if sum(len(t) for _, t in padded) + len(sep) * (len(padded) - 1) <= width:
                break
        text, self._spans = Text(no_wrap=True, overflow="ellipsis"), []
        for n, (tab_id, title) in enumerate(padded):
            if n:
                text.append(sep, style="dim")
            start = len(text)
            text.append(title, style="bold reverse" if tab_id == self.active else "")
            self._spans.append((start, len(text), tab_id))
        return text

    def on_click(self, event: events.Click) -> None:
        x = event.x - self.styles.padding.left
        for start, end, tab_id in self._spans:
            if start <= x < end:
                self.post_message(self.Clicked(tab_id))
                return


class LogTabs(Column):
    """The tabs; `active` is the shown tab's id (`1`…`5` and a click on a title set it). Each tab is its pane,
    with the tab's id (no container around it: a widget fewer to style and lay out)."""

    DEFAULT_CSS = "LogTabs { height: 1fr; } LogTabs > ContentSwitcher { height: 1fr; }"
    active: reactive[str] = reactive(TABS[0][0], init=False)

    def __init__(self, ctx: ConsoleContext, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.strip = TabStrip([(tab_id, title) for tab_id, title, *_ in TABS], TABS[0][0])
        self._added = {TABS[0][0]}  # tabs in the switcher or on their way (add_content mounts a moment later)

    def compose(self) -> ComposeResult:
        yield self.strip
        tab_id, _title, module, name = TABS[0]
        with Switcher(initial=tab_id):
            yield build_pane(self.ctx, module, name, id=tab_id)

    def _add_tab(self, tab_id: str, set_current: bool = False) -> None:
        _id, _title, module, name = next(t for t in TABS if t[0] == tab_id)
        self._added.add(tab_id)
        switcher = self.query_one(ContentSwitcher)
        switcher.add_content(build_pane(self.ctx, module, name, id=tab_id), set_current=set_current)

    def add_next_tab(self) -> bool:
        """Add the first tab not there yet; True when more are left."""
        missing = [tab_id for tab_id, *_ in TABS if tab_id not in self._added]
        if missing:
            self._add_tab(missing[0])
        return len(missing) > 1

    def watch_active(self, tab_id: str) -> None:
        self.strip.show_active(tab_id)
        self._show_tab(tab_id)

    def _show_tab(self, tab_id: str) -> None:
        if tab_id != self.active:  # another tab was chosen meanwhile
            return
        if tab_id not in self._added:  # shown before it was added: build it now, and come back once mounted
            self._add_tab(tab_id, set_current=True)
            self.call_after_refresh(self._show_tab, tab_id)
            return
        switcher = self.query_one(ContentSwitcher)
        if self.pane(tab_id) is None:  # added a moment ago, not mounted yet: once it is
            self.call_after_refresh(self._show_tab, tab_id)
            return
        switcher.current = tab_id
        self.call_after_refresh(self._poke, tab_id)  # once laid out: a poll that still found it hidden slept on

    def pane(self, tab_id: str) -> Widget | None:
        """The pane of tab `tab_id`, None until it is mounted (a switcher's child, not a widget of a pane's)."""
        found = self.query_one(ContentSwitcher).query_children(f"#{tab_id}")
        return found.first() if found else None

    def _poke(self, tab_id: str) -> None:
        """The shown tab's pane slept while hidden: it catches up now (each pane's on_tab_shown)."""
        pane = self.pane(tab_id)
        if pane is not None:
            pane.post_message(TabShown())

    def on_tab_strip_clicked(self, message: TabStrip.Clicked) -> None:
        self.active = message.tab_id
