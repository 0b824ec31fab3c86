"""Rollback: which steps get undone, in which order, and how each is undone.

A phase rolls back its completed steps in reverse order. A step that completed steps depend on is rolled
back only with `cascade` (dependents first). The order is computed here; a detached supervisor carries it
out step by step, journaling each, so a rollback interrupted half-way is resumed by asking again.
"""

from __future__ import annotations

from eagle_console.engine.runner import Engine, action_argv, action_env, launch_supervisor
from eagle_console.engine.spec import RollbackSpec, UndoItem, kill_grace_s, rollback_log_path, write_spec
from eagle_console.journal import Refused
from eagle_console.plan.model import Step
from eagle_console.processes import on_this_host, this_host
from eagle_console.statedir import runs_dir

UNDOABLE = ("completed", "failed", "in_progress")

def _dependents(engine: Engine, step_id: str, statuses: dict[str, str]) -> list[Step]:
    """Completed steps whose needs (directly or through their phase) include `step_id`."""
    phase = engine.plan.phase_of(step_id)
    out = []
    for s in engine.plan.steps():
        if s.id == step_id or statuses.get(s.id) != "completed":
            continue
        needs = engine.plan.expand_needs(s.needs)
        if step_id in needs or (phase and phase.id in s.needs):
            out.append(s)
    return out


def rollback_order(engine: Engine, target: str, cascade: bool = False) -> list[Step]:
    """The steps to undo, in the order they will be undone; raises Refused when it cannot be done."""
    plan = engine.plan
    statuses = engine.statuses()
    order_index = {s.id: i for i, s in enumerate(plan.steps())}
    phase = plan.phase(target)
    if phase:
        chosen = [s for s in phase.steps if statuses[s.id] in UNDOABLE]
        if not chosen:
            raise Refused(f"phase {target} has no completed step to roll back")
    else:
        step = plan.step(target)
        if step is None:
            raise Refused(f"no step or phase {target!r} in plan {plan.id}")
        if statuses[step.id] not in UNDOABLE:
            raise Refused(f"step {target} is {statuses[step.id]}: there is nothing to roll back")
        chosen = [step]
    selected = {s.id: s for s in chosen}
    # Dependents outside the selection: refuse, or (cascade) take them along, transitively.
    frontier = list(chosen)
    while frontier:
        s = frontier.pop()
        for dep in _dependents(engine, s.id, statuses):
            if dep.id in selected:
                continue
            if not cascade:
                raise Refused(f"{dep.id} ({dep.title}) is completed and needs {s.id}: roll it back first",
                              fix="cascade")
            selected[dep.id] = dep
            frontier.append(dep)
    return sorted(selected.values(), key=lambda s: order_index[s.id], reverse=True)


def undo_item(engine: Engine, step: Step, force: bool = False) -> UndoItem:
    """How `step` is undone: its `rollback`, a built-in undo, stopping its service, or a mark only. A step
    with `node` is undone on that node (its undo a Ray job there, cluster/node_undo.py), never here."""
    item = _undo_item(engine, step, force)
    if step.node and item.argv and engine.plan.cluster is not None:
        item.node, item.cluster = step.node, engine.plan.cluster.address
        item.description = f"{item.description} (on node {step.node})"
    return item


def _undo_item(engine: Engine, step: Step, force: bool = False) -> UndoItem:
    plan = engine.plan
    run = engine.journal.latest_run(step.id)
    stop = None
    # A service, or an action still running (an extraction, say), is stopped before it is undone; so is
    # one whose supervisor died (`lost`): its processes may well live on, found by their recorded identity.
    # on a cluster node: its job, or what its supervisor recorded there (a run closed by a mark may still go on)
    if run and run.job_id and (not run.finished or run.outcome in ("lost", "closed")):
        stop = {"run_id": run.id, "job_id": run.job_id, "node": run.node, "lost": run.finished,
                "address": plan.cluster.address if plan.cluster else "auto"}
    elif run and run.sid and (not run.finished or run.outcome == "lost"):
        if not on_this_host(run.host):  # its pids are another machine's: a stop here would hit others
            label = engine.journal.run_label(run.id)
            raise Refused(f"step {step.id}: {label} runs on {run.host}, not on this machine ({this_host()}): "
                          f"roll it back there, or, if {run.host} is gone for good (a container that ended), "
                          "mark the step", fix="mark")
        stop = {"run_id": run.id, "pid": run.pid, "pid_ctime": run.pid_ctime, "pgid": run.pgid, "sid": run.sid,
                "lost": run.finished}
    if step.rollback is not None:
        argv = action_argv(plan, step, step.rollback, "rollback", force=force)
        what = f"rollback: {step.rollback.describe()}"
        return UndoItem(step.id, ("stop it, then " if stop else "") + what, argv, stop)
    if step.action is None:
        return UndoItem(step.id, "manual step: marked rolled back (nothing to execute)", mark_only=True)
    if step.action.kind == "builtin" and step.action.uses:
        from eagle_console.engine.builtins import NotAvailable, builtin_class

        try:
            builtin = builtin_class(step.action.uses)
        except NotAvailable as exc:
            raise Refused(f"step {step.id}: {exc}") from None
        if builtin.has_undo():
            # The call carries the `with` table and the service run as they are now: the undo never
            # reads the plan, so an edit made while the rollback goes on cannot change it.
            argv = action_argv(plan, step, step.action, "undo", force=force, service_run=stop)
            what = f"{step.action.uses} undo"
            return UndoItem(step.id, ("stop the service, then " if stop else "") + what, argv, stop)
        if builtin.service:
            return UndoItem(step.id, f"stop the {step.action.uses} service", None, stop)
        if builtin.undo_marks:
            if stop:  # a wait or a benchmark still going: stopped first, like any running action
                return UndoItem(step.id, f"stop it, then {builtin.undo_marks}", None, stop)
            return UndoItem(step.id, builtin.undo_marks, mark_only=True)
    if stop:  # a service, or an action whose supervisor died (lost) that still runs
        what = "stop the service" if step.service else "stop its action (still running)"
        return UndoItem(step.id, what, None, stop)
    # begun, but its supervisor has not recorded the action's session yet: nothing to stop, nor to mark
    if run and run.kind == "action" and not run.finished:
        raise Refused(f"step {step.id} is starting ({engine.journal.run_label(run.id)}: its action is not "
                      "recorded yet): try again in a moment")
    if force:
        return UndoItem(step.id, "no rollback defined: marked rolled back only (forced)", mark_only=True)
    raise Refused(f"step {step.id} has no `rollback` and no built-in undo: add one to the plan, or mark it by "
                  "hand", fix="force")


def plan_rollback(engine: Engine, target: str, cascade: bool = False, force: bool = False) -> list[UndoItem]:
    """What will be undone, in order (shown in the confirmation before anything happens)."""
    engine.reconcile()
    items = []
    for step in rollback_order(engine, target, cascade):
        item = undo_item(engine, step, force)
        item.env = action_env(engine.plan, step)
        items.append(item)
    return items


def start_rollback(engine: Engine, target: str, cascade: bool = False, force: bool = False,
                   who: str | None = None) -> tuple[int, list[UndoItem]]:
    items = plan_rollback(engine, target, cascade, force)
    plan = engine.plan
    # The claim: refused while a run of one of these steps is starting or going on and not stopped by it.
    stops = {i.step_id: int(i.stop["run_id"]) for i in items if i.stop}
    rollback_id = engine.journal.begin_rollback(target, [i.step_id for i in items], stops, who, cascade=cascade,
                                                force=force)
    log = rollback_log_path(plan, rollback_id)
    spec = RollbackSpec(rollback_id=rollback_id, target=target, journal=str(engine.journal.path), log=str(log),
                        cwd=str(plan.folder), env={**items[0].env} if items and items[0].env else {},
                        items=items, grace_s=kill_grace_s())
    spec_path = runs_dir(plan.state_dir) / f"rollback-{rollback_id}.json"
    write_spec(spec_path, spec)
    launch_supervisor(spec_path)
    return rollback_id, items


def rollback_outcome(engine: Engine, rollback_id: int) -> dict | None:
    """The `rollback_end` event's data once the rollback finished (or was found lost), else None."""
    return engine.journal.rollback_end(rollback_id)
