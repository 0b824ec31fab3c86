"""Next, run, mark, note, and what keeps running: the step operations both faces call.

The faces parse input, ask for confirmation and print; every decision (what is next, why nothing is,
whether a step asks to be confirmed, how a wait ended, whether a mark or a note is allowed) is made here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from eagle_console.journal.status import plan_statuses, unmet_needs
from eagle_console.ops.hints import NEUTRAL, Hints

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.journal import Journal, Run, StepState
    from eagle_console.node.liveness import RunProcs
    from eagle_console.plan.model import Plan, Step

RUNNABLE_AGAIN = ("pending", "rolled_back")


# -- next ----------------------------------------------------------------------------------------------------

def next_step(plan: Plan, step_status: Mapping[str, str]) -> Step | None:
    """The first pending (or rolled-back) step whose needs are met, in plan order."""
    statuses = plan_statuses(plan, step_status)
    for step in plan.steps():
        if statuses[step.id] in RUNNABLE_AGAIN and not unmet_needs(plan, step, step_status):
            return step
    return None


@dataclass
class NoNext:
    """Why nothing is next: what failed (with its reason), what runs, what waits on which needs."""

    failed: list[tuple[str, str | None]] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    waiting: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def plan_done(self) -> bool:
        return not (self.failed or self.running or self.waiting)

    def text(self, hints: Hints = NEUTRAL) -> str:
        if self.plan_done:
            return "every step is completed or skipped: the plan is done"
        parts = []
        if self.failed:
            parts.append("failed: " + ", ".join(sid + (f" ({why})" if why else "") for sid, why in self.failed)
                         + f" — fix and run again{hints.run}, or mark it{hints.mark}")
        if self.running:
            parts.append("in progress: " + ", ".join(self.running))
        if self.waiting:
            parts.append("waiting on needs: " + ", ".join(f"{sid} needs {', '.join(unmet)}"
                                                          for sid, unmet in self.waiting))
        return "nothing to run next; " + "; ".join(parts)


def no_next_reason(plan: Plan, step_status: Mapping[str, str], states: Mapping[str, StepState]) -> NoNext:
    """Why `next_step` found nothing (the plan is done, or what blocks the rest)."""
    statuses = plan_statuses(plan, step_status)
    why = NoNext()
    for s in plan.steps():
        if statuses[s.id] == "failed":
            why.failed.append((s.id, states[s.id].reason if s.id in states else None))
        elif statuses[s.id] == "in_progress":
            why.running.append(s.id)
        elif statuses[s.id] in RUNNABLE_AGAIN:
            why.waiting.append((s.id, unmet_needs(plan, s, step_status)))
    return why


class NextChoice(NamedTuple):
    """What `next` found: a step to run, a manual step to do by hand, or nothing (with why)."""

    step: Step | None
    message: str | None = None  # neutral text, set when there is nothing to start
    why: NoNext | None = None  # set when there is no step at all

    @property
    def runnable(self) -> bool:
        return self.step is not None and self.message is None

    @property
    def manual(self) -> bool:
        return self.step is not None and self.step.action is None


def choose_next(engine: Engine, hints: Hints = NEUTRAL) -> NextChoice:
    """Reconcile, then the next step; `message` (with the face's `hints`) when it cannot be started."""
    engine.reconcile()
    step_status = engine.journal.statuses()
    step = next_step(engine.plan, step_status)
    if step is None:
        why = no_next_reason(engine.plan, step_status, engine.journal.states())
        return NextChoice(None, why.text(hints), why)
    if step.action is None:
        return NextChoice(step, f"{step.id} is manual: do it by hand and mark it{hints.mark}")
    return NextChoice(step)


# -- run -----------------------------------------------------------------------------------------------------

class RunRequest(NamedTuple):
    """Before starting: the step (None for a phase or an unknown id: starting refuses with why) and whether
    it asks to be confirmed (`confirm = true`): the face asks, then calls `start_run`."""

    step: Step | None

    @property
    def confirm(self) -> bool:
        return self.step is not None and self.step.action is not None and self.step.confirm

    @property
    def manual(self) -> bool:
        return self.step is not None and self.step.action is None


def run_request(plan: Plan, step_id: str) -> RunRequest:
    return RunRequest(plan.step(step_id))


def check_step(plan: Plan, step_id: str, of_phase: str = "give one of its steps ({steps})") -> Step:
    """The step `step_id`; ValueError (bad input: every face refuses it before doing anything) for a phase,
    saying `of_phase` (with its {steps}), or for an id the plan does not have."""
    step = plan.step(step_id)
    phase = plan.phase(step_id) if step is None else None
    if phase is not None:
        steps = ", ".join(s.id for s in phase.steps) or "none"
        raise ValueError(f"{step_id} is a phase; " + of_phase.format(steps=steps))
    if step is None:
        raise ValueError(unknown_id_text(plan, step_id, "step"))
    return step


def check_runnable(plan: Plan, step_id: str) -> Step:
    """The step to run (`run`, `r`); ValueError for a phase or an unknown id."""
    return check_step(plan, step_id, "run its steps ({steps}), or use next")


def check_target(plan: Plan, target: str) -> None:
    """A rollback's target: ValueError when it names neither a step nor a phase."""
    if plan.step(target) is None and plan.phase(target) is None:
        raise ValueError(unknown_id_text(plan, target, "step or phase"))


def unknown_id_text(plan: Plan, given: str, what: str) -> str:
    """`unknown step '0.7' in plan demo; steps: …` (and the phases, where a phase would do): every command
    words an unknown id alike. The ids are listed, not guessed at: '0.7' is as near 0.4 as 0.1."""
    text = f"unknown {what} {given!r} in plan {plan.id}; steps: {_known_steps(plan)}"
    return text + (f"; phases: {', '.join(p.id for p in plan.phases)}" if "phase" in what else "")


def start_run(engine: Engine, step_id: str, force: bool = False, who: str | None = None) -> int:
    """Start a step under a detached supervisor; its run id. Raises Refused with the engine's reason."""
    return engine.start(step_id, force=force, who=who)


def rerun_text(engine: Engine, step_id: str) -> str | None:
    """`0.2 completed at 14:02; running it again` when the step to start is completed, else None: running a
    done step again is allowed (a check, a benchmark), so each face says it rather than doing it silently.
    A completed service is up, and starting it is refused anyway."""
    step = engine.plan.step(step_id)
    if step is None or step.service:
        return None
    engine.reconcile()
    state = engine.journal.states().get(step_id)
    if state is None or state.status != "completed":
        return None
    return f"{step_id} completed at {clock(state.at)}; running it again"


def clock(at: float) -> str:
    """`14:02` today, `2026-12-03 14:02` on another day."""
    same_day = time.strftime("%Y-%m-%d", time.localtime(at)) == time.strftime("%Y-%m-%d")
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.localtime(at))


def start_step(engine: Engine, step_id: str) -> str:
    """Start a step; returns the line to notify (saying so when the step was completed). Raises Refused
    with the engine's reason."""
    again = rerun_text(engine, step_id)
    run_id = start_run(engine, step_id)
    started = f"started {engine.journal.run_label(run_id)}"  # the CLI's words; no parentheses inside parentheses
    return f"{again}; {started}" if again else started


class RunOutcome(NamedTuple):
    """How a wait ended: a service ready, or the run over with the step's status."""

    run: Run
    status: str  # the step's status now
    ready: bool  # a service that is up (and still running)

    @property
    def ok(self) -> bool:
        return self.ready or self.status == "completed"


def wait_run(engine: Engine, run_id: int, on_tick: Callable[[Run], None] | None = None,
             timeout: float | None = None) -> RunOutcome:
    """Wait until the run ends (a service: until it is ready)."""
    run = engine.wait(run_id, until_ready=True, timeout=timeout, on_tick=on_tick)
    state = engine.journal.states().get(run.step_id)
    ready = bool(run.service and run.ready_at and not run.finished)
    return RunOutcome(run, state.status if state else "pending", ready)


# -- mark, note --------------------------------------------------------------------------------------------

def _known_steps(plan: Plan) -> str:
    return ", ".join(s.id for s in plan.steps())


def check_markable(plan: Plan, step_id: str) -> Step:
    """The step to mark; ValueError for a phase (its status follows its steps) or an unknown id."""
    return check_step(plan, step_id, "a phase's status is derived from its steps — mark its steps ({steps})")


class Marked(NamedTuple):
    step_id: str
    before: str
    status: str
    note: str | None


def mark_step(journal: Journal, plan: Plan, step_id: str, status: str, note: str | None = None) -> Marked:
    """Set a step's status by hand (with an optional note saying why)."""
    check_markable(plan, step_id)
    before = journal.statuses().get(step_id, "pending")
    journal.mark(step_id, status, note=note or None)
    close_forgotten_node_run(journal, plan, step_id, status)
    return Marked(step_id, before, status, note or None)


def close_forgotten_node_run(journal: Journal, plan: Plan, step_id: str, status: str) -> Run | None:
    """A mark closes the step's open node run when the cluster no longer follows it (its job forgotten by a
    restarted head, or failed with its raylet, or its node unreachable): nothing else ever would. Its end
    (`closed`) says why and what may still run on the node; a rollback still stops that there."""
    run = journal.latest_run(step_id)
    if run is None or run.finished or not run.job_id or plan.cluster is None:
        return None
    from eagle_console.engine.runner import Engine

    Engine(plan, journal).reconcile()  # the node's word on the run, in memory (cluster/jobs.NodeNote)
    run = journal.run(run.id)
    if run is None or run.finished or (note := node_note(run)) is None:
        return None  # its job runs and is followed: it ends by itself, or by a rollback
    journal.end_run(run.id, step_id, exit_code=None, outcome="closed",
                    reason=f"closed by the operator's mark ({status}): {note.text}")
    return journal.run(run.id)


def mark(journal: Journal, plan: Plan, step_id: str, status: str, note: str | None) -> str:
    """Mark a step; returns the line the console shows (`0.3: pending → completed`)."""
    m = mark_step(journal, plan, step_id, status, note)
    return f"{m.step_id}: {m.before} → {m.status}" + (" (with a note)" if m.note else "")


def note(journal: Journal, step_id: str, text: str, plan: Plan | None = None) -> str:
    """Add a note to a step or a phase; ValueError when it is empty or (given the plan) names neither."""
    if plan is not None and plan.step(step_id) is None and plan.phase(step_id) is None:
        raise ValueError(unknown_id_text(plan, step_id, "step or phase"))
    text = text.strip()
    if not text:
        raise ValueError("the note is empty")
    journal.note(step_id, text)
    return f"{step_id}: noted"


# -- what keeps running ------------------------------------------------------------------------------------

def running_runs(engine: Engine) -> list[Run]:
    """Runs still going (actions, services, rollbacks): what keeps running after `q`."""
    engine.reconcile()
    return engine.journal.open_runs()


def keep_running_line(runs: list[Run]) -> str | None:
    if not runs:
        return None
    parts = [f"{r.step_id}{' (rollback)' if r.kind == 'rollback' else ''} pid {r.pid or r.supervisor_pid or '?'}"
             for r in runs]
    verb = "run keeps" if len(runs) == 1 else "runs keep"
    return f"{len(runs)} {verb} running: {', '.join(parts)}"


# -- what a run's processes are now (status) ----------------------------------------------------------------

def run_processes(runs: Mapping[str, Run | None]) -> dict[str, RunProcs]:
    """Each step's latest run's processes now (node/liveness.py), in one scan of the processes."""
    from eagle_console.node.liveness import run_procs, still_running_many

    present = {sid: r for sid, r in runs.items() if r is not None}
    still = still_running_many(present.values())
    return {sid: run_procs(r, still.get(r.id, [])) for sid, r in present.items()}


def add_process_keys(doc: dict, procs: Mapping[str, RunProcs], runs: Mapping[str, Run | None]) -> dict:
    """`status --json`: each step's run gains supervisor_pid, supervisor_state (running | stopped | dead, null
    once ended), action_state (running | stopped | exited | gone, null once ended) and still_running (the pids
    of an ended run's session that still run), and host (the machine its supervisor runs on: another
    machine's run, in a state dir shared by several, has both states null here). The spec's keys are left
    as they are."""
    for phase in doc["phases"]:
        for step in phase["steps"]:
            run, p = runs.get(step["id"]), procs.get(step["id"])
            if step["run"] is None or run is None or p is None:
                continue
            step["run"].update(supervisor_pid=run.supervisor_pid, supervisor_state=p.supervisor_state,
                               action_state=p.action_state, still_running=p.still_running, host=run.host)
            if run.job_id:  # a node run: what the console knows beyond the journal (docs/cli.md)
                note = node_note(run)
                step["run"].update(node=run.node, node_unreachable=note is not None and note.state == "unreachable",
                                   node_note=note.text if note else None)
    return doc


def node_note(run: Run):  # -> cluster.jobs.NodeNote | None
    """A node run's in-memory note (its node unreachable: the run unknown; or its job forgotten while its
    supervisor still runs on the node), None for any other run or while unfinished runs need none."""
    if not run.job_id or run.finished:
        return None
    from eagle_console.cluster.jobs import node_note as note_of

    return note_of(run.job_id)


def unknown_text(run: Run) -> str | None:
    """`unknown: … (since HH:MM:SS)` while the run's node or head cannot be asked, else None."""
    note = None if run.finished else node_note(run)
    if note is None or note.state != "unreachable":
        return None
    if " since " in note.text:  # "head unreachable since HH:MM:SS"
        return note.text
    return f"{note.text} (since {time.strftime('%H:%M:%S', time.localtime(note.since))})"


def elsewhere(run: Run) -> bool:
    """An unfinished run whose supervisor is another machine's (a state dir several machines share)."""
    from eagle_console.processes import on_this_host

    return not run.finished and not run.job_id and not on_this_host(run.host)


def held_end_text(run: Run, state_dir: Path) -> str | None:
    """An unfinished run whose action ended but whose end the journal could not take (its disk full): the
    supervisor keeps it in the run's exit slot (journal/exitslot.py) and retries. `ended (exit 1), not
    recorded yet: …`, or None. Before, `status` said "running, pid N" of an action long gone and `run --wait`
    waited without a word, for as long as the disk stayed full."""
    if run.finished or run.job_id or elsewhere(run):
        return None
    import shutil

    from eagle_console.journal import exitslot

    kept = exitslot.read(exitslot.exit_slot(state_dir, run.id))
    if not kept:
        return None
    code = kept.get("exit_code")
    how = f"exit {code}" if code is not None else kept.get("outcome") or "its end"
    try:
        free = shutil.disk_usage(state_dir).free
        full = free < 1 << 20
        disk = f"{free // 1024} KiB free on the disk of {state_dir}" if full else f"journal {state_dir}"
    except OSError:
        disk = f"journal {state_dir}"
    # a supervisor that could not record itself never started the action, and has no pid in the journal
    not_started = str(kept.get("reason") or "").startswith(exitslot.NOT_STARTED)
    what = exitslot.NOT_STARTED if not_started else f"ended ({how})"
    sup = f"its supervisor (pid {run.supervisor_pid})" if run.supervisor_pid else "its supervisor"
    return (f"{what}, not recorded yet: the journal cannot take it ({disk}); {sup} records it once it "
            f"can, retrying every {exitslot.RETRY_S:g} s")


def run_state_text(run: Run, procs: RunProcs, hints: Hints = NEUTRAL, held: str | None = None) -> str:
    """What a step's latest run is doing, for a status line: `running, pid N`; stopped with how to resume it;
    ended but not recorded (`held`: held_end_text); or, once ended, its last exit and the action that outlived
    it, with how to stop that."""
    if run.finished:
        end = f"last exit {run.exit_code}" if run.exit_code is not None else (run.outcome or "ended")
        if not procs.still_running:
            return end if run.exit_code is not None else ""
        pids = ", ".join(map(str, procs.still_running))
        return (f"{end}; its action still runs (pids {pids}, session {run.sid}): stop it with "
                f"`pkill -TERM -s {run.sid}`, or roll the step back{hints.rollback}")
    if elsewhere(run):  # another machine's, or another container's (a `docker run` names each one anew)
        return (f"running on {run.host}, pid {run.pid or run.supervisor_pid or '?'} there (not this machine or "
                f"container: judged, stopped and rolled back there; if {run.host} is gone for good, mark the "
                f"step{hints.mark})")
    if (note := node_note(run)) is not None:
        if (unknown := unknown_text(run)) is not None:
            return unknown
        return note.text  # "its Ray job … is unknown …; still running on node b, supervisor pid N (running)"
    action = {"running": f"the action (pid {run.pid}) runs", "stopped": f"the action (pid {run.pid}) is stopped",
              "exited": f"the action (pid {run.pid}) exited, its end not recorded yet",
              "gone": f"the action (pid {run.pid}) is gone"}.get(procs.action_state or "", "")
    if procs.supervisor_state == "stopped":
        sup = run.supervisor_pid
        return f"stopped: its supervisor pid {sup} is stopped; resume it with `kill -CONT {sup}`" + (
            f"; {action}" if action else "")
    if procs.action_state == "stopped":
        return f"running, pid {run.pid}, stopped: resume it with `kill -CONT {run.pid}`"
    if held and procs.supervisor_state == "running":  # the action ended; its end waits for the journal
        return held
    if procs.action_state == "exited":
        return f"running: {action}"
    return f"running, pid {run.pid or run.supervisor_pid or '?'}"
