"""What every pane of the console may read: the current plan, the journal, the engine, the sim dir.

The App owns one ConsoleContext and hands it to each pane. Panes never block the event loop: whatever
touches the journal, /proc, NVML, HTTP or files runs in a thread worker and comes back with
a message (`tui.messages`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.ops.console import Engine
    from eagle_console.plan.model import Plan


class ConsoleContext:
    # A plain class, not a dataclass: building one at import cost the first frame ~0.3 ms, for no use.
    def __init__(self, plan_path: Path, plan: Plan, journal: Journal, sim_dir: Path | None = None,
                 readonly: bool = False, runs_stop_on_quit: bool = False, selected_step_id: str | None = None,
                 gpus: Any = None) -> None:
        self.plan_path = plan_path
        self.plan = plan  # the last plan that loaded; the App replaces it on a good live reload
        self.journal = journal
        self.sim_dir = sim_dir
        self.readonly = readonly
        # The demo stops every run when its console closes: `q` must not say they keep running (the demo
        # says what it stopped instead).
        self.runs_stop_on_quit = runs_stop_on_quit
        self.selected_step_id = selected_step_id
        # The GPU pane's latest reading (an ops.GpuReading), set on the event loop: the NCCL pane weighs
        # its hang check with it instead of looking the GPU pane up in the DOM.
        self.gpus = gpus

    def this_node(self, entries: list[dict[str, Any]]) -> str | None:
        """Which cluster node is this machine, by the GPU pane's reading (ops.nodes.this_machine)."""
        from eagle_console.ops import this_machine

        return this_machine(entries, self.gpus.sample if self.gpus is not None else None)

    @property
    def engine(self) -> Engine:
        from eagle_console.ops import engine_for

        return engine_for(self.plan, self.journal)
