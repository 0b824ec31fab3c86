"""Command palette (ctrl+p) entries: mark any step by name, export the plan."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from eagle_console.tui.app import ConsoleApp


class ConsoleCommands(Provider):
    def _entries(self) -> list[tuple[str, object, str]]:
        app: ConsoleApp = self.app  # type: ignore[assignment]
        entries: list[tuple[str, object, str]] = []
        if not app.readonly:
            for step in app.ctx.plan.steps():
                entries.append((f"Mark step {step.id} {step.title}", partial(app.open_mark, step.id),
                                "set its status by hand, with an optional note"))
        entries.extend(app.steering_entries())  # run / roll back any step, kill orphans
        for fmt in ("todowrite", "markdown", "json"):
            entries.append((f"Export plan ({fmt})", partial(app.export_plan, fmt),
                            "write the plan with its statuses beside the state dir"))
        return entries

    async def discover(self) -> Hits:
        for text, callback, help_text in self._entries():
            yield DiscoveryHit(text, callback, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, callback, help_text in self._entries():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)  # type: ignore[arg-type]
