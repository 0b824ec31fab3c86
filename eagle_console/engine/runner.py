"""Starting runs, stepping through a plan, waiting, and noticing runs whose supervisor died.

The CLI and the console both call these; neither ever becomes the parent of an action.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle_console.engine.spec import (
    ActionSpec,
    BuiltinCall,
    ReadySpec,
    encode_call,
    kill_grace_s,
    step_log_path,
    write_spec,
)
from eagle_console.journal import EventKind, Journal, Refused, Run, exitslot, heldslot, plan_statuses
from eagle_console.plan.model import Action, Plan, Ready, Step
from eagle_console.processes import alive, on_this_host, seconds_since
from eagle_console.pyenv import builtin_argv, own_process_env
from eagle_console.statedir import artifacts_dir, private_opener, runs_dir

# A run whose supervisor has not reported its pid after this long never started.
SUPERVISOR_START_GRACE_S = 20.0


def age_s(started: float, begun: str | None, now: float) -> float:
    """How long ago a run or rollback began: by the boot clock where its begin recorded it; a step of the
    wall clock (chrony's makestep after a VM resumes) made a run whose supervisor was starting "never
    started", its step failed while the supervisor went on. An older record: by the wall clock."""
    since = seconds_since(begun)
    return since if since is not None else now - started


def action_argv(plan: Plan, step: Step, action: Action, mode: str, run_id: int | None = None,
                force: bool = False, service_run: dict[str, Any] | None = None) -> list[str]:
    """The command a supervisor executes for `action` (a built-in goes through engine.action)."""
    if action.kind == "shell":
        return ["/bin/bash", "-c", action.shell or ""]
    if action.kind == "argv":
        return list(action.argv or ())
    return builtin_argv(encode_call(builtin_call(plan, step, action, mode, run_id, force, service_run)))


def builtin_call(plan: Plan, step: Step, action: Action, mode: str, run_id: int | None = None,
                 force: bool = False, service_run: dict[str, Any] | None = None) -> BuiltinCall:
    """Everything the built-in of `action` needs, resolved now: its process never reads the plan."""
    return BuiltinCall(
        uses=action.uses or "", mode=mode, step_id=step.id, args=dict(action.with_),
        state_dir=str(plan.state_dir), artifacts=str(artifacts_dir(plan.state_dir, step.id)),
        folder=str(plan.folder), baseline=dict(plan.baseline), timeout_s=step.timeout_s, run_id=run_id,
        force=force, service_run=dict(service_run or {}),
    )


def action_env(plan: Plan, step: Step, run_id: int | None = None) -> dict[str, str]:
    """What a run changes in the environment: the plan's `[env]`, the step's `env`, and ours.

    Only these go into the spec (never a copy of os.environ: it would put the operator's secrets in the
    state dir); the supervisor lays them over the environment it inherited from the operator.
    """
    env = {**plan.env, **step.env}
    env["PYTHONUNBUFFERED"] = "1"  # progress lines reach the log as they are printed
    env["EAGLE_CONSOLE_STEP"] = step.id
    if run_id is not None:
        env["EAGLE_CONSOLE_RUN_ID"] = str(run_id)
    if plan.cluster is not None:  # a multi-node built-in reaches its nodes through Ray (sglang/noderunner.py)
        from eagle_console.sglang.noderunner import CLUSTER_ENV, RANK_ENV

        env[CLUSTER_ENV] = plan.cluster.address
        env[RANK_ENV] = ",".join(sorted({**plan.env, **step.env}))
    return env


def launch_supervisor(spec_path: Path) -> None:
    """Start a detached supervisor; returns once it has forked away (the console is not its parent)."""
    log = spec_path.with_suffix(".supervisor.log")
    with open(log, "ab", opener=private_opener) as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "eagle_console.engine.supervise", str(spec_path), "--detach"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env=own_process_env(os.environ),
        )
    proc.wait()


@dataclass
class Engine:
    plan: Plan
    journal: Journal

    # -- looking -------------------------------------------------------------------------------------------

    def reconcile(self) -> list[Run]:
        """Runs whose supervisor died without recording an exit become `lost` (their step failed); so do
        rollbacks. A read-only journal records this in memory only: every reader reconciles, none writes."""
        lost: list[Run] = []
        now = time.time()
        on_nodes: list[Run] = []
        for run in self.journal.open_runs():
            if run.job_id:  # a Ray job on a cluster node: its job says, not a local pid (cluster.jobs)
                on_nodes.append(run)
                continue
            if run.node and age_s(run.started, run.begun, now) <= SUPERVISOR_START_GRACE_S:
                continue  # being submitted
            if not on_this_host(run.host):
                continue  # its supervisor is another machine's (a shared state dir): that machine judges it
            if run.supervisor_pid:
                if alive(run.supervisor_pid, run.supervisor_ctime):
                    continue
                child = "still running" if alive(run.pid, run.pid_ctime) else "gone"
                reason = (f"lost: its supervisor (pid {run.supervisor_pid}) died without recording an exit; "
                          f"the action (pid {run.pid}) is {child}")
            elif age_s(run.started, run.begun, now) > SUPERVISOR_START_GRACE_S:
                reason = "lost: its supervisor never started"
            else:
                continue
            held = self._replay_held(run)  # results, readiness, pids its supervisor could not record
            kept = exitslot.read(exitslot.exit_slot(self.plan.state_dir, run.id))
            if kept is not None:  # its supervisor kept the exit when the journal could not take it
                if held:
                    kept["reason"] = f"{kept['reason']}; {held}" if kept.get("reason") else held
                self.journal.end_run(run.id, run.step_id, **kept)
                continue
            if held:
                reason = f"{reason}; {held}"
            status = "failed" if run.kind == "action" else None
            if self.journal.end_run(run.id, run.step_id, exit_code=None, outcome="lost", reason=reason,
                                    step_status=status):
                lost.append(run)
        for rb in self.journal.open_rollbacks():
            if not on_this_host(rb.host):
                continue
            if rb.supervisor_pid:
                if alive(rb.supervisor_pid, rb.supervisor_ctime):
                    continue
                reason = f"lost: its supervisor (pid {rb.supervisor_pid}) died before the rollback ended"
            elif age_s(rb.started, rb.begun, now) > SUPERVISOR_START_GRACE_S:
                reason = "lost: its supervisor never started"
            else:
                continue
            self.journal.end_rollback(rb.id, rb.target, outcome="lost", reason=reason)
        if on_nodes and self.plan.cluster is not None:
            from eagle_console.cluster.jobs import reconcile_node_runs

            lost += reconcile_node_runs(self.journal, on_nodes, self.plan.cluster.address)
        return lost

    def _replay_held(self, run: Run) -> str | None:
        """Record what the dead supervisor of `run` held in its slot (journal/heldslot.py), each record once;
        returns what the run's reason must add: what was not recorded, or (a read-only reader, which writes
        nothing) what waits in the slot for a reader that can write."""
        from eagle_console.journal.recorder import apply_record

        slot = heldslot.held_slot(self.plan.state_dir, run.id)
        doc = heldslot.read(slot)
        if doc is None:
            return None
        records, unkept = doc.get("held") or [], doc.get("unkept")
        lost = f"not recorded (its supervisor died holding them): {unkept['text']}" if unkept else None
        if self.journal.readonly:
            waiting = f"{heldslot.unkept_text(records)} held in {slot}, recorded by the next console that can write"
            return "; ".join(filter(None, [waiting if records else None, lost]))
        for record in records:
            apply_record(self.journal, run.id, run.step_id, record, held=True)
        return lost

    def statuses(self) -> dict[str, str]:
        return plan_statuses(self.plan, self.journal.statuses())

    def log_path(self, step: Step, run_id: int) -> Path:
        return step_log_path(self.plan, step, run_id)

    def live_service(self, step_id: str) -> Run | None:
        from eagle_console.node.liveness import live_service

        return live_service(self.journal, step_id)

    # -- doing ---------------------------------------------------------------------------------------------

    def start(self, step_id: str, force: bool = False, who: str | None = None) -> int:
        """Start `step_id` under a new supervisor; returns the run id, or raises Refused."""
        self.reconcile()
        step = self.plan.step(step_id)
        if step is None:
            if self.plan.phase(step_id):
                raise Refused(f"{step_id} is a phase: run its steps (or use next)")
            raise Refused(f"no step {step_id!r} in plan {self.plan.id}")
        if step.action is None:
            raise Refused(f"step {step_id} is a manual step (no run or uses): do it by hand and mark it")
        service = step.service  # the loader made a service built-in's step a service
        ready = step.ready or self._default_ready(step)
        if service and (running := self.live_service(step_id)):
            raise Refused(f"step {step_id}'s service is already running (run {running.id}, pid {running.pid}); "
                          "roll it back first")
        self._refuse_second_copy(step_id)
        statuses = self.statuses()
        needs = self.plan.expand_needs(step.needs)
        command = step.action.describe() if step.action.kind != "shell" else (step.action.shell or "")
        run_id = self.journal.begin_run(
            step_id, command=command, log=None, needs=needs, service=service,
            env={**self.plan.env, **step.env}, who=who, force=force,
            needs_status={n: statuses.get(n, "pending") for n in needs},
        )
        log = self.log_path(step, run_id)
        self.journal.append(EventKind.RUN_LOG, step_id, run_id, None, log=str(log))
        spec = ActionSpec(
            run_id=run_id, step_id=step_id, journal=str(self.journal.path), log=str(log),
            argv=action_argv(self.plan, step, step.action, "run", run_id),
            cwd=str(step.cwd or self.plan.folder), env=action_env(self.plan, step, run_id),
            timeout_s=step.timeout_s, grace_s=kill_grace_s(), service=service,
            ready=ReadySpec(ready.http, ready.log, ready.timeout_s) if ready else None,
            check_argv=action_argv(self.plan, step, step.check, "check", run_id) if step.check else None,
        )
        if step.node:
            return self._start_on_node(step, spec)
        spec_path = runs_dir(self.plan.state_dir) / f"{run_id}.json"
        write_spec(spec_path, spec)
        exitslot.reserve(exitslot.exit_slot(self.plan.state_dir, run_id))  # room for the exit on a full disk
        heldslot.reserve(heldslot.held_slot(self.plan.state_dir, run_id))  # and for what comes before it
        launch_supervisor(spec_path)
        return run_id

    def _refuse_second_copy(self, step_id: str) -> None:
        """Refuse while an ended run's action still runs (its supervisor died, `kill -9`): starting the step
        again would run it twice. Its session is found by the recorded sid and leader start time (a reused
        number is never taken for it); `--force` does not get past this — stopping it does."""
        from eagle_console.node.liveness import still_running_many

        ended = [r for r in self.journal.runs(step_id) if r.kind == "action" and r.finished]
        for run_id, pids in still_running_many(ended).items():
            if not pids:
                continue
            run = self.journal.run(run_id)
            assert run is not None
            what = run.reason or run.outcome  # "lost: its supervisor (pid N) died ..."
            raise Refused(f"step {step_id}: the action of {self.journal.run_label(run_id)} ({what}) still runs: "
                          f"pids {', '.join(map(str, pids))} in session {run.sid}; starting the step again would "
                          f"run a second copy. Stop it first with `pkill -TERM -s {run.sid}`, or roll the step "
                          "back (it stops that session)", fix="rollback")

    def _start_on_node(self, step: Step, spec: ActionSpec) -> int:
        """Submit the run's supervisor as a Ray job on `step.node` (docs/cluster.md): no journal there (its
        events come back in the job's log) and it logs into the job's log; the console copies it to `spec.log`."""
        from eagle_console.cluster.jobs import submit_run
        from eagle_console.engine.spec import spec_data

        assert self.plan.cluster is not None and step.node  # the loader refuses `node` without [cluster]
        from eagle_console.cluster.connect import unknown_nodes

        try:
            missing = unknown_nodes(self.plan.cluster.address, [step.node])
        except Exception as exc:  # noqa: BLE001 - unreachable: said as the run's failure below
            missing, why = [step.node], str(exc)
        else:
            why = f"no live raylet has the resource eagle-node:{step.node}"
        if missing:
            self.journal.end_run(spec.run_id, step.id, exit_code=None, outcome="failed",
                                 reason=f"node {step.node}: {why}", step_status="failed")
            raise Refused(f"step {step.id} cannot run on node {step.node}: {why}")
        remote = spec_data(spec)
        remote.update(journal="", log="-")
        self.journal.append(EventKind.RUN_PROC, step.id, spec.run_id, None, node=step.node)
        try:
            job_id = submit_run(self.plan.cluster.address, step.node, spec.run_id, step.id, remote)
        except Exception as exc:  # the cluster unreachable, no such node: the run failed to start, said why
            self.journal.end_run(spec.run_id, step.id, exit_code=None, outcome="failed",
                                 reason=f"could not submit its Ray job to node {step.node}: {exc}",
                                 step_status="failed")
            raise Refused(f"step {step.id}: could not submit its Ray job to node {step.node}: {exc}") from None
        self.journal.record_proc(spec.run_id, step.id, job_id=job_id)
        return spec.run_id

    def _default_ready(self, step: Step) -> Ready | None:
        """A service built-in's own readiness (sglang.server: its /health), for a step without `ready`."""
        from eagle_console.engine.builtins import builtin_class_or_none
        from eagle_console.engine.builtins.base import ActionContext

        cls = builtin_class_or_none(step.uses)
        if cls is None or not cls.service or step.action is None:
            return None  # an unavailable one: the action process says so in the step log
        return cls().default_ready(ActionContext.from_call(builtin_call(self.plan, step, step.action, "run")))

    def wait(self, run_id: int, until_ready: bool = True, timeout: float | None = None,
             on_tick: Callable[[Run], None] | None = None) -> Run:
        """Wait until the run ends (or, for a service, is ready); returns its last state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.reconcile()
            run = self.journal.run(run_id)
            if run is None:
                raise Refused(f"no run {run_id}")
            if on_tick:
                on_tick(run)
            if run.finished or (until_ready and run.service and run.ready_at):
                return run
            if deadline is not None and time.monotonic() > deadline:
                return run
            time.sleep(0.2)
