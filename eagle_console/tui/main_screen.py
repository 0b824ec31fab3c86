"""The console's own screen (App.get_default_screen): Textual's Screen, less the layout passes a Resize to
the size it already has would cost, and less the restyle of its first ScreenResume."""

from __future__ import annotations

from textual import events
from textual.screen import Screen


class ConsoleScreen(Screen):
    BLANK = True  # its children cover it (tui/layout.py): its 40 rows were drawn under them, each frame

    _resumed = False

    def on_resize(self, event: events.Resize) -> None:
        """A Resize to the size the screen is laid out at changes nothing: Textual's handler (a full layout
        and compositor refresh) is skipped. Three reach it before the first frame, each after the other
        (the driver's size, the App's idle check, the screen's own first layout): 5 layouts were 2. What
        changed in between still gets its layout from the screen's update timer."""
        if event.size == self.size and self.size.area:
            event.prevent_default()

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Runs before Screen's handler (Textual calls the subclass's first). The first resume is the screen
        shown: every widget was styled as it was mounted, and restyling them all again changed nothing
        (~40 Stylesheet.apply calls before the first frame). Later ones (a dialog closed, the theme changed
        under it) restyle as Textual does."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False
