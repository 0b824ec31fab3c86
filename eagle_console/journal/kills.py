"""A kill of GPU holders as the journal keeps it: one `kill` event per kill, whichever face did it (the
console's K, `orphans --kill`, a gpu.kill step) and wherever (this machine, or a cluster node by its agent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.journal.kinds import EventKind

if TYPE_CHECKING:
    from eagle_console.journal.records import Event
    from eagle_console.journal.store import Journal

KILL_EVENT = EventKind.KILL


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


def freed_text(freed_mib: Mapping[str, float]) -> str:
    """`freed 8000 MiB (GPU 3: 4000 MiB, GPU 5: 4000 MiB)`: what a kill gave back, as every face says it."""
    per_gpu = ", ".join(f"GPU {g}: {mib:.0f} MiB" for g, mib in sorted(freed_mib.items(), key=lambda kv: int(kv[0])))
    return f"freed {sum(freed_mib.values()):.0f} MiB" + (f" ({per_gpu})" if per_gpu else "")


def kill_summary(killed: list[int], survivors: list[int], freed_mib: Mapping[str, float]) -> str:
    """`killed 2 (7992 7993) · freed 8000 MiB (GPU 3: …) · survivors 1 (7994)`: the line the CLI and a gpu.kill
    step's log print (it was Python's repr: `killed [7992, 7993], survivors [], freed MiB {'3': 4000.0}`)."""
    line = f"killed {len(killed)}" + (f" ({' '.join(map(str, killed))})" if killed else "")
    line += f" · {freed_text(freed_mib)}"
    if survivors:
        line += f" · SURVIVORS {len(survivors)} ({' '.join(map(str, survivors))})"
    return line


def journal_kill(journal: Journal, record: KillRecord, node: str | None = None) -> int:
    """Append `record`; a kill on a cluster node names the node in its data."""
    extra = {"node": node} if node is not None else {}
    return journal.append(KILL_EVENT, record.step_id, record.run_id, record.who, **record.data(), **extra)
