"""Which processes are tracked here: the journal's runs (node.procs.tracked_runs), the runs on a cluster
node, and a multi-node server's ranks as tracked runs of its step, on every node (issue 26); and the live
supervisors the journal recorded (never signalled). Every face's GPU reading and kill classifies by these.

A multi-node `sglang.server` run is the ranks service on the console's machine; the journal knows its
session only. Each rank runs in a session of its own on its node (a Ray job's `cluster.rank_session`
wrapper, or the local runner's child), which the service records in `<state>/artifacts/<step>/ranks.json`
with its leader's pid and create time once known (sglang/multinode_run.record_sessions). Without these the
ranks' schedulers were `other` on every node. A rank's session is a TrackedRun of the step's latest run:
tracked while that run is live and the rank's leader runs, orphaned (owner the step) once either ended.

The GPU reading (ops.gpus) and a kill's scan (node.holders.scan) classify this machine's holders with
`tracked_here`, for every face; a node's agent gets its node's runs and rank sessions from
ops.nodes.tracked_on and judges their leaders there (`judged_here`, cluster/agent.py).
"""

from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from eagle_console.node.procs import TrackedRun, tracked_runs
from eagle_console.processes import alive
from eagle_console.statedir import artifacts_root

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Run


@dataclass(frozen=True)
class RankSession:
    node: str
    on_ray: bool  # a Ray job: its pid is its node's; else the local runner's child, a process of this machine
    run: TrackedRun


def rank_sessions(journal: Journal | None) -> list[RankSession]:
    """Every recorded rank session of the journal's multi-node steps (their latest run each); main_alive is
    the run's liveness only: whether the rank's leader runs can only be judged on its node."""
    from eagle_console.sglang.multinode_run import RANKS_FILE, load_ranks

    if journal is None:
        return []
    out: list[RankSession] = []
    for record in sorted(artifacts_root(Path(journal.path).parent).glob(f"*/{RANKS_FILE}")):
        run = journal.latest_run(record.parent.name)
        if run is None:
            continue
        for r in load_ranks(record.parent):
            pid = r.ref.get("pid")
            if not pid:
                continue  # a Ray rank whose wrapper has not reported yet
            out.append(RankSession(r.node, "job_id" in r.ref, TrackedRun(
                step_id=run.step_id, run_id=run.id, sid=int(pid), main_pid=int(pid), main_alive=run.ended is None,
                main_ctime=r.ref.get("ctime"), ended=run.ended)))
    return out


def judged_here(runs: list[TrackedRun]) -> list[TrackedRun]:
    """`runs` with main_alive judged on this machine (their pids are its): a live run whose leader is gone
    leaves its processes orphaned, as node.procs.tracked_runs says of this machine's runs."""
    return [replace(t, main_alive=t.main_alive and alive(t.main_pid, t.main_ctime)) for t in runs]


def tracked_here(journal: Journal | None, here: str | None = None) -> list[TrackedRun]:
    """This machine's tracked runs: the journal's (node.procs.tracked_runs), the runs and rank sessions of
    `here` (the cluster node that is this machine, when known), the local runner's ranks, and any Ray rank
    whose leader runs here (the same pid *and* create time: no other machine's process)."""
    if journal is None:
        return []
    mine = tracked_runs(journal)
    extra = node_runs(journal, here) if here else []
    for s in rank_sessions(journal):
        if not s.on_ray or s.node == here or alive(s.run.main_pid, s.run.main_ctime):
            extra.append(s.run)
    return mine + judged_here(extra)


def node_runs(journal: Journal | None, node: str) -> list[TrackedRun]:
    """The journal's runs on `node` that have a session there (their pids are that node's)."""
    if journal is None:
        return []
    return [TrackedRun(step_id=r.step_id, run_id=r.id, sid=r.sid, main_pid=r.pid, main_alive=r.ended is None,
                       main_ctime=r.pid_ctime, ended=r.ended)
            for r in journal.runs() if r.node == node and r.sid and r.pid]


def journal_supervisors(journal: Journal | None) -> frozenset[int]:
    """The supervisors of the journal's runs that are still alive (same pid *and* create time): an
    eagle-console process even where its command line does not say so."""
    if journal is None:
        return frozenset()
    watch = _SUPERVISORS.get(journal)
    if watch is None:
        watch = _SUPERVISORS[journal] = SupervisorWatch()
    return watch.alive(journal)


class SupervisorWatch:
    """Which runs' supervisors may still be alive, kept across calls on one journal. A supervisor found gone
    (its pid exited, or now another process's: a later create time) never comes back, so each run is
    asked about until then and never after: every holder scan asked /proc about every run of the history
    (22 ms a scan at 12,500 runs, most of the console's idle CPU on a long journal; issue 31)."""

    def __init__(self) -> None:
        self.seen = 0  # runs() in start order: the first `seen` are in `candidates` or known gone
        self.candidates: list[int] = []  # run ids whose supervisor is alive, or not recorded yet

    def alive(self, journal: Journal) -> frozenset[int]:
        runs = journal.runs()
        if len(runs) < self.seen:  # the journal was replaced under us: start again
            self.seen, self.candidates = 0, []
        self.candidates.extend(r.id for r in runs[self.seen:])
        self.seen = len(runs)
        found: set[int] = set()
        keep: list[int] = []
        for run_id in self.candidates:
            run = _find(runs, run_id)
            if run is None:
                continue
            if not run.supervisor_pid:
                if run.ended is None:  # its supervisor not recorded yet (record_proc comes after the start)
                    keep.append(run_id)
                continue
            if alive(run.supervisor_pid, run.supervisor_ctime):
                found.add(run.supervisor_pid)
                keep.append(run_id)
        self.candidates = keep
        return frozenset(found)


def _find(runs: list[Run], run_id: int) -> Run | None:
    """Run `run_id` of `runs`, which is in start order: ids ascending (Journal.run would copy the list)."""
    i = bisect.bisect_left(runs, run_id, key=lambda r: r.id)
    return runs[i] if i < len(runs) and runs[i].id == run_id else None


_SUPERVISORS: weakref.WeakKeyDictionary[Journal, SupervisorWatch] = weakref.WeakKeyDictionary()
