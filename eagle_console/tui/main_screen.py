"""The console's own screen (App.get_default_screen): Textual's Screen, less the layout passes a Resize to
the size it already has would cost, less the restyle of its first ScreenResume, and less the second layout
and the second frame that followed the first one (tests/test_tui_first_frame.py)."""

from __future__ import annotations

from textual import events, messages
from textual._time import get_time
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets._toast import ToastRack

_RACK_HIDDEN_WHEN_EMPTY = "display: none" in ToastRack.DEFAULT_CSS


class ConsoleScreen(Screen):
    BLANK = True  # its children cover it (tui/layout.py): its 40 rows were drawn under them, each frame

    _resumed = False
    _resuming = False  # in the first ScreenResume's handlers
    _drawn_whole = False  # ... whose layout has just drawn the whole screen
    _laid_out_at = float("-inf")  # when that layout began (Textual's clock, as Message.time)

    def _extend_compose(self, widgets: list[Widget]) -> None:
        """Textual's own widgets, the toast rack hidden inline from the start where Textual hides an empty one
        (its CSS says `display: none` and `ToastRack.show` sets `display` inline, none with no toasts: a new
        inline rule at the first resume, which asked the screen for a second layout before the first frame
        was complete). Textual 6 shows the rack always, invisible, and never sets its `display`."""
        super()._extend_compose(widgets)
        if _RACK_HIDDEN_WHEN_EMPTY:
            for widget in widgets:
                if isinstance(widget, ToastRack):
                    widget.display = False

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
            self._resuming = True

    def _refresh_layout(self, size=None, scroll: bool = False) -> None:  # noqa: ANN001 (Textual's signature)
        """The first resume lays the whole screen out and draws it (the first frame). Textual's update timer
        clears the screen's layout flags after its own full layout; the resume's did not, so the layouts asked
        while the widgets mounted had the timer lay the screen out and draw it all again, a frame later,
        before the console was idle (its first paint). Here that layout answers them, as the timer's does, and
        the repaint the screen was asked for while it mounted (the layout drew all of it)."""
        started = get_time()
        super()._refresh_layout(size, scroll)
        if self._resuming and not scroll and self.size.area and self.is_current and not self.app._batch_count:
            self._resuming = False
            self._drawn_whole = True
            self._laid_out_at = started
            self._layout_required = self._scroll_required = self._repaint_required = False
            for widget in self.walk_children(Widget):  # each one's new size asked for a layout: this one
                widget._layout_required = False

    def _on_layout(self, message: messages.Layout) -> None:
        """Runs before Screen's handler: a layout asked before the first frame's was laid out (the widgets
        mounting, each with its size still to come) needs no second one."""
        self._answered_by_first_layout(message)

    def _on_update(self, message: messages.Update) -> None:
        """Runs before Screen's handler: a widget that asked to be drawn again before the first frame's layout
        began was drawn by it. Each mounting widget asks (17 Update messages, handled after that layout):
        they were a second frame of every widget, before the console was idle at its first paint."""
        self._answered_by_first_layout(message)

    def _answered_by_first_layout(self, message: messages.Layout | messages.Update) -> None:
        """A message posted before the first frame's layout began is not handled by Screen: that layout did it."""
        if message.time <= self._laid_out_at:
            message.stop()
            message.prevent_default()

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):  # noqa: ANN001, ANN201
        """The repaint Textual's resume handler asks right after its layout drew the whole screen: nothing is
        left to draw (the first frame); any other refresh as Textual does it."""
        if self._drawn_whole and not (regions or layout or recompose):
            self._drawn_whole = False
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _on_idle(self, event: events.Idle) -> None:
        """Runs before Screen's handler: whatever the resume left unasked is forgotten (a Textual whose
        resume handler asks no repaint after its layout)."""
        self._resuming = self._drawn_whole = False
