"""`z`: one pane takes the whole screen between the header and the key line; `z` again moves to the next
pane, and after the last the screen is back as it was. For an ssh window of 80x24, where each pane has
only part of its content on screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

# In the order `z` visits them: what a short screen cuts first.
ZOOM_ORDER = ("gpus", "logs", "plan", "step-info")
ZOOM_CLASS, ZOOMED = "-zoom", "-zoomed"


def main_screen(app: App) -> Screen:
    """The console's own screen, under any dialog (App.query asks the top screen, a dialog's)."""
    return app.screen_stack[0]


def zoomed(app: App) -> str | None:
    """The id of the pane shown alone, or None."""
    if not app.screen_stack:  # the app is closing
        return None
    screen = main_screen(app)
    if not screen.has_class(ZOOM_CLASS):  # zoom() sets it with the pane's class: no query while unzoomed
        return None
    found = screen.query(f"#main .column > .{ZOOMED}")
    return found.first().id if found else None


def next_zoom(current: str | None) -> str | None:
    if current is None:
        return ZOOM_ORDER[0]
    i = ZOOM_ORDER.index(current) + 1
    return ZOOM_ORDER[i] if i < len(ZOOM_ORDER) else None


def zoom(app: App, pane_id: str | None) -> None:
    """Show `pane_id` alone (None: every pane, as before)."""
    screen = app.query_one("#main").screen
    for widget in app.query(f".{ZOOMED}"):
        widget.remove_class(ZOOMED)
    screen.set_class(pane_id is not None, ZOOM_CLASS)
    if pane_id is None:
        return
    pane = app.query_one(f"#{pane_id}")
    pane.add_class(ZOOMED)
    assert pane.parent is not None
    pane.parent.add_class(ZOOMED)
