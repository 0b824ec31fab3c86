"""`Journal.runs()` as an incremental fold: the journal is append-only, so runs are built once from their
events and updated by the run events written since the last read — an idle console's polls cost the same with
100 events as with 50,000 (benchmarks/idle_journal.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from eagle_console.journal.kinds import EventKind

if TYPE_CHECKING:
    from eagle_console.journal.records import Event, Run


class RunFold:
    def __init__(self) -> None:
        self.runs: list[Run] = []  # in start order
        self.index: dict[int, Run] = {}
        self.by_step: dict[str, list[Run]] = {}
        self.open: dict[int, Run] = {}  # begun, no journaled exit yet
        self.services: list[Run] = []  # the service runs, in start order: the Server tab asks for the latest
        self.seen = 0  # the last event id folded

    def apply(self, events: Iterable[Event], make_run: Any) -> None:
        """Fold run events (RUN_KINDS, id order, all after `seen`); `make_run` is the Run class."""
        for e in events:
            self.seen = e.id
            if e.kind == EventKind.RUN_BEGIN:
                run = make_run(e.id, e.step_id or "", e.data.get("kind", "action"), e.at, e.who,
                               e.data.get("command", ""), e.data.get("log"), bool(e.data.get("service")),
                               e.data.get("env") or {})
                run.face, run.host, run.begun = e.face, e.data.get("host"), e.data.get("begun")
                self.index[e.id] = self.open[e.id] = run
                self.runs.append(run)
                self.by_step.setdefault(run.step_id, []).append(run)
                if run.service:
                    self.services.append(run)
                continue
            run = self.index.get(e.run_id or -1)
            if run is None:
                continue
            if e.kind == EventKind.RUN_PROC:
                for key, value in e.data.items():
                    if hasattr(run, key):
                        setattr(run, key, value)
            elif e.kind == EventKind.RUN_LOG:
                run.log = e.data.get("log")
            elif e.kind == EventKind.RUN_READY:
                run.ready_at = e.at
            elif e.kind == EventKind.RUN_EXIT:
                run.ended, run.exit_code = e.at, e.data.get("exit_code")
                run.outcome, run.reason = e.data.get("outcome"), e.data.get("reason")
                self.open.pop(run.id, None)
