"""Killing GPU holders, once for the three faces (`K`, `orphans --kill`, a `gpu.kill` step):
scan → choose → kill → journal, with node.kill's protections and grace parser.

Each face parses its input, renders the scan and the progress its own way, and calls these; every kill
is journaled as one `KillRecord`, whichever face did it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.node.kill import (
    Progress,
    in_console_session,
    kill_holders,
    protection,
    refusal,
    select_targets,
)
from eagle_console.node.procs import Holder, scan_holders

if TYPE_CHECKING:
    from eagle_console.journal import Event, Journal
    from eagle_console.node.gpus import GpuBackend, NodeSample
    from eagle_console.node.procs import TrackedRun

KILL_EVENT = "kill"
FACES = ("console", "cli", "step")
SELECTED = "selected"  # the scope of a console kill whose selection is not exactly the orphans


@dataclass
class HolderScan:
    """Every GPU holder, why some can never be signalled, and the backend kept open to measure the kill."""

    holders: list[Holder]
    refused: dict[int, str]  # pid -> node.kill.refusal reason
    backend_name: str
    error: str | None  # the backend's sample error (no driver, a GPU that did not answer)
    backend: GpuBackend = field(repr=False)
    supervisors: frozenset[int] = frozenset()  # live supervisors the journal recorded: never signalled
    sample: NodeSample | None = field(default=None, repr=False)  # what the holders were read against

    @property
    def unavailable(self) -> bool:
        """No GPU backend at all: only the /proc fd scan saw holders."""
        return self.backend_name == "none"

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> HolderScan:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def scan(sim_dir: Path | None, journal: Journal | None = None,
         tracked: list[TrackedRun] | None = None, here: str | None = None) -> HolderScan:
    """Sample the GPUs and classify their holders against this machine's tracked runs (the journal's, and a
    multi-node server's rank sessions here: ops.rank_sessions.tracked_here; `here` names the cluster node
    that is this machine, when known), or against `tracked` without a journal (a cluster node's agent: the
    console's runs on that node)."""
    from eagle_console.node.gpus import open_backend

    backend = open_backend(sim_dir)
    try:
        sample = backend.sample()
        if journal is not None:
            from eagle_console.ops.rank_sessions import tracked_here

            tracked = tracked_here(journal, here)
        holders = scan_holders(sample, tracked or [], device_prefix=backend.device_prefix)
        supervisors = journal_supervisors(journal) if journal is not None else frozenset()
        protected = protection(supervisors)
        for h in holders:
            h.same_session = h.in_namespace and in_console_session(h, protected)
        refused = {h.pid: why for h in holders if (why := refusal(h, (), protected))}
    except BaseException:
        backend.close()
        raise
    return HolderScan(holders, refused, sample.backend, sample.error, backend, supervisors, sample)


def journal_supervisors(journal: Journal) -> frozenset[int]:
    """The supervisors of the journal's runs that are still alive (same pid *and* create time): an
    eagle-console process even where its command line does not say so."""
    from eagle_console.processes import alive

    return frozenset(r.supervisor_pid for r in journal.runs()
                     if r.supervisor_pid and alive(r.supervisor_pid, r.supervisor_ctime))


def tracked_note(h: Holder) -> str:
    """The second question's subject: `pid 1234 belongs to step 0.3 (running)`."""
    return f"pid {h.pid} belongs to step {h.owner} (running)"


def choose(found: HolderScan, scope: str = "orphans", match: Iterable[str] = (),
           gpus: Iterable[int] | None = None) -> list[Holder]:
    """The holders `scope` targets (the protections are applied again when killing)."""
    return select_targets(found.holders, scope, match, gpus)


def preselected(found: HolderScan) -> set[int]:
    """What the console ticks when it opens: the orphans that may be signalled."""
    return {h.pid for h in choose(found) if h.pid not in found.refused}


def selection_scope(found: HolderScan, pids: Iterable[int]) -> str:
    """`orphans` while the operator kept the preselection, `selected` once they changed it."""
    return "orphans" if set(pids) == preselected(found) else SELECTED


def memory_by_gpu(holders: Iterable[Holder]) -> dict[int, float]:
    out: dict[int, float] = {}
    for h in holders:
        for g, mib in h.used_by_gpu.items():
            out[g] = out.get(g, 0.0) + mib
    return out


class KillRecord(NamedTuple):
    """The one shape of a journaled kill. `who`, `step_id` and `run_id` are the event's own columns."""

    who: str
    scope: str  # orphans | all | match (node.kill.SCOPES) | selected (picked by hand in the console)
    face: str  # console | cli | step
    step_id: str | None  # the gpu.kill step and run that did it
    run_id: int | None
    killed: list[int]
    survivors: list[int]
    gone: list[int]  # exited (or pid reused) before the signal
    refused: list[dict[str, Any]]  # [{"pid": int, "reason": str}]
    freed_mib: dict[str, float]  # GPU index (a JSON key) -> MiB freed

    @property
    def freed_total(self) -> float:
        return round(sum(self.freed_mib.values()), 1)

    def data(self) -> dict[str, Any]:
        """The event's JSON data: everything but its columns."""
        return {k: v for k, v in self._asdict().items() if k not in ("who", "step_id", "run_id")}

    @classmethod
    def from_event(cls, event: Event) -> KillRecord:
        d = event.data
        return cls(who=event.who or "", scope=d["scope"], face=d["face"], step_id=event.step_id,
                   run_id=event.run_id, killed=list(d["killed"]), survivors=list(d["survivors"]),
                   gone=list(d["gone"]), refused=list(d["refused"]), freed_mib=dict(d["freed_mib"]))


def journal_kill(journal: Journal, record: KillRecord) -> int:
    return journal.append(KILL_EVENT, record.step_id, record.run_id, record.who, **record.data())


def kill(found: HolderScan, targets: list[Holder], *, grace: float, scope: str, face: str,
         journal: Journal | None, step_id: str | None = None, run_id: int | None = None,
         sig: int = signal.SIGTERM, progress: Progress | None = None,
         say: Callable[[str], None] | None = None) -> KillRecord:
    """Signal `targets` (SIGTERM, grace, SIGKILL), wait for their memory, and journal the record.

    Without a journal (the CLI with no plan) the kill happens and is only returned.
    """
    from eagle_console.journal.operator import current_operator

    if face not in FACES:
        raise ValueError(f"face must be one of {', '.join(FACES)}, not {face!r}")
    report = kill_holders(targets, backend=found.backend, grace=grace, sig=sig, progress=progress, say=say,
                          consoles=found.supervisors)
    record = KillRecord(who=current_operator(), scope=scope, face=face, step_id=step_id, run_id=run_id,
                        killed=report["killed"], survivors=report["survivors"], gone=report["gone"],
                        refused=report["refused"], freed_mib=report["freed_mib"])
    if journal is not None:
        journal_kill(journal, record)
    return record
