"""The key line at the bottom: the active keys in one widget, fitted to the width.

Textual's Footer mounts a widget per key (a dozen here, ~40 ms before the first frame) and, at 80
columns, cuts off the right end — `?` and `q` with it. This one draws a single line from the screen's
active bindings, keeps `? Help` and `q Quit` whatever the width, drops descriptions before keys, and
still answers a click on a key.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widgets import Static

# Shown at the right end at any width: how to get help and how to leave.
KEEP_LAST = ("question_mark", "q")
SEP = "  "


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
        padding: 0 1;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.keys: list[tuple[str, str, str, bool]] = []  # (key, shown key, description, enabled)
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) of each drawn key, for clicks
        # Keys are read from the screen when the line is drawn, not when told they changed: reading the
        # screen's active bindings is a walk of the focus chain (9 % of the startup's App.run under py-spy),
        # and the first screen told it twice (the mount, the Plan pane taking focus) before its first frame.
        self._stale = True

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen:
            self._stale = True
            self.refresh()  # repaint only: one line whatever the keys

    def _collect(self, screen: Screen) -> None:
        app = self.app
        keys: list[tuple[str, str, str, bool]] = []
        palette = None
        seen_actions: set[str] = set()
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            if binding.key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = (binding.key, app.get_key_display(binding), "Commands", enabled)
                continue
            if not binding.show or binding.action in seen_actions:
                continue
            seen_actions.add(binding.action)
            keys.append((binding.key, binding.key_display or app.get_key_display(binding), binding.description,
                         enabled))
        tail = [k for k in keys if k[0] in KEEP_LAST]
        keys = [k for k in keys if k[0] not in KEEP_LAST] + ([palette] if palette else []) + tail
        self.keys = keys

    def render(self) -> Text:
        if self._stale and self.is_attached:
            self._stale = False
            self._collect(self.screen)
        # Fitted to the width as it is drawn, not in a resize handler: the first frame is already right, and
        # the update a resize made cost the first screen a layout pass of its own.
        width = max(self.content_size.width, 1) if self.is_attached and self.size.width else 200
        return self.line(width)

    def line(self, width: int) -> Text:
        """The key line for `width` cells: every key with its description if it fits; else descriptions
        are dropped from the left (the ones nearer the right end, help and quit, are kept longest)."""
        shown = [(key, display, desc) for key, display, desc, _ in self.keys]
        full = [True] * len(shown)
        for i in range(len(shown) + 1):
            if self._width(shown, full) <= width or i == len(shown):
                break
            full[i] = False  # this key keeps only its key: "r" instead of "r Run"
        text, spans = Text(no_wrap=True, overflow="ellipsis"), []
        for (key, display, desc), with_desc, (_, _, _, enabled) in zip(shown, full, self.keys, strict=True):
            if text:
                text.append(SEP if all(full) else " ")
            start = len(text)
            text.append(display, style="bold" if enabled else "dim")
            if with_desc:
                text.append(f" {desc}", style="" if enabled else "dim")
            spans.append((start, len(text), key))
        self._spans = spans
        return text

    @staticmethod
    def _width(shown: list[tuple[str, str, str]], full: list[bool]) -> int:
        sep = len(SEP) if all(full) else 1
        cells = sum(len(display) + (len(desc) + 1 if f else 0) for (_, display, desc), f in zip(shown, full, strict=True))
        return cells + sep * max(len(shown) - 1, 0)

    def on_click(self, event: events.Click) -> None:
        x = event.x - self.styles.padding.left
        for start, end, key in self._spans:
            if start <= x < end:
                self.app.simulate_key(key)
                return
