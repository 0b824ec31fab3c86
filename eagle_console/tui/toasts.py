"""Where the console's toasts go: at the foot of the left column, over the Step pane, above the Detail line
and the keys, whatever their heights; never more of them than the Step pane has rows for, so they hide no
Plan row, GPU row or Detail line (issue #17)."""

from __future__ import annotations

from typing import Any

from textual.css.scalar import Scalar

MIN_TOAST_ROWS = 3  # when the Step pane is zoomed away, toasts still get this much
ZOOMED_WIDTH = 0.44  # of the screen, when the left column is zoomed away


def width(app: Any) -> int:
    """Cells a toast takes: the Step pane's width inside its borders, so that a toast covers the pane's
    text whole (a narrower toast left the ends of the lines under it standing beside it: `rafte`)."""
    found = app.detail.screen.query("#left")  # the main screen's, under a dialog too; none once torn down
    left = found.first() if found else None
    if left is not None and left.display and left.outer_size.width > 2:
        return left.outer_size.width - 2
    return max(20, int(app.size.width * ZOOMED_WIDTH))


def racks(app: Any) -> list[Any]:
    """Every screen's toast rack: the toasts show in the top screen's, a dialog's too (its rack kept
    Textual's defaults: toasts over the Detail line, as wide as the screen)."""
    return [rack for screen in app.screen_stack for rack in screen.query("ToastRack")]


def place(app: Any) -> None:
    """Lift the racks above the Detail line and the key line, size them to the Step pane, then fit the stack
    (again once laid out: a toast mounted a moment ago has no height yet, and was not counted)."""
    bars = app.query("KeyBar")
    if not bars or not app.detail.is_mounted:  # the app is being torn down (a late ToastRoomChanged): nothing to place
        return
    below = app.detail.outer_size.height + bars.first().outer_size.height
    cells = width(app)
    for rack in racks(app):  # the same margin or width set again still relays the screen: only a change
        if tuple(rack.styles.margin) != (0, 0, below, 1):
            rack.styles.margin = (0, 0, below, 1)
        if rack.styles.width != Scalar.from_number(cells):
            rack.styles.width = cells
    fit(app)
    app.call_after_refresh(app._fit_toasts)


def fit(app: Any) -> None:
    """Show the newest toasts that fit in the Step pane's height and hide the older ones (they expire as
    usual). Hidden, not removed: the rack would mount a removed one again."""
    info = app.step_info
    room = max(MIN_TOAST_ROWS, info.outer_size.height if info.display else 0)
    for rack in racks(app):
        used = 0
        for holder in reversed(list(rack.query("ToastHolder"))):
            # the holder is invisible and unsized: its toast has the height
            used += sum(toast.outer_size.height for toast in holder.children) if holder.display else 0
            if holder.display and used > room:
                holder.display = False


def posted(app: Any, fit_later: Any) -> None:
    """A toast was posted: the racks are placed from the first one on (until then console.tcss's margin is
    right, and the startup makes no queries for them), and fitted once the new toast is laid out."""
    if not app.toasts_posted:
        app.toasts_posted = True
        place(app)
    after_notify(app, fit_later)


def after_notify(app: Any, fit_later: Any) -> None:
    """Queued on each rack after its own `show` (which mounts the new toast): fit once laid out."""
    for rack in racks(app):
        rack.call_later(app.call_after_refresh, fit_later)
