"""A kill of GPU holders on this machine, once for every face (`K`, `orphans --kill`, a gpu.kill step, a
cluster node's agent): scan → choose → kill → record, with node.kill's protections and grace.

`scan` reads the GPUs (node/reading.py) and says why some holders can never be signalled; `KillArgs` is a
gpu.kill step's `with` table, read once (the step, its confirmation preview); `choose` is which holders a
scope targets, and `Targets` the same with the processes of a live run set aside unless they are included;
`kill` signals and records one KillRecord (journal/kills.py). ops.orphans builds the faces' kill plan on
these; a face renders the scan and the progress its own way.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.journal.kills import KillRecord, journal_kill
from eagle_console.node.grace import parse_grace
from eagle_console.node.kill import (
    SCOPES,
    Progress,
    in_console_session,
    kill_holders,
    protection,
    refusal,
    select_targets,
)
from eagle_console.node.procs import Holder, TrackedRun
from eagle_console.node.reading import GpuReader
from eagle_console.node.tracked import journal_supervisors, tracked_here

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.node.gpus import GpuBackend, NodeSample

FACES = ("console", "cli", "step")
SELECTED = "selected"  # the scope of a kill whose selection is not exactly what a scope chose (K, a node's pids)


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
    # refused only because another user's, which root may still signal by picking each one (K's space,
    # `orphans --kill --pid`): never preselected, never in a scope's kill
    pickable: frozenset[int] = frozenset()

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
    """Read the GPUs and classify their holders against this machine's tracked runs (the journal's, and a
    multi-node server's rank sessions here: node.tracked.tracked_here; `here` names the cluster node that is
    this machine, when known), or against `tracked` without a journal (a cluster node's agent: the console's
    runs on that node)."""
    reader = GpuReader(sim_dir)
    try:
        if journal is not None:
            tracked = tracked_here(journal, here)
        reading = reader.read(tracked or [])
        supervisors = journal_supervisors(journal)
        protected = protection(supervisors)
        for h in reading.holders:
            h.same_session = h.in_namespace and in_console_session(h, protected)
        refused = {h.pid: why for h in reading.holders if (why := refusal(h, (), protected))}
        pickable = frozenset(h.pid for h in reading.holders
                             if h.pid in refused and refusal(h, (h.pid,), protected) is None)
    except BaseException:
        reader.close()
        raise
    sample = reading.sample
    return HolderScan(reading.holders, refused, sample.backend, sample.error, reader.backend, supervisors,
                      sample, pickable)


# ---- what to kill -------------------------------------------------------------------------------------------


def parse_signal(value: Any) -> int:
    name = str(value or "TERM").upper()
    name = name if name.startswith("SIG") else f"SIG{name}"
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise ValueError(f"unknown signal {value!r} (use TERM, INT, KILL, ...)") from None


def gpu_indices(value: Any, what: str = "gpus") -> list[int] | None:
    """A `with` table's list of GPU indices (None: every GPU); ValueError for anything else."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"`{what}` is a list of GPU indices, like [0, 1]")
    return list(value)


class KillArgs(NamedTuple):
    """A gpu.kill step's `with` table, read once: the step's run and its confirmation preview agree."""

    scope: str = "orphans"
    match: tuple[str, ...] = ()
    gpus: list[int] | None = None
    signal: int = signal.SIGTERM
    grace: Any = None  # as written (None: $EAGLE_CONSOLE_KILL_GRACE or the default): node.grace.resolve_grace

    @classmethod
    def problems(cls, args: Mapping[str, Any]) -> list[str]:
        """Everything wrong with `args`, found without scanning (the `validate` command's answer)."""
        problems = []
        scope = args.get("scope", "orphans")
        if scope not in SCOPES:
            problems.append(f"`scope` must be one of {', '.join(SCOPES)}, not {scope!r}")
        match = args.get("match", [])
        if isinstance(match, str):
            match = [match]
        if not isinstance(match, list) or not all(isinstance(m, str) for m in match):
            problems.append("`match` is a list of regexes")
        else:
            for m in match:
                try:
                    re.compile(m)
                except re.error as exc:
                    problems.append(f"`match` regex {m!r}: {exc}")
            if scope == "match" and not match:
                problems.append("scope 'match' needs `match` regexes")
        for check in (lambda: gpu_indices(args.get("gpus")), lambda: parse_signal(args.get("signal")),
                      lambda: args.get("grace") is None or parse_grace(args["grace"], "`grace`")):
            try:
                check()
            except ValueError as exc:
                problems.append(str(exc))
        return problems

    @classmethod
    def read(cls, args: Mapping[str, Any]) -> KillArgs:
        """`args` as KillArgs; ValueError naming every problem."""
        problems = cls.problems(args)
        if problems:
            raise ValueError("; ".join(problems))
        return cls.as_given(args)._replace(gpus=gpu_indices(args.get("gpus")), signal=parse_signal(args.get("signal")))

    @classmethod
    def as_given(cls, args: Mapping[str, Any]) -> KillArgs:
        """The keys as written, unchecked (a preview shows what it can; a bad grace is said, not raised)."""
        match = args.get("match", [])
        return cls(scope=args.get("scope", "orphans"), match=tuple([match] if isinstance(match, str) else match),
                   gpus=args.get("gpus"), grace=args.get("grace"))


def choose(found: HolderScan, scope: str = "orphans", match: Iterable[str] = (),
           gpus: Iterable[int] | None = None) -> list[Holder]:
    """The holders `scope` targets (the protections are applied again when killing)."""
    return select_targets(found.holders, scope, match, gpus)


class Targets(NamedTuple):
    chosen: list[Holder]  # what the kill signals (the never-signal rules still apply when it does)
    tracked: list[Holder]  # processes of a live run the scope took in, set aside: killing one fails its step


def targets(holders: list[Holder], scope: str = "orphans", match: Iterable[str] = (),
            gpus: Iterable[int] | None = None, pids: Iterable[int] | None = None,
            include_tracked: bool = False) -> Targets:
    """What a kill in `scope` signals: `pids` (the operator's own pick) narrows it, chosen among every holder
    for the `selected` scope; the processes of a live run only when included (the step they belong to fails)."""
    chosen = select_targets(holders, "all" if scope == SELECTED else scope, match, gpus)
    if pids is not None:
        wanted = set(pids)
        chosen = [h for h in chosen if h.pid in wanted]
    if include_tracked:
        return Targets(chosen, [])
    return Targets([h for h in chosen if h.cls != "tracked"], [h for h in chosen if h.cls == "tracked"])


def preselect(holders: Iterable[Holder], refused: Mapping[Any, str], key: Callable[[int], Any] = int) -> set[int]:
    """What a kill dialog ticks when it opens: the orphans that may be signalled (`refused` keyed by `key(pid)`:
    this machine's by pid, a node's reading by its JSON key)."""
    return {h.pid for h in select_targets(list(holders)) if key(h.pid) not in refused}


def preselected(found: HolderScan) -> set[int]:
    return preselect(found.holders, found.refused)


def selection_scope(found: HolderScan, pids: Iterable[int]) -> str:
    """`orphans` while the operator kept the preselection, `selected` once they changed it."""
    return "orphans" if set(pids) == preselected(found) else SELECTED


def orphans_left(targets: Iterable[Holder], refused: Iterable[int]) -> list[Holder]:
    """The orphans among a kill's `targets` that it did not signal (`refused` pids): another user's, another
    PID namespace's. Their memory stays held, so the kill did not do its job; the other holders it spares
    (the console, its ancestors, a live job of its terminal) it spares by design, and no orphan is one."""
    targets = list(targets)
    left = set(orphan_pids_left({h.pid: h.cls for h in targets}, refused))
    return [h for h in targets if h.pid in left]


def orphan_pids_left(classes: Mapping[int, str | None], refused: Iterable[int]) -> list[int]:
    """The rule of `orphans_left` on pids and classes alone: a cluster node's kill answers with those
    (ops/nodes.orphans_left_on)."""
    return [pid for pid in refused if classes.get(pid) == "orphan"]


def memory_by_gpu(holders: Iterable[Holder]) -> dict[int, float]:
    out: dict[int, float] = {}
    for h in holders:
        for g, mib in h.used_by_gpu.items():
            out[g] = out.get(g, 0.0) + mib
    return out


def tracked_note(h: Holder) -> str:
    """The second question's subject: `pid 1234 belongs to step 0.3 (running)`."""
    return f"pid {h.pid} belongs to step {h.owner} (running)"


# ---- the kill -------------------------------------------------------------------------------------------------


def kill(found: HolderScan, targets: list[Holder], *, grace: float, scope: str, face: str,
         journal: Journal | None, step_id: str | None = None, run_id: int | None = None,
         sig: int = signal.SIGTERM, progress: Progress | None = None,
         say: Callable[[str], None] | None = None, picked: Iterable[int] = ()) -> KillRecord:
    """Signal `targets` (SIGTERM, grace, SIGKILL), wait for their memory, and journal the record. `picked`:
    the pids the operator chose one by one (root's pick of another user's process; `HolderScan.pickable`).

    Without a journal (the CLI with no plan, a cluster node's agent) the kill happens and is only returned.
    """
    from eagle_console.journal.operator import AGENT_PREFIX, current_operator

    if face not in FACES and not face.startswith(AGENT_PREFIX):  # an agent's kill, once a person approved it
        raise ValueError(f"face must be one of {', '.join(FACES)} or agent:<client>, not {face!r}")
    report = kill_holders(targets, backend=found.backend, grace=grace, sig=sig, progress=progress, say=say,
                          consoles=found.supervisors, explicit=picked)
    record = KillRecord(who=current_operator(), scope=scope, face=face, step_id=step_id, run_id=run_id,
                        killed=report["killed"], survivors=report["survivors"], gone=report["gone"],
                        refused=report["refused"], freed_mib=report["freed_mib"])
    if journal is not None:
        journal_kill(journal, record)
    return record
