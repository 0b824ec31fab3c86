"""The console's messages: how workers hand results to the event loop and widgets talk to each other.

Workers post these (post_message is thread-safe) instead of calling widgets; a child tells the App with a
bubbling message; the App tells the right-hand panes with a non-bubbling one, so a pane without a handler
ignores it instead of passing it back up.

Plain classes, not dataclasses: the console imports these before its first frame, and each @dataclass
costs about 0.3 ms to build (12 of them: ~4 ms of its start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.ops.rollback import RollbackChoice
    from eagle_console.ops.steps import NextChoice
    from eagle_console.tui.live import PlanLoad, Snapshot


# -- the poller → the App -------------------------------------------------------------------------------

class JournalChanged(Message):
    """The journal has new events; `snapshot` is its state read after them."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:  # only the newest snapshot matters
        return isinstance(message, JournalChanged)


class PlanFileChanged(Message):
    """The plan file changed on disk: the plan it loads to, or its first error."""

    def __init__(self, load: PlanLoad, journal: Journal | None) -> None:
        super().__init__()
        self.load = load
        self.journal = journal  # a new journal when the plan's state dir moved (its id changed)


# -- operation workers → the App ------------------------------------------------------------------------

class OpDone(Message):
    """An operation finished (or was refused): the line to notify."""

    def __init__(self, text: str, severity: str = "information", timeout: float | None = None) -> None:
        super().__init__()
        self.text, self.severity, self.timeout = text, severity, timeout


class NextChosen(Message):
    """`n` found the next step (or why there is none)."""

    def __init__(self, choice: NextChoice) -> None:
        super().__init__()
        self.choice = choice


class RollbackPlanned(Message):
    """`u` listed what a rollback would undo, plain and cascade."""

    def __init__(self, choice: RollbackChoice) -> None:
        super().__init__()
        self.choice = choice


class QuitReady(Message):
    """`q` listed what keeps running; the App exits with this line (None: nothing runs)."""

    def __init__(self, line: str | None) -> None:
        super().__init__()
        self.line = line


class GpusChanged(Message):
    """GPU holders changed (a kill ended, a run started): the GPU pane reads again now."""


class ToastRoomChanged(Message):
    """The Detail line or the Step pane changed size (drafter findings read, a phase unfolded, the terminal
    resized): the App places the toasts above the Detail line and fits them to the Step pane again."""


# -- the App → panes (not bubbling) ---------------------------------------------------------------------

class StepSelected(Message, bubble=False):
    """The Plan pane's selection moved: panes that follow the selected step switch to it."""

    def __init__(self, step_id: str | None) -> None:
        super().__init__()
        self.step_id = step_id


class PlanReloaded(Message, bubble=False):
    """A changed plan file loaded: panes that depend on the plan read again."""


class TabShown(Message, bubble=False):
    """To each pane of the tab just shown: a pane that polled slowly while hidden catches up now."""


class ReadGpusNow(Message, bubble=False):
    """To the GPU pane, after GpusChanged: read again now rather than at the next poll."""
