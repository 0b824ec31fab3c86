"""A followed log on screen: a bounded line buffer drawn row by row, follow/pause, and a regex filter.

`LogView` keeps the last `max_lines` lines in a deque, draws only the visible rows (line API), and takes
lines in batches (`add_lines`, called once per poll), so a 100k lines/s log costs a few widget updates
per second.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from eagle_console.figures import counted
from eagle_console.tui.cells import cells, pad, window
from eagle_console.tui.layout import Column
from eagle_console.tui.panes._logview import QuietStatic
from eagle_console.tui.panes.wraprows import WrapRows, rows_of, wrapped

MAX_LINES = 10_000
MAX_WIDTH = 400  # longer lines are cut on screen (the file keeps them whole)
STRIPS_KEPT = 1000  # drawn rows kept for redraws (Toolong's log_lines.py keeps an LRU of rendered lines too)


def compile_filter(text: str) -> tuple[re.Pattern[str] | None, bool]:
    """`regex` keeps matching lines, `!regex` drops them; raises re.error on a bad pattern."""
    text = text.strip()
    invert = text.startswith("!")
    if invert:
        text = text[1:]
    return (re.compile(text) if text else None), invert


def _shown_width(line: str) -> int:
    """Cells the line takes unwrapped, as far as MAX_WIDTH matters (a longer line is not measured whole)."""
    return len(line) if line.isascii() or len(line) > MAX_WIDTH else cells(line)


class LogLines(ScrollView, can_focus=True):
    """The visible rows of a bounded line buffer; `styler(line)` colours a line (errors, stages)."""

    # The gutter is kept for the scrollbar even while none is shown: wrapped rows are cut to the width inside
    # it, and a width that changed with the scrollbar left an index built for the old one (issue 26: a log
    # long enough to bring in the scrollbar narrowed the pane by 2 cells after the rows were counted, and
    # every row drew blank until a resize rebuilt them).
    DEFAULT_CSS = "LogLines { height: 1fr; scrollbar-gutter: stable; }"
    BINDINGS = [
        Binding("up", "scroll_up", "Up", show=False),
        Binding("down", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
        Binding("w", "toggle_wrap", "Wrap", show=False),
    ]

    def __init__(self, view: LogView, styler: Callable[[str], Style | None] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.styler = styler
        self.lines: deque[str] = deque(maxlen=view.max_lines)
        self._width = 0
        self.wrap = True  # long lines on several rows; `w` turns it off (then ←/→ scroll sideways)
        self._rows = WrapRows()
        # Rows drawn, by line number since the last set_lines (lines fallen off the head count too), part or
        # sideways offset, width and style: a redraw of rows still on screen (a scroll, the head above
        # resized, a repaint) draws none of them again.
        self._strips: LRUCache[tuple, Strip] = LRUCache(STRIPS_KEPT)
        self._head_no = 0  # the number of the first line in `lines`
        self._frame: tuple | None = None  # (style, width, theme) of the frame being drawn

    def set_lines(self, lines: Iterable[str]) -> None:
        self._strips.clear()
        self._head_no = 0
        self.lines = deque(lines, maxlen=self.view.max_lines)
        self._width = max((_shown_width(s) for s in self.lines), default=0)
        self._rows.width = 0  # rebuilt for the new lines
        self._resize()

    def extend(self, lines: list[str]) -> int:
        """Append; returns how many rows (old lines) fell off the head."""
        dropped = max(0, len(self.lines) + len(lines) - self.view.max_lines)
        self._head_no += dropped
        rows_before = self._rows.total
        self.lines.extend(lines)
        self._width = max(self._width, max((_shown_width(s) for s in lines[-2000:]), default=0))
        if self.wrap and 0 < self._rows.width == self._wrap_width():  # the index follows the buffer
            self._rows.append(lines)
            rows_dropped = self._rows.drop_head(dropped)  # the rows that fell off: the view scrolls by rows
            self._resize()
            return rows_dropped
        self._rows.width = 0  # not wrapped, or a new width: rebuilt (if wrapped) by _resize
        self._resize()
        if self.wrap and dropped:
            return max(0, rows_before + sum(rows_of(s, self._rows.width or 1) for s in lines) - self._rows.total)
        return dropped

    def _wrap_width(self) -> int:
        # the width inside the scrollbar (0 before the first layout: nothing is wrapped until then)
        return self.scrollable_content_region.width

    def _resize(self) -> None:
        self.styles.overflow_x = "hidden" if self.wrap else "auto"  # wrapped rows never need to scroll sideways
        width = self._wrap_width() if self.wrap else 0  # a region computed once (4 % of the first frame, thrice)
        if self.wrap and width == 0:
            self.virtual_size = Size(0, len(self.lines))
        elif self.wrap:
            if self._rows.width != width:
                self._rows.rebuild(self.lines, width)
            self.virtual_size = Size(0, self._rows.total)  # no width: never scrolled sideways, nor relaid on a resize
        else:
            self.virtual_size = Size(min(self._width, MAX_WIDTH), len(self.lines))
        self.refresh()

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self._rows.width = 0
        self._resize()
        if self.view.following:
            self.to_end()

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every row of a frame shares, found once: the style walks the widget's ancestors, the width
        # the scrollbar's region (per row, they were most of drawing an empty pane at startup).
        self._frame = (self.rich_style, self._wrap_width(), self.app.theme)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        base, width, theme = self._frame or (self.rich_style, self._wrap_width(), self.app.theme)
        row = self.scroll_offset.y + y
        if self.wrap:
            if row >= self._rows.total or self._rows.width != width:
                return Strip.blank(width, base)
            index, at = self._rows.locate(row)
        else:
            if row >= len(self.lines):
                return Strip.blank(width, base)
            index, at = row, -1 - self.scroll_offset.x  # negative: a sideways offset, not a wrapped part
        key = (self._head_no + index, at, width, base, theme)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._draw(self.lines[index], at, width, base)
        return strip

    def _draw(self, line: str, at: int, width: int, base: Style) -> Strip:
        """Row `at` of the wrapped `line` (at < 0: the line from cell -1 - at, not wrapped)."""
        if at >= 0:
            rows = wrapped(line, width)
            text = pad(rows[at] if at < len(rows) else "", width)
        else:
            text = window(line, -1 - at, width)
        style = base
        if self.styler is not None:
            extra = self.styler(line)
            if extra is not None:
                style = style + extra
        return Strip([Segment(text, style)], width)

    def on_resize(self) -> None:
        self._resize()  # wrapped rows depend on the width
        self._on_resized()

    def to_end(self) -> None:
        """Onto the last row, now. `force`: rows that just arrived (a batch, a pane just shown and wrapped)
        can need a scrollbar Textual has not shown yet, and Textual refuses to scroll a widget without one
        (`Widget._scroll_to`: `allow_vertical_scroll or force`). `immediate`: our virtual size is already
        set; a deferred scroll runs from the screen's after-refresh queue, which the screen can run before
        this widget's layout (`Screen._on_idle`) — then too without a scrollbar. Either way a following pane
        stayed on its first rows, its status saying "following"."""
        self.scroll_end(animate=False, immediate=True, force=True)

    def _on_resized(self) -> None:
        """A following view stays on the last line when it changes size (the terminal resized, the head
        above it grew, the tab shown again): Textual keeps the offset, which left the end off screen."""
        if self.view.following:
            self.to_end()

    def on_show(self) -> None:
        self._on_resized()

    # Scrolling up by hand pauses following; End resumes it.
    def action_scroll_up(self) -> None:
        self.view.pause()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.view.pause()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self.view.pause()
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        self.view.resume()

    def on_mouse_scroll_up(self) -> None:
        self.view.pause()


class LogView(Column):
    """A followed log: bounded buffer, follow/pause with a count of waiting lines, regex filter. BLANK
    (tui/layout.py): its rows and status line cover it."""

    DEFAULT_CSS = """
    LogView { height: 1fr; }
    LogView > .logview-status { height: 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    LogView > .logview-status.-paused { color: $warning; text-style: bold; }
    LogView > Input { display: none; height: 3; }
    LogView > Input.-open { display: block; }
    """

    def __init__(self, max_lines: int = MAX_LINES, styler: Callable[[str], Style | None] | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.max_lines = max_lines
        self.buffer: deque[str] = deque(maxlen=max_lines)  # every line received (bounded)
        self.following = True
        self.waiting = 0  # lines that arrived while paused and passed the filter
        self.received = 0  # lines received since the last clear()
        self.source = ""  # what is followed, for the status line
        self.left_out = ""  # what the pane leaves out of the lines it shows, said in the status line
        self.filter_text = ""
        self._pattern: re.Pattern[str] | None = None
        self._invert = False
        self._styler = styler

    def compose(self):
        self.body = LogLines(self, self._styler)
        self.status = QuietStatic("", classes="logview-status", markup=False)  # shows the filter as typed
        yield self.body
        yield self.status

    @property
    def filter_input(self) -> Input:
        """The filter box, mounted the first time `/` opens it (an Input costs the first frame ~10 ms)."""
        found = self.query(Input)
        if found:
            return found.first()
        box = Input(placeholder="filter: regex, !regex hides matches, empty clears")
        self.mount(box)
        return box

    def on_mount(self) -> None:
        self._show_status()

    # ---- feeding (event loop only) ---------------------------------------------------------------

    def clear(self, source: str = "") -> None:
        self.buffer.clear()
        self.received = self.waiting = 0
        self.source = source
        self.body.set_lines(())
        self.body.scroll_to(0, 0, animate=False)
        self._show_status()

    def add_lines(self, lines: list[str], received: int | None = None) -> None:
        """One batch from a poll: one buffer extend, one repaint. `received`: how many lines the batch
        stood for, when the caller already dropped the ones that would fall off the buffer anyway."""
        self.received += len(lines) if received is None else received
        if not lines:
            return
        self.buffer.extend(lines)
        shown = lines if self._pattern is None else [s for s in lines if self._passes(s)]
        if shown:
            dropped = self.body.extend(shown)
            if self.following:
                self.body.to_end()
            else:
                self.waiting += len(shown)
                if dropped:  # keep the paused view on the same lines as the head falls off
                    self.body.scroll_to(y=max(0, self.body.scroll_offset.y - dropped), animate=False)
        self._show_status()

    @property
    def shown_lines(self) -> list[str]:
        return list(self.body.lines)

    # ---- follow / filter -------------------------------------------------------------------------

    def pause(self) -> None:
        if self.following:
            self.following = False
            self.waiting = 0
            self._show_status()

    def resume(self) -> None:
        self.following = True
        self.waiting = 0
        self.body.to_end()
        self._show_status()

    def toggle_follow(self) -> None:
        self.pause() if self.following else self.resume()

    def open_filter(self) -> None:
        box = self.filter_input
        box.value = self.filter_text
        box.add_class("-open")
        self.call_after_refresh(box.focus)  # a box mounted just now takes focus once it is there

    def set_filter(self, text: str) -> None:
        """Apply `text` (regex, `!` inverts); raises re.error for a bad pattern."""
        pattern, invert = compile_filter(text)
        self._pattern, self._invert, self.filter_text = pattern, invert, text.strip()
        self.body.set_lines(s for s in self.buffer if self._passes(s))
        if self.following:
            self.body.to_end()
        self._show_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            self.set_filter(event.value)
        except re.error as exc:
            self.status.update(f"bad filter {event.value!r}: {exc}")
            return
        self.filter_input.remove_class("-open")
        self.body.focus()

    def on_key(self, event) -> None:
        boxes = self.query(Input)
        if event.key == "escape" and boxes and boxes.first().has_class("-open"):
            event.stop()
            boxes.first().remove_class("-open")
            self.body.focus()

    def _passes(self, line: str) -> bool:
        if self._pattern is None:
            return True
        return (self._pattern.search(line) is None) if self._invert else (self._pattern.search(line) is not None)

    def _show_status(self) -> None:
        """State first, the path last: a narrow pane cuts the path, never whether it follows, the filter or
        the counts (at 80 columns the line has ~36 cells)."""
        parts = ["following" if self.following else f"PAUSED: {counted(self.waiting, 'new line')}"]
        if self.filter_text:  # `/^late/ 2/4 lines`: the filter as `/` typed it, with what it lets through
            parts.append(f"/{self.filter_text}/ {len(self.body.lines)}/{counted(len(self.buffer), 'line')}")
        else:
            parts.append(counted(len(self.buffer), "line"))
        parts.append("f pauses" if self.following else "f follows")
        if self.left_out:
            parts.append(self.left_out)
        parts.append(self.source or "no log")
        self.status.update(" · ".join(parts))
        self.status.set_class(not self.following, "-paused")
