"""The Output pane: the selected step's latest log, followed (f pauses / follows, / filters)."""

from __future__ import annotations

from eagle_console.tui.panes.follow import FollowPane


class OutputPane(FollowPane):
    """`OutputPane(ctx)`: follows `ctx.journal.latest_run(step).log` of the selected step, from its last lines."""

    BORDER_TITLE = "Output"
    START = "end"
