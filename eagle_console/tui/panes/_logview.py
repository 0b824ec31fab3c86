"""What the right-hand panes share: a poller that never piles up, and a Static that skips no-op updates.

`Poller` runs a blocking function in its own thread, hands its result to the event loop, and only
then waits for the next run: a slow NVML call or a flooded log delays the next poll instead of stacking
threads. (The log view is in `logview.py`, the log-following panes in `follow.py`.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from eagle_console.tui.startup import first_frame_gate

T = TypeVar("T")
FOLLOW_S = 0.25  # a shown log pane polls ~4 times a second
QUIET_S = 1.0  # ... and once a second after a second of polls that found nothing (the next line: within 1 s)
HIDDEN_S = None  # while a pane's tab is not shown: no poll until it is (or the selection changes)
WATCH_S = 2.0  # ... except a pane that keeps watch while hidden (the Metrics tab's alarms): this often
LOOK_S = 2.0  # how often a sleeping poller's thread reads whether its pane came back (a layout wakes it at once)
UNCHANGED: Any = object()  # what a poll returns when it found nothing new: nothing is handed to the screen


class Poller(Generic[T]):
    """Call `work()` in a thread every `interval` s (counted from the end of the last call), then
    `apply(result)` on the event loop. Errors go to `fail(exc)` and the polling goes on.

    With `sleep_hidden`, while the owner is not on screen (a tab not shown) it does not poll at all: four
    log panes at 4 Hz kept an idle console busy for nothing, and at one poll in 2 s each they still woke the
    screen twice a second. Showing the owner must `poke()`, so what came meanwhile is caught up at once.
    A `work()` that found nothing new returns UNCHANGED: the event loop is not woken for it (a shown,
    quiet log polled 4 times a second was most of an idle console's handovers); with `quiet_interval`,
    after a second of those it polls that much less often until something comes. With `hidden_interval`
    instead, a hidden owner still polls, that often (the Metrics tab: its alarms raise a toast)."""

    def __init__(self, owner: Widget, interval: float, work: Callable[[], T], apply: Callable[[T], None],
                 fail: Callable[[BaseException], None] | None = None, name: str = "poll",
                 sleep_hidden: bool = False, quiet_interval: float | None = None,
                 hidden_interval: float | None = None) -> None:
        self.owner, self.interval, self.work, self.apply = owner, interval, work, apply
        self.sleep_hidden, self.hidden_interval = sleep_hidden, hidden_interval
        self.quiet_interval = quiet_interval  # the interval once a second of polls returned UNCHANGED
        self._quiet = 0  # polls in a row that returned UNCHANGED
        self.fail = fail or (lambda exc: None)
        self.name = name
        self.stopped = True
        # One long-lived thread per poller, woken by a timeout or a poke: a Textual timer plus a worker per
        # poll cost ~6 messages and a task each time (at 4 Hz, most of an idle console's CPU).
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = True  # whether the owner is on screen, as the event loop last found it (_look)

    def start(self, delay: float = 0.0) -> None:
        """Begin polling once the owner is on screen: a reading thread started during the first layout
        would take the GIL from it (the first frame came ~80 ms later with the GPU poll started at mount).
        In the console, once its first screen has settled (`ConsoleApp.first_frame`, tui/startup.py)."""
        self.stopped = False
        gate = first_frame_gate(self.owner.app)
        if gate is not None:
            gate.call(self.owner, self._spawn, delay)
        else:
            self.owner.call_after_refresh(self._spawn, delay)

    def stop(self) -> None:
        self.stopped = True
        self._wake.set()

    def poke(self) -> None:
        """Poll now (the selection changed), or right after the one in flight. On the event loop."""
        if not self.stopped:
            self._look()
            self._wake.set()

    def _spawn(self, delay: float) -> None:
        if self.stopped or (self._thread is not None and self._thread.is_alive()):
            return
        self._look()
        try:  # every layout of the owner's screen (a tab switched, a zoom undone) looks again, on the loop
            self.owner.screen.screen_layout_refresh_signal.subscribe(self.owner, self._on_layout)
        except Exception:  # noqa: BLE001 - not mounted any more: nothing to poll for
            return
        self._thread = threading.Thread(target=self._loop, args=(delay,), name=f"eagle-{self.name}", daemon=True)
        self._thread.start()

    def _loop(self, delay: float) -> None:
        wait: float | None = delay
        while not self.stopped:
            if wait is None:  # hidden: no poll until poked, or seen on screen again (no handover meanwhile)
                while not self._wake.wait(LOOK_S) and not self.stopped and not self._on_screen():
                    pass
            elif wait > 0:
                self._wake.wait(wait)
            self._wake.clear()
            if self.stopped:
                return
            try:
                result: Any = self.work()
                error: BaseException | None = None
            except Exception as exc:  # a poll that fails says so on screen and keeps polling
                result, error = None, exc
            self._quiet = self._quiet + 1 if result is UNCHANGED and error is None else 0
            if result is not UNCHANGED or error is not None:
                try:  # blocks until applied: one poll at a time, never piling up behind a busy screen
                    self.owner.app.call_from_thread(self._finish, result, error)
                except Exception:  # the app is shutting down
                    return
            wait = self._next_interval()

    def _finish(self, result: Any, error: BaseException | None) -> None:
        if self.stopped:
            return
        if error is None:
            self.apply(result)
        else:
            self.fail(error)
        self._look()

    def _look(self) -> None:
        """On the event loop: is the owner on screen now."""
        try:
            self._shown = self.owner.is_on_screen
        except Exception:  # removed meanwhile, the app gone
            self._shown = False

    def _on_layout(self, _screen: object) -> None:
        """The owner's screen was laid out: look again, and wake a poller asleep while hidden."""
        was = self._shown
        self._look()
        if self._shown and not was and not self.stopped:
            self._wake.set()

    def _on_screen(self) -> bool:
        """In the poller's thread: the event loop's last look (after each applied poll, a poke, every layout of
        the screen). Never Textual's `is_on_screen` from here: with the screen's map stale it arranges the
        screen, and Textual's layout caches are not thread-safe (a console crashed in its LRUCache with a
        KeyError, the event loop arranging the same widgets at that moment)."""
        return self._shown

    def _next_interval(self) -> float | None:
        """Seconds to the next poll; None: none until poked (hidden, with `sleep_hidden`)."""
        if (self.sleep_hidden or self.hidden_interval is not None) and not self._on_screen():
            return HIDDEN_S if self.sleep_hidden else max(self.interval, self.hidden_interval or 0.0)
        if self.quiet_interval is not None and self._quiet * self.interval >= 1.0:
            return max(self.interval, self.quiet_interval)
        return self.interval


class QuietStatic(Static):
    """A Static that ignores an update to what it already shows. Panes poll 4 times a second and redraw
    their head and status lines from each poll; every `Static.update` costs a relayout of the screen, which
    made a large part of an idle console's 9.5 % of a core (2.5 % with this and slower hidden tabs)."""

    _shown: object = None

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        # Never markup by default: panes show log lines, paths, titles and results (`[/]` crashes markup).
        super().__init__(content, markup=markup, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        key = (content.plain, tuple(content.spans), str(content.style)) if isinstance(content, Text) else content
        if key == self._shown:
            return
        self._shown = key
        super().update(content, layout=layout)
