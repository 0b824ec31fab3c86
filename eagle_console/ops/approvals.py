"""Approvals: what an agent may not start on its own, asked of a person, decided once, carried out once.

An agent (`eagle-console mcp`) asks to run a step, roll back or kill orphans; when the plan or the built-in
marks that as needing a person (`needs_run_approval`, `needs_rollback_approval`, every kill), nothing starts:
the request waits in the journal as `awaiting_approval`, every open console shows it, and whoever decides (a
console's `a`, `eagle-console approve PLAN RUN`) carries it out in their own process — as the agent's act,
recorded with the agent's face, the decision beside it with the person's. The agent's wait only reads the
journal: its server may die meanwhile and the approval still starts the run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.journal import Refused
from eagle_console.journal.approvals import APPROVED, AWAITING, Approval
from eagle_console.ops.hints import NEUTRAL, Hints, refusal_text

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.engine.spec import UndoItem
    from eagle_console.journal import Journal
    from eagle_console.node.procs import Holder
    from eagle_console.ops.orphans import HolderScan
    from eagle_console.plan.model import Plan, Step

PREVIEW_MAX = 20  # lines of a request's preview (the undo order, the processes to signal)


# -- what needs a person ---------------------------------------------------------------------------------------

def run_reasons(step: Step) -> list[str]:
    """Why an agent's run of `step` waits for approval (empty: it does not)."""
    from eagle_console.engine.builtins import builtin_class_or_none

    reasons = []
    if step.approve:
        reasons.append("the plan asks for approval (approve = true)")
    cls = builtin_class_or_none(step.uses)
    if step.service:
        reasons.append(f"it starts a service that stays up on the node ({step.uses or 'service = true'})")
    if step.confirm:
        reasons.append(f"{step.uses} signals processes on the GPUs" if cls is not None and cls.confirm
                       else "the plan asks to confirm it (confirm = true)")
    return reasons


def rollback_reasons(plan: Plan, items: list[UndoItem]) -> list[str]:
    """Why an agent's rollback waits: it stops a service, or undoes a step the plan wants approved."""
    reasons = []
    for item in items:
        step = plan.step(item.step_id)
        if item.stop or (step is not None and step.service):
            reasons.append(f"it stops the service of {item.step_id}")
        elif step is not None and step.approve:
            reasons.append(f"it undoes {item.step_id}, which the plan asks to approve (approve = true)")
    return reasons


KILL_REASON = "it signals GPU processes (as K does)"


# -- asking -----------------------------------------------------------------------------------------------------

def ask_run(engine: Engine, step_id: str, force: bool = False) -> Approval:
    """Record the request to run `step_id` (or give the one already waiting); Refused for what could never
    start (no such step, a phase, a manual step)."""
    step = engine.plan.step(step_id)
    if step is None or step.action is None:
        raise Refused(_not_runnable(engine.plan, step_id, step))
    reasons = run_reasons(step)
    return _ask(engine.journal, "run", step_id, summary=f"run {step.id} — {step.title} ({step.action.describe()})",
                reasons=reasons, params={"force": force}, preview=[])


def _not_runnable(plan: Plan, step_id: str, step: Step | None) -> str:
    if step is not None:
        return f"step {step_id} is a manual step (no run or uses): do it by hand and mark it"
    if plan.phase(step_id) is not None:
        return f"{step_id} is a phase: run its steps (or use next)"
    return f"no step {step_id!r} in plan {plan.id}"


def ask_rollback(engine: Engine, target: str, items: list[UndoItem], cascade: bool, force: bool) -> Approval:
    preview = [f"{n}. {i.step_id}: {i.description}" for n, i in enumerate(items, 1)]
    return _ask(engine.journal, "rollback", target, summary=f"roll back {target} ({len(items)} step(s))",
                reasons=rollback_reasons(engine.plan, items), params={"cascade": cascade, "force": force},
                preview=preview)


def ask_kill(journal: Journal, found: HolderScan, grace: float) -> Approval:
    """Ask to kill the orphans `found` preselects (what K would tick), each named by pid and start time."""
    from eagle_console.ops import orphans

    targets = [h for h in orphans.choose(found) if h.pid not in found.refused]
    mib = sum(h.used_mib or 0.0 for h in targets)
    preview = [f"pid {h.pid} gpus {','.join(map(str, h.gpus)) or '-'} {h.used_mib or 0:.0f} MiB {h.command[:80]}"
               for h in targets]
    params = {"pids": [[h.pid, _start(h)] for h in targets], "grace": grace}
    return _ask(journal, "kill", None, summary=f"kill {len(targets)} orphan(s) holding {mib:.0f} MiB",
                reasons=[KILL_REASON], params=params, preview=preview)


def _ask(journal: Journal, action: str, target: str | None, *, summary: str, reasons: list[str],
         params: dict[str, Any], preview: list[str]) -> Approval:
    cut = preview[:PREVIEW_MAX] + ([f"… {len(preview) - PREVIEW_MAX} more"] if len(preview) > PREVIEW_MAX else [])
    request_id, _new = journal.ask_approval(action, target, summary=summary, reasons=reasons, params=params,
                                            preview=cut)
    found = journal.approval(request_id)
    assert found is not None
    return found


# -- deciding and carrying out ------------------------------------------------------------------------------------

def decide(engine: Engine, request_id: int, approve: bool, note: str | None = None,
           sim_dir: Path | None = None) -> Approval:
    """Approve (and carry out) or deny a request, once; Refused when somebody decided it first. What the
    approval starts is recorded as the asker's act (`Journal.acting_as`); its outcome, or why it could not
    start, in `approval_done`."""
    journal = engine.journal
    journal.decide_approval(request_id, approve, note)
    req = journal.approval(request_id)
    assert req is not None
    if not approve:
        return req
    with journal.acting_as(req.asked_by, req.asked_face):
        try:
            outcome = carry_out(engine, req, sim_dir)
        except Refused as exc:
            outcome = {"error": refusal_text(exc)}
        except Exception as exc:  # noqa: BLE001 - said in the request's outcome, never lost
            outcome = {"error": f"{type(exc).__name__}: {exc}"}
    journal.approval_done(request_id, req.target, **outcome)
    done = journal.approval(request_id)
    assert done is not None
    return done


def carry_out(engine: Engine, req: Approval, sim_dir: Path | None) -> dict[str, Any]:
    """Start what `req` asked for, now; its outcome for `approval_done`. Raises Refused as the direct call would."""
    from eagle_console.ops import rollback, steps

    if req.action == "run":
        run_id = steps.start_run(engine, req.target or "", force=bool(req.params.get("force")))
        return {"run_id": run_id}
    if req.action == "rollback":
        started = rollback.start(engine, req.target or "", cascade=bool(req.params.get("cascade")),
                                 force=bool(req.params.get("force")))
        return {"rollback_id": started.rollback_id, "log": str(started.log)}
    if req.action == "kill":
        return {"kill": kill_requested(engine.journal, req, sim_dir)}
    raise Refused(f"request {req.id}: unknown action {req.action!r}")


def _start(h: Holder) -> str | None:
    """What names the holder across the wait for an approval: its pid and start (a clock step between the
    ask and the approval must not make the same orphans look like other processes)."""
    from eagle_console.processes import stamp

    return stamp(h.start_ticks) if h.start_ticks is not None else None


def kill_requested(journal: Journal, req: Approval, sim_dir: Path | None) -> dict[str, Any]:
    """Kill the processes the request named that are still the same processes (pid and start time) and still
    orphans now; the kill is journaled as any K is, with the asker's face."""
    from eagle_console.ops import orphans

    asked = {(int(pid), ctime) for pid, ctime in req.params.get("pids") or []}
    with orphans.scan(sim_dir, journal) as found:
        targets = [h for h in orphans.choose(found) if h.pid not in found.refused
                   and (h.pid, _start(h)) in asked]
        record = orphans.kill(found, targets, grace=float(req.params.get("grace") or 10.0), scope="orphans",
                              face=req.asked_face or "console", journal=journal)
    gone = sorted({pid for pid, _ in asked} - {h.pid for h in targets})
    return {**record.data(), "no_longer_orphans": gone}


def wait_settled(journal: Journal, request_id: int, timeout_s: float, poll_s: float = 0.2) -> Approval:
    """The request once it is settled (denied, or approved and carried out), or as it stands after `timeout_s`
    (still awaiting approval: ask again later). Reads the journal; writes only to settle a request whose
    approver died before it said what the approval started (settle_if_approver_gone)."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        req = journal.approval(request_id)
        if req is None:
            raise Refused(f"no request {request_id} in this journal")
        req = settle_if_approver_gone(journal, req)
        if req.settled or time.monotonic() >= deadline:
            return req
        time.sleep(poll_s)


def approver_gone(req: Approval) -> bool:
    """Approved, its outcome never recorded, and the process that approved it (on this host) is gone: it died
    while carrying it out (a console closed by force, `approve` killed). Nobody else will record the outcome:
    without this, an agent waiting on it would be told "approved" with nothing started, for ever."""
    import socket

    from eagle_console.processes import alive

    return (req.status == APPROVED and req.outcome is None and req.decided_pid is not None
            and req.decided_host == socket.gethostname() and not alive(req.decided_pid, req.decided_ctime))


def settle_if_approver_gone(journal: Journal, req: Approval) -> Approval:
    """Record, once, that `req`'s approver died before recording what it started, with what the journal shows
    it did start (a run of the step, the agent's, begun after the approval); `req` unchanged otherwise."""
    if not approver_gone(req):
        return req
    started: dict[str, Any] = {}
    if req.action == "run":
        runs = [r for r in journal.runs(req.target) if r.kind == "action"
                and r.started >= (req.decided_at or 0.0) and r.face == req.asked_face] if req.target else []
        started = {"run_id": runs[-1].id} if runs else {}
        what = f"run {runs[-1].id} had started" if runs else f"no run of {req.target} began after it"
    elif req.action == "kill":
        what = "it may have signalled some of the processes (see orphans)"
    else:
        what = "a rollback it began may still be open (see status)"
    error = (f"the process that approved it (pid {req.decided_pid}, {req.decider()}) ended before it recorded "
             f"what the approval started: {what}; ask again if it is still wanted")
    if not journal.readonly:
        journal.approval_done(req.id, req.target, error=error, approver_gone=req.decided_pid, **started)
        return journal.approval(req.id) or req
    return req._replace(outcome={"error": error, "approver_gone": req.decided_pid, **started})


def open_requests(journal: Journal) -> list[Approval]:
    return [a for a in journal.approvals() if a.status == AWAITING]


def request_text(req: Approval, hints: Hints = NEUTRAL) -> str:
    """`request 42: alice via agent:claude asks to run 0.1 — …; why: …` (the line a console notifies)."""
    why = "; ".join(req.reasons)
    return (f"request {req.id}: {req.asker()} asks to {req.summary}" + (f" — {why}" if why else "")
            + f": approve or deny it{hints.approve}")


def outcome_text(req: Approval) -> str:
    """What became of a request, in one line: for the face that decided it and for the agent's reply."""
    if req.open:
        return f"request {req.id} is still {AWAITING.replace('_', ' ')} (asked by {req.asker()})"
    head = f"request {req.id} ({req.summary}) {req.decision_text()}"
    out = req.outcome or {}
    if req.status == "denied":
        return head + "; nothing was started"
    if "approver_gone" in out:
        return f"{head}; but {out['error']}"
    if "error" in out:
        return f"{head}; it could not start: {out['error']}"
    if "run_id" in out:
        return f"{head}; started run {out['run_id']}"
    if "rollback_id" in out:
        return f"{head}; started rollback {out['rollback_id']}"
    if "kill" in out:
        k = out["kill"]
        return f"{head}; killed {k.get('killed')}, survivors {k.get('survivors')}, freed MiB {k.get('freed_mib')}"
    return head
