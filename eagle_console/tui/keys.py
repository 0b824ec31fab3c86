"""The console's keys: the bindings in console.md's order, which of them change something, and the help list."""

from __future__ import annotations

from textual.binding import Binding

from eagle_console.tui.panes.logs import TABS

BINDINGS: list[Binding] = [
    # The order of console.md's key line: r n m u K e f /.
    Binding("r", "run", "Run"),
    Binding("n", "next", "Next"),
    Binding("m", "mark", "Mark"),
    Binding("u", "rollback", "Rollback"),
    Binding("K", "kill_orphans", "Kill orphans", key_display="K"),
    Binding("e", "note", "Note"),
    Binding("a", "approve", "Approve"),  # shown only while an agent's request waits (App.check_action)
    Binding("f", "follow", "Follow"),
    Binding("slash", "filter", "Filter", key_display="/"),
    Binding("z", "zoom", "Zoom"),
    *[Binding(str(i), f"tab('{tab_id}')", title, show=False) for i, (tab_id, title, *_) in enumerate(TABS, 1)],
    Binding("question_mark", "help", "Help", key_display="?"),
    Binding("q", "quit", "Quit"),
]
# Actions that change the journal, the node or the plan's state: hidden and refused under --readonly.
MUTATING = frozenset({"run", "next", "mark", "note", "rollback", "kill_orphans", "approve"})  # z, f, / only look
# Keys that exist but are not bindings (Textual's own), for the help screen.
EXTRA_KEYS = (("tab / shift+tab", "move focus between panes"), ("ctrl+p", "command palette: every action below"),
              ("↑ ↓ j k ← → enter", "move in the plan tree, fold a phase"),
              ("home / end", "in a log: top, bottom (End follows again); pgup pgdn a page"),
              ("w", "in a log: wrap long lines or not (then ← → scroll sideways)"))
# The keys of the dialogs (screens/), which their own key lines may not have room to list.
DIALOG_KEYS = (
    ("K dialog", "space select · j/k ↑↓ move · enter SIGTERM, then SIGKILL after the grace · esc close"),
    ("", "y / n answer the second question (a tracked process) · enter closes once done"),
    ("Run?", "enter / y run · esc / n cancel"),
    ("Mark", "↑↓ pick a status · enter, then type a note (optional) · enter mark · esc cancel"),
    ("Roll back", "enter roll back · c with or without its dependents · esc cancel"),
    ("Note", "type · enter save · esc cancel"),
    ("Approve", "↑↓ approve or deny · enter, then a note (optional) · enter answer · esc close"),
)


def help_keys(readonly: bool) -> list[tuple[str, str]]:
    """(key, what it does) for the help screen: the keys this console answers, the tabs on one line."""
    keys = [(b.key_display or b.key, b.description) for b in BINDINGS
            if not b.action.startswith("tab(") and not (readonly and b.action in MUTATING)]
    keys.append((f"1…{len(TABS)}", ", ".join(title for _, title, *_ in TABS)))  # the tabs, one line in the dialog
    keys.extend(EXTRA_KEYS)
    return keys


def dialog_keys(readonly: bool) -> list[tuple[str, str]]:
    return [] if readonly else list(DIALOG_KEYS)
