"""How a face names its controls. Texts from ops name none (no key, no flag); a face passes its `Hints`
and they are added where an option would help ("fix and run again (r)", "or use --cascade")."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from eagle_console.journal import Refused


class Hints(NamedTuple):
    """Each is appended as is; empty leaves the neutral text."""

    run: str = ""  # after "fix and run again"
    mark: str = ""  # after "or mark it"
    cascade: str = ""  # after a rollback refused because completed steps depend on it
    force: str = ""  # after a rollback refused because a step has no undo
    rollback: str = ""  # after "roll the step back" (a run refused while a lost run's action still runs)
    approve: str = ""  # after "approve or deny it" (a request waiting for a person: ops/approvals.py)
    include_tracked: str = ""  # after "tracked by step X" (a live run's process a kill set aside)
    pick: str = ""  # after "belongs to U (as root, …)": how root picks that process; {pid} is its pid


NEUTRAL = Hints()


def refusal_text(exc: Refused, hints: Hints = NEUTRAL) -> str:
    """The refusal with the face's way past it, when there is one (`Refused.fix`)."""
    extra = {"cascade": hints.cascade, "force": hints.force, "rollback": hints.rollback,
             "mark": hints.mark}.get(getattr(exc, "fix", None) or "", "")
    return f"{exc}{extra}"
