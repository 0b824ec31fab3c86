"""The console's messages: how workers hand results to the event loop and widgets talk to each other.

Workers post these (post_message is thread-safe) instead of calling widgets; a child tells the App with a
bubbling message; the App tells the right-hand panes with a non-bubbling one, so a pane without a handler
ignores it instead of passing it back up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.ops.rollback import RollbackChoice
    from eagle_console.ops.steps import NextChoice
    from eagle_console.tui.live import PlanLoad, Snapshot


# -- the poller → the App -------------------------------------------------------------------------------

@dataclass
class JournalChanged(Message):
    """The journal has new events; `snapshot` is its state read after them."""

    snapshot: Snapshot

    def can_replace(self, message: Message) -> bool:  # only the newest snapshot matters
        return isinstance(message, JournalChanged)


@dataclass
class PlanFileChanged(Message):
    """The plan file changed on disk: the plan it loads to, or its first error."""

    load: PlanLoad
    journal: Journal | None  # a new journal when the plan's state dir moved (its id changed)


# -- operation workers → the App ------------------------------------------------------------------------

@dataclass
class OpDone(Message):
    """An operation finished (or was refused): the line to notify."""

    text: str
    severity: str = "information"
    timeout: float | None = None


@dataclass
class NextChosen(Message):
    """`n` found the next step (or why there is none)."""

    choice: NextChoice


@dataclass
class RollbackPlanned(Message):
    """`u` listed what a rollback would undo, plain and cascade."""

    choice: RollbackChoice


@dataclass
class QuitReady(Message):
    """`q` listed what keeps running; the App exits with this line (None: nothing runs)."""

    line: str | None


@dataclass
class GpusChanged(Message):
    """GPU holders changed (a kill ended, a run started): the GPU pane reads again now."""


@dataclass
class ToastRoomChanged(Message):
    """The Detail line or the Step pane changed size (drafter findings read, a phase unfolded, the terminal
    resized): the App places the toasts above the Detail line and fits them to the Step pane again."""


# -- the App → panes (not bubbling) ---------------------------------------------------------------------

@dataclass
class StepSelected(Message, bubble=False):
    """The Plan pane's selection moved: panes that follow the selected step switch to it."""

    step_id: str | None


@dataclass
class PlanReloaded(Message, bubble=False):
    """A changed plan file loaded: panes that depend on the plan read again."""


@dataclass
class TabShown(Message, bubble=False):
    """To each pane of the tab just shown: a pane that polled slowly while hidden catches up now."""


@dataclass
class ReadGpusNow(Message, bubble=False):
    """To the GPU pane, after GpusChanged: read again now rather than at the next poll."""
