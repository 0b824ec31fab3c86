"""Where the logs are: a run's log path, a step's latest log, the live service and its log, a rollback's log.

One place for each lookup, so the CLI (`log`, `rollback`), the engine (which writes them) and the console's
Output, Server and NCCL panes read the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Run
    from eagle_console.plan.model import Plan, Step


# Where the engine writes a run's and a rollback's log: read from the same functions. engine.spec is imported
# when one is asked for: the console's log panes import this module before their first frame (~3 ms).

def step_log_path(plan: Plan, step: Step, run_id: int) -> Path:
    from eagle_console.engine.spec import step_log_path as path

    return path(plan, step, run_id)


def rollback_log_path(plan: Plan, rollback_id: int) -> Path:
    from eagle_console.engine.spec import rollback_log_path as path

    return path(plan, rollback_id)


def latest_log_run(journal: Journal, step_id: str | None) -> Run | None:
    """The latest run of `step_id` (any kind: an action, a service, a rollback) that has a log."""
    if not step_id:
        return None
    run = journal.latest_run(step_id, kind=None)
    return run if run is not None and run.log else None


def latest_log(journal: Journal, step_id: str | None) -> Path | None:
    """The latest log of `step_id` (any run kind): what `log STEP` prints and the Output pane follows."""
    run = latest_log_run(journal, step_id)
    return Path(run.log) if run is not None and run.log else None


def live_service(journal: Journal, step_id: str) -> Run | None:
    """The step's service run while its supervisor is alive (node.liveness.live_service)."""
    from eagle_console.node.liveness import (
        live_service as live,  # psutil: not loaded for a pane that only reads logs
    )

    return live(journal, step_id)


def service_source(plan: Plan, journal: Journal, step_id: str | None) -> tuple[str | None, Path | None]:
    """(step, log) of the service the Server and NCCL panes follow: the selected step when it is a service
    (its latest log, none yet before its first run), else the latest service run of any step."""
    step = plan.step(step_id) if step_id else None
    if step is not None and step.service:
        return step.id, latest_log(journal, step.id)
    run = journal.latest_service_run()
    return (run.step_id, Path(run.log)) if run is not None and run.log else (None, None)


def service_step(plan: Plan, journal: Journal, step_id: str | None) -> str | None:
    """The step whose service log `service_log` gives (the NCCL pane looks for its ranks' logs)."""
    return service_source(plan, journal, step_id)[0]


def service_log(plan: Plan, journal: Journal, step_id: str | None) -> Path | None:
    return service_source(plan, journal, step_id)[1]
