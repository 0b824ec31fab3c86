"""The right-hand panes: GPUs on top, and the tabs Server / NCCL / Output / Extraction / Results / Metrics.

`LogTabs` is one line of tab titles over a ContentSwitcher. Textual's TabbedContent does the same with a
dozen widgets (a Tabs bar with a widget per tab and an animated underline) and cost the first frame
~50 ms; one Static that draws the titles and maps a click back to a tab costs a few. Only the Server
pane is built for the first frame; the others are `HiddenPane`s until the frame is on screen.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

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


class HiddenPane(Static):
    """Holds the place of a pane in a tab that is not shown at start, until the first frame is on screen
    (the App calls `mount_hidden_panes` then) or the tab is shown, whichever comes first.

    Textual's `Lazy` mounts after the first refresh, which still comes before the first frame has settled;
    and the pane's module is imported only here, so its parsers' imports wait too.
    """

    DEFAULT_CSS = "HiddenPane { height: 1; }"

    def __init__(self, make: Callable[[], Widget]) -> None:
        super().__init__("")
        self._make: Callable[[], Widget] | None = make

    def on_show(self) -> None:  # the operator opened this tab before the idle mount came round
        self.mount_pane()

    def mount_pane(self) -> None:
        make, self._make = self._make, None
        if make is None or self.parent is None:
            return
        self.parent.mount(make(), after=self)
        self.remove()


def mount_hidden_panes(app: App) -> None:
    """Mount the hidden tabs' panes one per frame, so keys stay answered while they come."""
    waiting = list(app.query(HiddenPane))
    if waiting:
        waiting[0].mount_pane()
        if len(waiting) > 1:
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
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def on_mount(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self.update(self.line(self.content_size.width or 80))

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


class LogTabs(Vertical):
    """The tabs; `active` is the shown tab's id (`1`…`5` and a click on a title set it)."""

    DEFAULT_CSS = "LogTabs { height: 1fr; } LogTabs > ContentSwitcher { height: 1fr; }"
    active: reactive[str] = reactive(TABS[0][0], init=False)

    def __init__(self, ctx: ConsoleContext, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.strip = TabStrip([(tab_id, title) for tab_id, title, *_ in TABS], TABS[0][0])

    def compose(self) -> ComposeResult:
        yield self.strip
        with ContentSwitcher(initial=TABS[0][0]):
            for n, (tab_id, _title, module, name) in enumerate(TABS):
                with Vertical(id=tab_id):
                    if n == 0:
                        yield build_pane(self.ctx, module, name)
                    else:
                        yield HiddenPane(partial(build_pane, self.ctx, module, name))

    def watch_active(self, tab_id: str) -> None:
        self.query_one(ContentSwitcher).current = tab_id
        self.strip.show_active(tab_id)
        for pane in self.query_one(f"#{tab_id}").children:  # a hidden pane polled slowly: catch up now
            pane.post_message(TabShown())

    def on_tab_strip_clicked(self, message: TabStrip.Clicked) -> None:
        self.active = message.tab_id
