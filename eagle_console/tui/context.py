"""What every pane of the console may read: the current plan, the journal, the engine, the sim dir.

The App owns one ConsoleContext and hands it to each pane. Panes never block the event loop: whatever
touches the journal, /proc, NVML, HTTP or files runs in a thread worker and comes back with
`call_from_thread` (or a message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan, Step


@dataclass
class ConsoleContext:
    plan_path: Path
    plan: Plan  # the last plan that loaded; the App replaces it on a good live reload
    journal: Journal
    sim_dir: Path | None = None
    readonly: bool = False
    selected_step_id: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def engine(self) -> Engine:
        from eagle_console.engine.runner import Engine

        return Engine(self.plan, self.journal)

    @property
    def selected_step(self) -> Step | None:
        return self.plan.step(self.selected_step_id) if self.selected_step_id else None


class SelectionAware(Protocol):
    """Panes that follow the selected step (Output, Server, Extraction) implement this; the App calls it."""

    def step_selected(self, step_id: str | None) -> None: ...


class PlanAware(Protocol):
    """Panes that depend on the plan implement this; the App calls it after a good live reload."""

    def plan_reloaded(self) -> None: ...
