"""What the right-hand panes share: a poller that never piles up, and a bounded, batched log view.

`Poller` runs a blocking function in a thread worker, hands its result to the event loop, and only
then arms the next run: a slow NVML call or a flooded log delays the next poll instead of stacking
threads. `LogView` keeps the last `max_lines` lines in a deque, draws only the visible rows (line API),
and takes lines in batches (`add_lines`, called once per poll), so a 100k lines/s log costs a few
widget updates per second.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Static

T = TypeVar("T")
MAX_LINES = 10_000
MAX_WIDTH = 400  # longer lines are cut on screen (the file keeps them whole)


class Poller(Generic[T]):
    """Call `work()` in a thread every `interval` s (counted from the end of the last call), then
    `apply(result)` on the event loop. Errors go to `fail(exc)` and the polling goes on.

    While the owner is not on screen (a tab not shown) it polls every `hidden_interval` s instead, when
    given: four log panes at 4 Hz kept an idle console busy for nothing. Showing the owner should `poke()`,
    so what came meanwhile is caught up at once."""

    def __init__(self, owner: Widget, interval: float, work: Callable[[], T], apply: Callable[[T], None],
                 fail: Callable[[BaseException], None] | None = None, name: str = "poll",
                 hidden_interval: float | None = None) -> None:
        self.owner, self.interval, self.work, self.apply = owner, interval, work, apply
        self.hidden_interval = hidden_interval
        self.fail = fail or (lambda exc: None)
        self.name = name
        self.busy = False
        self.stopped = False
        self._again = False  # poke() arrived while a poll was running: run once more at once
        self._timer: Any = None

    def start(self, delay: float = 0.0) -> None:
        """Begin polling once the owner is on screen: a reading thread started during the first layout
        would take the GIL from it (the first frame came ~80 ms later with the GPU poll started at mount)."""
        self.stopped = False
        self.owner.call_after_refresh(self._arm, delay)

    def stop(self) -> None:
        self.stopped = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def poke(self) -> None:
        """Poll now (the selection changed), or right after the one in flight."""
        if self.stopped:
            return
        if self.busy:
            self._again = True
            return
        if self._timer is not None:
            self._timer.stop()
        self._arm(0.0)

    def _arm(self, delay: float) -> None:
        if not self.stopped:
            self._timer = self.owner.set_timer(max(delay, 0.001), self._kick, name=self.name)

    def _kick(self) -> None:
        self._timer = None
        if self.busy or self.stopped:
            return
        self.busy = True
        self.owner.run_worker(self._run, thread=True, group=self.name, exit_on_error=False)

    def _run(self) -> None:
        try:
            result: Any = self.work()
            error: BaseException | None = None
        except Exception as exc:  # a poll that fails says so on screen and keeps polling
            result, error = None, exc
        try:
            self.owner.app.call_from_thread(self._finish, result, error)
        except RuntimeError:  # the app is shutting down
            self.busy = False

    def _finish(self, result: Any, error: BaseException | None) -> None:
        self.busy = False
        try:
            if error is None:
                self.apply(result)
            else:
                self.fail(error)
        finally:
            again, self._again = self._again, False
            self._arm(0.0 if again else self._next_interval())

    def _next_interval(self) -> float:
        if self.hidden_interval is not None and not self.owner.is_on_screen:
            return max(self.interval, self.hidden_interval)
        return self.interval


class QuietStatic(Static):
    """A Static that ignores an update to what it already shows. Panes poll 4 times a second and redraw
    their head and status lines from each poll; every `Static.update` costs a relayout of the screen, which
    made a large part of an idle console's 9.5 % of a core (2.5 % with this and slower hidden tabs)."""

    _shown: object = None

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        key = (content.plain, tuple(content.spans), str(content.style)) if isinstance(content, Text) else content
        if key == self._shown:
            return
        self._shown = key
        super().update(content, layout=layout)


def compile_filter(text: str) -> tuple[re.Pattern[str] | None, bool]:
    """`regex` keeps matching lines, `!regex` drops them; raises re.error on a bad pattern."""
    text = text.strip()
    invert = text.startswith("!")
    if invert:
        text = text[1:]
    return (re.compile(text) if text else None), invert


class LogLines(ScrollView, can_focus=True):
    """The visible rows of a bounded line buffer; `styler(line)` colours a line (errors, stages)."""

    DEFAULT_CSS = "LogLines { height: 1fr; }"
    BINDINGS = [
        Binding("up", "scroll_up", "Up", show=False),
        Binding("down", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]

    def __init__(self, view: LogView, styler: Callable[[str], Style | None] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.styler = styler
        self.lines: deque[str] = deque(maxlen=view.max_lines)
        self._width = 0

    def set_lines(self, lines: Iterable[str]) -> None:
        self.lines = deque(lines, maxlen=self.view.max_lines)
        self._width = max((len(s) for s in self.lines), default=0)
        self._resize()

    def extend(self, lines: list[str]) -> int:
        """Append; returns how many old lines fell off the head."""
        dropped = max(0, len(self.lines) + len(lines) - self.view.max_lines)
        self.lines.extend(lines)
        self._width = max(self._width, max((len(s) for s in lines[-2000:]), default=0))
        self._resize()
        return dropped

    def _resize(self) -> None:
        self.virtual_size = Size(min(self._width, MAX_WIDTH), len(self.lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        line = self.lines[index]
        x = self.scroll_offset.x
        text = line[x:x + width]
        style = self.rich_style
        if self.styler is not None:
            extra = self.styler(line)
            if extra is not None:
                style = style + extra
        return Strip([Segment(text.ljust(width), style)], width)

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


class LogView(Vertical):
    """A followed log: bounded buffer, follow/pause with a count of waiting lines, regex filter."""

    DEFAULT_CSS = """
    LogView { height: 1fr; }
    LogView > .logview-status { height: 1; color: $text-muted; }
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
        shown = [s for s in lines if self._passes(s)]
        if shown:
            dropped = self.body.extend(shown)
            if self.following:
                self.body.scroll_end(animate=False)
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
        self.body.scroll_end(animate=False)
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
            self.body.scroll_end(animate=False)
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
        parts = [self.source or "no log"]
        parts.append(f"{len(self.body.lines)}/{len(self.buffer)} lines" if self._pattern else f"{len(self.buffer)} lines")
        if self.filter_text:
            parts.append(f"filter {self.filter_text}")
        if self.following:
            parts.append("following (f pauses)")
        else:
            parts.append(f"PAUSED: {self.waiting} new lines (f follows)")
        self.status.update(" · ".join(parts))
        self.status.set_class(not self.following, "-paused")


# ---- a pane that follows one log chosen from the journal ----------------------------------------

FOLLOW_S = 0.25  # ~4 batches a second
HIDDEN_S = 2.0  # while the pane's tab is not shown
READS_PER_POLL = 16  # x 4 MiB: how far one poll may catch up before handing a batch to the screen


def step_log(journal: Any, step_id: str | None) -> Path | None:
    """The latest log of `step_id` (any run kind), as `Engine.latest_log`."""
    if not step_id:
        return None
    run = journal.latest_run(step_id, kind=None)
    return Path(run.log) if run and run.log else None


def service_log(plan: Any, journal: Any, step_id: str | None) -> Path | None:
    """The selected step's log when it is a service, else the log of the latest service run."""
    step = plan.step(step_id) if step_id else None
    if step is not None and step.service:
        return step_log(journal, step_id)
    runs = [r for r in journal.runs() if r.service and r.log]
    return Path(runs[-1].log) if runs else None


class LogBatch(NamedTuple):
    path: Path | None
    reset: bool  # the followed file changed: clear the view
    lines: list[str]
    digest: Any = None  # what the pane's parser made of the lines (worker side)


class FollowPane(Vertical):
    """Base of the Output, Server and NCCL panes: resolve the log (worker), follow it with a LogFollower,
    hand each poll's lines to the LogView in one batch. Subclasses override `resolve`, and `digest` /
    `show_digest` to parse the lines in the worker and draw the result."""

    START = "end"  # "begin" reads the whole file once (parsers need the startup lines)
    DEFAULT_CSS = "FollowPane { height: 1fr; }"

    def __init__(self, ctx: Any, *, max_lines: int = MAX_LINES, interval: float = FOLLOW_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.step_id: str | None = ctx.selected_step_id
        self.path: Path | None = None
        self.max_lines = max_lines
        self._follower: Any = None
        self._want_reset = False
        self.poller = Poller(self, interval, self._poll, self._apply, self._failed, name=f"{type(self).__name__}-poll",
                             hidden_interval=HIDDEN_S)

    def compose(self):
        self.head = QuietStatic("", classes="follow-head")
        self.view = LogView(self.max_lines, styler=self.styler)
        yield from self.compose_head()
        yield self.view

    def compose_head(self):
        return iter(())

    def styler(self, line: str) -> Style | None:
        return None

    def on_mount(self) -> None:
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    # ---- App hooks -------------------------------------------------------------------------------

    def step_selected(self, step_id: str | None) -> None:
        if step_id != self.step_id:
            self.step_id = step_id
            self.poller.poke()

    def plan_reloaded(self) -> None:
        self.poller.poke()

    def toggle_follow(self) -> None:
        self.view.toggle_follow()

    def open_filter(self) -> None:
        self.view.open_filter()

    # ---- worker side -----------------------------------------------------------------------------

    def resolve(self, step_id: str | None) -> Path | None:
        return step_log(self.ctx.journal, step_id)

    def reset_digest(self) -> None:
        """The followed file changed (worker): start the parser afresh."""

    def digest(self, lines: list[str]) -> Any:
        return None

    def _poll(self) -> LogBatch:
        from eagle_console.node.tail import LogFollower

        path = self.resolve(self.step_id)
        reset = path != self.path or self._want_reset
        if reset:
            self._want_reset = False
            if self._follower is not None:
                self._follower.close()
            self.path = path
            self._follower = (LogFollower(path, start=self.START, last_lines=self.max_lines)
                              if path is not None else None)
            self.reset_digest()
        lines: list[str] = []
        if self._follower is not None:
            for _ in range(READS_PER_POLL):
                lines.extend(self._follower.read_new())
                if not self._follower.more:
                    break
        return LogBatch(path, reset, lines, self.digest(lines))

    # ---- event-loop side -------------------------------------------------------------------------

    def _apply(self, batch: LogBatch) -> None:
        if batch.reset:
            self.view.clear(str(batch.path) if batch.path else self.no_log_text())
        lines = self.view_lines(batch)
        self.view.add_lines(lines[-self.max_lines:], len(lines))
        self.show_digest(batch)

    def view_lines(self, batch: LogBatch) -> list[str]:
        """The lines of a batch the view shows (the NCCL pane keeps only NCCL lines)."""
        return batch.lines

    def no_log_text(self) -> str:
        return "no log yet for this step" if self.step_id else "no step selected"

    def show_digest(self, batch: LogBatch) -> None:
        """Draw what `digest` found (event loop)."""

    def _failed(self, exc: BaseException) -> None:
        self.view.status.update(Text(f"cannot follow the log: {exc}", style="red"))


class ServiceLogPane(FollowPane):
    """A FollowPane over the service log (Server and NCCL panes), read from the start, with a head line."""

    START = "begin"  # the parsers need the startup lines

    def compose_head(self):
        yield self.head

    def resolve(self, step_id: str | None) -> Path | None:
        return service_log(self.ctx.plan, self.ctx.journal, step_id)

    def no_log_text(self) -> str:
        return "no service has run yet"
