"""Where the console's toasts go: at the foot of the left column, over the Step pane, above the Detail line
and the keys, whatever their heights; never more of them than the Step pane has rows for, so they hide no
Plan row, GPU row or Detail line (issue #17)."""

from __future__ import annotations

from typing import Any

MIN_TOAST_ROWS = 3  # when the Step pane is zoomed away, toasts still get this much


def place(app: Any) -> None:
    """Lift the rack above the Detail line and the key line, then fit the stack."""
    bars = app.query("KeyBar")
    if not bars or not app.detail.is_mounted:  # the app is being torn down (a late ToastRoomChanged): nothing to place
        return
    below = app.detail.outer_size.height + bars.first().outer_size.height
    for rack in app.detail.screen.query("ToastRack"):  # the main screen's, even under a dialog
        if tuple(rack.styles.margin) != (0, 0, below, 1):  # the same margin set again still relays the screen
            rack.styles.margin = (0, 0, below, 1)
    fit(app)


def fit(app: Any) -> None:
    """Show the newest toasts that fit in the Step pane's height and hide the older ones (they expire as
    usual). Hidden, not removed: the rack would mount a removed one again."""
    info = app.step_info
    room = max(MIN_TOAST_ROWS, info.outer_size.height if info.display else 0)
    used = 0
    for holder in reversed(list(app.detail.screen.query("ToastRack > ToastHolder"))):
        # the holder is invisible and unsized: its toast has the height
        used += sum(toast.outer_size.height for toast in holder.children) if holder.display else 0
        if holder.display and used > room:
            holder.display = False


def after_notify(app: Any, fit_later: Any) -> None:
    """Queued on each rack after its own `show` (which mounts the new toast): fit once laid out."""
    for rack in app.detail.screen.query("ToastRack"):
        rack.call_later(app.call_after_refresh, fit_later)
