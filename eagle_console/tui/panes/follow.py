"""The panes that follow one log chosen from the journal (Output, Server, NCCL): resolve the log and read
new lines in a worker, hand each poll's lines to a LogView in one batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from rich.style import Style
from rich.text import Text

from eagle_console.ops.logs import latest_log as step_log  # the panes call it by this name
from eagle_console.ops.logs import service_log
from eagle_console.tui.messages import PlanReloaded, StepSelected, TabShown
from eagle_console.tui.panes._logview import FOLLOW_S, QUIET_S, UNCHANGED, Poller, QuietStatic
from eagle_console.tui.panes.logview import MAX_LINES, LogView
from eagle_console.tui.theme import tstyle

READS_PER_POLL = 16  # x 4 MiB: how far one poll may catch up before handing a batch to the screen


class LogBatch(NamedTuple):
    path: Path | None
    reset: bool  # the followed file changed: clear the view
    lines: list[str]
    digest: Any = None  # what the pane's parser made of the lines (worker side)


class FollowPane(LogView):
    """Base of the Output, Server and NCCL panes: resolve the log (worker), follow it with a LogFollower,
    hand each poll's lines to the view in one batch. The pane is the LogView itself, its head line above the
    rows (a container holding one was a widget more to style and lay out). Subclasses override `resolve`,
    and `digest` / `show_digest` to parse the lines in the worker and draw the result."""

    START = "end"  # "begin" reads the whole file once (parsers need the startup lines)
    DRAWS_WHEN_QUIET = False  # True: a poll with no new line still changes what is drawn (the NCCL hang check)
    DEFAULT_CSS = "FollowPane { height: 1fr; }"

    def __init__(self, ctx: Any, *, max_lines: int = MAX_LINES, interval: float = FOLLOW_S, **kwargs) -> None:
        super().__init__(max_lines, styler=self.styler, **kwargs)
        self.ctx = ctx
        self.step_id: str | None = ctx.selected_step_id
        self.path: Path | None = None
        self._follower: Any = None
        self._want_reset = False
        self._draw_next = True  # the next poll is drawn even with nothing new (the first, the one after a failure)
        self.poller = Poller(self, interval, self._poll, self._apply, self._failed, name=f"{type(self).__name__}-poll",
                             sleep_hidden=True, quiet_interval=QUIET_S)

    def compose(self):
        self.head = QuietStatic("", classes="follow-head")
        yield from self.compose_head()
        yield from super().compose()

    def compose_head(self):
        return iter(())

    def styler(self, line: str) -> Style | None:
        return None

    def on_mount(self) -> None:  # LogView's on_mount runs too (Textual calls each class's handler)
        self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    # ---- what the App tells it --------------------------------------------------------------------

    def on_step_selected(self, message: StepSelected) -> None:
        if message.step_id != self.step_id:
            self.step_id = message.step_id
            self.poller.poke()

    def on_tab_shown(self, message: TabShown) -> None:
        self.poller.poke()

    def on_plan_reloaded(self, message: PlanReloaded) -> None:
        self.poller.poke()

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
        if not (reset or lines or self._draw_next or self.DRAWS_WHEN_QUIET):
            return UNCHANGED  # a quiet log: nothing handed to the screen
        return LogBatch(path, reset, lines, self.digest(lines))

    # ---- event-loop side -------------------------------------------------------------------------

    def _apply(self, batch: LogBatch) -> None:
        self._draw_next = False
        if batch.reset:
            self.clear(str(batch.path) if batch.path else self.no_log_text())
        lines = self.view_lines(batch)
        self.add_lines(lines[-self.max_lines:], len(lines))
        self.show_digest(batch)

    def view_lines(self, batch: LogBatch) -> list[str]:
        """The lines of a batch the view shows (the NCCL pane keeps only NCCL lines)."""
        return batch.lines

    def no_log_text(self) -> str:
        return "no log yet for this step" if self.step_id else "no step selected"

    def show_digest(self, batch: LogBatch) -> None:
        """Draw what `digest` found (event loop)."""

    def _failed(self, exc: BaseException) -> None:
        self._draw_next = True  # the next poll replaces this line, even when it finds nothing new
        self.status.update(Text(f"cannot follow the log: {exc}", style=tstyle("ec.error")))


class ServiceLogPane(FollowPane):
    """A FollowPane over the service log (Server and NCCL panes), read from the start, with a head line."""

    START = "begin"  # the parsers need the startup lines

    def compose_head(self):
        yield self.head

    def resolve(self, step_id: str | None) -> Path | None:
        return service_log(self.ctx.plan, self.ctx.journal, step_id)

    def no_log_text(self) -> str:
        return "no service has run yet"
