"""The kill plan, once for the faces (`K`, `orphans --kill`, the confirmation of a gpu.kill step): what a
kill would signal now, what it sets aside or never signals and why, and the question and preview a face
shows. The scan, the choice and the kill itself are node/holders.py's (a gpu.kill step and a cluster node's
agent run them too); every kill is journaled as one `KillRecord` (journal/kills.py), whichever face did it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.journal.kills import KILL_EVENT as KILL_EVENT
from eagle_console.journal.kills import KillRecord as KillRecord
from eagle_console.journal.kills import freed_text as freed_text
from eagle_console.journal.kills import journal_kill as journal_kill
from eagle_console.journal.kills import kill_summary as kill_summary
from eagle_console.node.grace import GraceError as GraceError
from eagle_console.node.grace import resolve_grace as resolve_grace
from eagle_console.node.holders import SELECTED as SELECTED
from eagle_console.node.holders import HolderScan as HolderScan
from eagle_console.node.holders import KillArgs, targets
from eagle_console.node.holders import choose as choose
from eagle_console.node.holders import kill as kill
from eagle_console.node.holders import memory_by_gpu as memory_by_gpu
from eagle_console.node.holders import orphans_left as orphans_left
from eagle_console.node.holders import preselect as preselect
from eagle_console.node.holders import preselected as preselected
from eagle_console.node.holders import scan as scan
from eagle_console.node.holders import selection_scope as selection_scope
from eagle_console.node.holders import tracked_note as tracked_note
from eagle_console.node.tracked import journal_supervisors as journal_supervisors
from eagle_console.ops.hints import NEUTRAL, Hints

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.node.procs import Holder


@dataclass
class KillPlan:
    """What a kill in `scope` does to this machine's holders as scanned: `targets` are signalled (the
    never-signal rules apply again as it does: their refusals are reported), `tracked` are a live run's,
    set aside unless the face included them, `refused` says why each holder is never signalled."""

    scope: str
    match: tuple[str, ...]
    gpus: list[int] | None
    targets: list[Holder]
    tracked: list[Holder]
    refused: dict[int, str]
    pickable: frozenset[int] = frozenset()  # refused, but root may pick them (HolderScan.pickable)
    picked: tuple[int, ...] = ()  # the operator's own pick, by pid: root's pick lifts `pickable` refusals

    def not_signalled(self, hints: Hints = NEUTRAL) -> dict[int, str]:
        """pid -> why it is not signalled: a live run's process (with the face's way to include it), or a
        refusal (with the face's way for root to pick it, where root may)."""
        aside = {h.pid: f"tracked by step {h.owner}{hints.include_tracked}" for h in self.tracked}
        refused = {pid: why + (hints.pick.format(pid=pid) if pid in self.pickable else "")
                   for pid, why in self.refused.items()}
        return {**aside, **refused}

    @property
    def signalled(self) -> list[Holder]:
        """The targets the kill will signal (those it refuses are left out)."""
        return [h for h in self.targets if h.pid not in self.refused]

    @property
    def left(self) -> list[Holder]:
        """The orphans in scope the kill will not signal: it leaves their memory held."""
        return orphans_left(self.targets, self.refused)

    def question(self) -> str:
        """`send SIGTERM to 2 orphan(s) (123 456)?`: what a face asks before it kills. It names only those it
        will signal (another user's orphan was counted in, and then not signalled)."""
        what = "orphan(s)" if self.scope == "orphans" else "process(es)"
        signalled, left = self.signalled, [h for h in self.targets if h.pid in self.refused]
        rest = f" ({len(left)} more not signalled, said above)" if left else ""
        return f"send SIGTERM to {len(signalled)} {what} ({' '.join(str(h.pid) for h in signalled)}){rest}?"

    def preview(self, grace: str, command: Any = None) -> list[str]:
        """The kill described before it runs: its scope and grace, each process it signals with its memory,
        what that frees, and each one in scope it never signals. `command(h)` says a holder's command."""
        show = command or (lambda h: h.command[:40])
        lines = [f"scope {self.scope}" + (f" (match {', '.join(self.match)})" if self.match else "")
                 + (f" on GPUs {self.gpus}" if self.gpus else "") + f" · grace {grace}"]
        signalled = self.signalled
        if not signalled:
            lines.append("nothing to signal now: no GPU holder in scope")
        for h in signalled:
            mib = ", ".join(f"GPU {g} {m:.0f} MiB" for g, m in sorted(h.used_by_gpu.items())) or "fd only"
            lines.append(f"SIGTERM {h.pid} {h.cls} · {mib} · {show(h)}")
        freed = memory_by_gpu(signalled)
        if freed:
            lines.append("frees " + ", ".join(f"GPU {g} {m:.0f} MiB" for g, m in sorted(freed.items()))
                         + f"; SIGKILL to survivors after {grace}")
        for h in self.targets + self.tracked:
            if h.pid in self.refused:
                lines.append(f"not signalled {h.pid}: {self.refused[h.pid]}")
        if left := self.left:  # said before the step runs, not only when it has failed
            lines.append(f"so the step will fail: {len(left)} orphan(s) in scope will still hold GPU memory "
                         f"({' '.join(str(h.pid) for h in left)})")
        return lines


def plan_kill(found: HolderScan, scope: str = "orphans", match: Iterable[str] = (),
              gpus: Iterable[int] | None = None, include_tracked: bool = True,
              pids: Iterable[int] | None = None) -> KillPlan:
    """The plan of a kill in `scope` over `found` (`orphans --kill` sets a live run's processes aside unless
    told to include them; a gpu.kill step and its preview include them, as the step's kill does). `pids`:
    the operator's pick instead of a scope, which as root may take another user's processes."""
    picked = tuple(pids) if pids is not None else ()
    if pids is not None:
        scope = SELECTED
    chosen = targets(found.holders, scope, match, gpus, pids=pids, include_tracked=include_tracked)
    lifted = set(picked) & found.pickable  # root's own pick of another user's process
    refused = {pid: why for pid, why in found.refused.items() if pid not in lifted}
    return KillPlan(scope, tuple(match), list(gpus) if gpus is not None else None, chosen.chosen, chosen.tracked,
                    refused, found.pickable, picked)


def kill_preview(args: Mapping[str, Any], sim_dir: Path | None, journal: Journal, command: Any = None) -> str:
    """What a gpu.kill step with `with` table `args` would do now (its confirmation shows it)."""
    request = KillArgs.as_given(args)
    try:
        grace = f"{resolve_grace(request.grace, '`grace`'):g}s"
    except GraceError as exc:
        grace = f"? ({exc})"
    with scan(sim_dir, journal) as found:
        plan = plan_kill(found, request.scope, request.match, request.gpus)
    return "\n".join(plan.preview(grace, command))
