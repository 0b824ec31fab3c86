"""What the right-hand panes share: a poller that never piles up, and a Static that skips no-op updates.

`Poller` runs a blocking function in a thread worker, hands its result to the event loop, and only
then arms the next run: a slow NVML call or a flooded log delays the next poll instead of stacking
threads. (The log view is in `logview.py`, the log-following panes in `follow.py`.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

T = TypeVar("T")
FOLLOW_S = 0.25  # a shown log pane polls ~4 times a second
HIDDEN_S = 2.0  # while a pane's tab is not shown


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

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        # Never markup by default: panes show log lines, paths, titles and results (`[/]` crashes markup).
        super().__init__(content, markup=markup, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        key = (content.plain, tuple(content.spans), str(content.style)) if isinstance(content, Text) else content
        if key == self._shown:
            return
        self._shown = key
        super().update(content, layout=layout)
