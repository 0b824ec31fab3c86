"""Command palette (ctrl+p) entries: mark, run or roll back any step by name, kill orphans, export the plan."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from eagle_console.ops.export import EXPORT_SUFFIX

if TYPE_CHECKING:
    from eagle_console.tui.app import ConsoleApp

Entry = tuple[str, object, str]  # (what the palette shows, what it calls, help)


def palette_entries(app: ConsoleApp) -> list[Entry]:
    """Everything the palette offers this console; a read-only console offers only the exports."""
    plan = app.ctx.plan
    entries: list[Entry] = []
    if not app.readonly:
        for step in plan.steps():
            entries.append((f"Mark step {step.id} {step.title}", partial(app.open_mark, step.id),
                            "set its status by hand, with an optional note"))
        for step in plan.steps():
            if step.action is not None:
                entries.append((f"Run step {step.id} {step.title}", partial(app.confirm_and_start, step.id),
                                "start it under a detached supervisor"))
        for item in (*plan.phases, *plan.steps()):
            entries.append((f"Roll back {item.id} {item.title}", partial(app.open_rollback, item.id),
                            "lists what will be undone, in order, before anything happens"))
        entries.append(("Kill orphaned GPU workers", app.action_kill_orphans,
                        "every GPU holder, orphans preselected"))
    for fmt in EXPORT_SUFFIX:  # the formats ops.export writes
        entries.append((f"Export plan ({fmt})", partial(app.export_plan, fmt),
                        "write the plan with its statuses beside the state dir"))
    return entries


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
