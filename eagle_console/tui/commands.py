"""Command palette (ctrl+p) entries: every key's action, mark, run or roll back any step by name, export."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from eagle_console.tui.context import ConsoleContext

Entry = tuple[str, object, str]  # (what the palette shows, what it calls, help)


class PaletteHost(Protocol):
    """What the palette calls on the App (tui/app.py's ConsoleApp): the App imports this module, not back."""

    ctx: ConsoleContext

    @property
    def readonly(self) -> bool: ...

    def run_action(self, action: str) -> Any: ...
    def action_tab(self, tab_id: str) -> Any: ...
    def open_mark(self, step_id: str) -> Any: ...
    def confirm_and_start(self, step_id: str) -> Any: ...
    def open_rollback(self, item_id: str) -> Any: ...
    def export_plan(self, fmt: str) -> Any: ...


def palette_entries(app: PaletteHost, per_step: bool = True) -> list[Entry]:
    """Everything the palette offers this console: every key's action, then (`per_step`) mark, run and roll
    back each step by name, then the exports. A read-only console offers only what changes nothing."""
    from eagle_console.ops.export import EXPORT_SUFFIX  # not before the first frame: the palette needs it
    from eagle_console.tui.keys import MUTATING
    from eagle_console.tui.panes.logs import TABS

    entries: list[Entry] = [(title, partial(app.run_action, action), f"key {key}: {help_text}")
                            for key, action, title, help_text in ACTIONS
                            if not (app.readonly and action in MUTATING)]
    entries += [(f"Show the {title} tab", partial(app.action_tab, tab_id), f"key {n}: in the right-hand tabs")
                for n, (tab_id, title, *_) in enumerate(TABS, 1)]
    plan = app.ctx.plan
    if per_step and not app.readonly:
        for step in plan.steps():
            entries.append((f"Mark step {step.id} {step.title}", partial(app.open_mark, step.id),
                            "set its status by hand, with an optional note"))
        for step in plan.steps():
            if step.action is not None:
                entries.append((f"Run step {step.id} {step.title}", partial(app.confirm_and_start, step.id),
                                "start it under a detached supervisor"))
        for kind, items in (("phase", plan.phases), ("step", plan.steps())):
            for item in items:
                entries.append((f"Roll back {kind} {item.id} {item.title}", partial(app.open_rollback, item.id),
                                "lists what will be undone, in order, before anything happens"))
    for fmt in EXPORT_SUFFIX:  # the formats ops.export writes
        entries.append((f"Export plan ({fmt})", partial(app.export_plan, fmt),
                        "write the plan with its statuses beside the state dir"))
    return entries


# (key, App action, what the palette shows, help): every action a key does, so the palette offers it too.
ACTIONS = (
    ("r", "run", "Run the selected step", "asks first when the step says confirm"),
    ("n", "next", "Run the next runnable step", "selects it, then runs it"),
    ("m", "mark", "Mark the selected step", "set its status by hand, with an optional note"),
    ("u", "rollback", "Roll back the selected step or phase", "lists what will be undone before anything"),
    ("K", "kill_orphans", "Kill orphaned GPU workers", "every GPU holder, orphans preselected"),
    ("e", "note", "Note on the selected step", "a line in the journal"),
    ("a", "approve", "Approve or deny an agent's request", "the selected step's, else the oldest waiting"),
    ("f", "follow", "Follow / pause the log", "the Server, NCCL or Output tab"),
    ("/", "filter", "Filter the log", "the Server, NCCL or Output tab"),
    ("z", "zoom", "Zoom: one pane alone", "GPUs, logs, plan, step, then all again"),
    ("?", "help", "Help: every key", "the dialogs' keys too"),
    ("q", "quit", "Quit", "says what keeps running"),
)


class ConsoleCommands(Provider):
    async def discover(self) -> Hits:
        for text, callback, help_text in palette_entries(self.app):  # type: ignore[arg-type]
            yield DiscoveryHit(text, callback, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, callback, help_text in palette_entries(self.app):  # type: ignore[arg-type]
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)  # type: ignore[arg-type]
