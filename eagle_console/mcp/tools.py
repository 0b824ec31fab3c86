"""What each of the agent's tools does: a call into `eagle_console.ops` (or the core the CLI's command calls),
answered with the document the CLI's `--json` prints, as a dict. No MCP SDK here (server.py wraps these) and
no Textual: tests call them in process too.

Every answer goes through `bounds.Redactor` (no `[env]` value) and `bounds.bound` (size); every failure is a
`ToolFailure` with a code and a message — the server turns it into a structured error, never a traceback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.journal.operator import agent_face
from eagle_console.mcp import bounds
from eagle_console.ops.hints import Hints

if TYPE_CHECKING:
    from eagle_console.engine.runner import Engine
    from eagle_console.journal import Journal, Run
    from eagle_console.journal.approvals import Approval
    from eagle_console.plan.model import Plan, Step

# How the agent names its controls in texts from ops (the CLI names flags, the console keys).
AGENT_HINTS = Hints(run=" (run_step)", mark=" (mark_step)", cascade=", or pass cascade=true",
                    force=", or pass force=true to mark it rolled back without undoing anything",
                    rollback=" (rollback)", approve=" (a person: a console's a key, or eagle-console approve)")
MAX_WAIT_S = 600.0  # one call waits at most this long (a run, a decision); call again to wait on
DEFAULT_APPROVAL_WAIT_S = 30.0
EVENTS_MAX = 100


class ToolFailure(Exception):
    """A tool's structured error: `code` (bad_input, not_found, refused, outside, bad_plan, journal,
    unavailable, internal), a message, and data (the known labels of a refused todo list, ...)."""

    def __init__(self, code: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.data = data

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": str(self), **self.data}}


def _wait(seconds: float | None, default: float) -> float:
    value = default if seconds is None else float(seconds)
    if value != value or value < 0:  # NaN or negative
        raise ToolFailure("bad_input", f"a wait must be 0 to {MAX_WAIT_S:g} seconds, not {seconds!r}")
    return min(value, MAX_WAIT_S)


class AgentTools:
    """The plan an agent works on: its journal (the agent's face on what it writes), the GPUs it reads
    (`sim_dir`: a simulated node), and whether its risky calls wait for a person (`approvals`)."""

    def __init__(self, plan_path: Path, state_dir: Path | None = None, sim_dir: Path | None = None,
                 approvals: bool = True) -> None:
        self.plan_path = Path(plan_path).resolve()
        self.state_dir = state_dir
        self.sim_dir = sim_dir
        self.approvals = approvals
        self.face = agent_face(None)
        self._lock = threading.Lock()
        self._plan: Plan | None = None
        self._stamp: Any = None
        self._journal: Journal | None = None
        self._load()

    # -- the plan, the journal, the engine ---------------------------------------------------------------------

    def set_client(self, name: str | None) -> None:
        """The client's name from MCP's initialize: what the journal records as `agent:<name>`."""
        face = agent_face(name)
        if face != self.face:
            self.face = face
            if self._journal is not None:
                self._journal.face = face

    def _load(self) -> Plan:
        """The plan, read again when its file changed (the last good one kept, as the console does, with
        the error said)."""
        from eagle_console.plan.loader import PlanError, load_plan

        with self._lock:
            now = _stamp(self.plan_path)
            if self._plan is None or now != self._stamp:
                try:
                    plan = load_plan(self.plan_path, state_dir=self.state_dir)
                except PlanError as exc:
                    if self._plan is None:
                        raise ToolFailure("bad_plan", exc.format_first()) from None
                    raise ToolFailure("bad_plan", f"the plan file no longer loads: {exc.format_first()}; fix it "
                                      "(nothing was done)") from None
                if self._journal is not None and plan.state_dir != self._plan.state_dir:  # type: ignore[union-attr]
                    self._journal.close()
                    self._journal = None
                self._plan, self._stamp = plan, now
            if self._journal is None:
                from eagle_console.journal import Journal

                self._journal = Journal.for_plan(self._plan, face=self.face)
            return self._plan

    @property
    def plan(self) -> Plan:
        return self._load()

    @property
    def journal(self) -> Journal:
        self._load()
        assert self._journal is not None
        return self._journal

    def engine(self) -> Engine:
        from eagle_console.engine.runner import Engine

        return Engine(self.plan, self.journal)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()

    # -- answering -------------------------------------------------------------------------------------------------

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, bool]:
        """Run a tool: (its answer, False), or (a structured error, True). Redacted and bounded either way."""
        from eagle_console.journal import Refused
        from eagle_console.journal.faults import JournalError
        from eagle_console.ops.hints import refusal_text
        from eagle_console.ops.todowrite import TodoRefused

        failed = True
        try:
            doc, failed = fn(*args, **kwargs), False
        except ToolFailure as exc:
            doc = exc.to_json()
        except Refused as exc:
            doc = ToolFailure("refused", refusal_text(exc, AGENT_HINTS)).to_json()
        except TodoRefused as exc:
            doc = ToolFailure("bad_input", str(exc), unknown=exc.unknown, known=exc.known).to_json()
        except bounds.Outside as exc:
            doc = ToolFailure("outside", str(exc)).to_json()
        except JournalError as exc:
            doc = ToolFailure("journal", str(exc)).to_json()
        except (FileNotFoundError, NotADirectoryError) as exc:
            doc = ToolFailure("not_found", f"{exc.filename or exc}: not found").to_json()
        except (ValueError, TypeError, KeyError) as exc:
            doc = ToolFailure("bad_input", str(exc)).to_json()
        except Exception as exc:  # noqa: BLE001 - a tool never answers with a traceback
            doc = ToolFailure("internal", f"{type(exc).__name__}: {exc}").to_json()
        try:
            redactor = bounds.Redactor.for_plan(self.plan)
        except ToolFailure:
            redactor = bounds.Redactor([])
        out, cut = bounds.bound(redactor.doc(doc))
        if cut and isinstance(out, dict) and "error" not in out:
            out["truncated"] = True
        return out, failed

    # -- plan and next -----------------------------------------------------------------------------------------------

    def plan_status(self) -> dict[str, Any]:
        """`status --json` (who changed each step, through which face; requests awaiting approval) and what
        is next, or why nothing is."""
        from eagle_console.ops import faces, steps
        from eagle_console.ops.export import status_document

        engine = self.engine()
        choice = steps.choose_next(engine, AGENT_HINTS)  # reconciles first
        journal = engine.journal
        runs = {s.id: journal.latest_run(s.id) for s in engine.plan.steps()}
        procs = steps.run_processes(runs)
        doc = steps.add_process_keys(status_document(engine.plan, journal.statuses(), runs), procs, runs)
        faces.add_approval_keys(faces.add_face_keys(doc, journal.states()), journal.approvals())
        if choice.step is None:
            doc["next"] = {"step": None, "why": choice.message}
        else:
            doc["next"] = {"step": choice.step.id, "title": choice.step.title, "manual": choice.manual,
                           "why": choice.message, "needs_approval": self._run_reasons(choice.step)}
        return doc

    def _run_reasons(self, step: Step) -> list[str]:
        from eagle_console.ops.approvals import run_reasons

        return run_reasons(step) if self.approvals and step.action is not None else []

    # -- runs ----------------------------------------------------------------------------------------------------------

    def run_step(self, step: str, force: bool = False, wait_s: float | None = None) -> dict[str, Any]:
        """Start a step; one that needs a person waits as a request (up to `wait_s`) instead."""
        from eagle_console.ops import approvals, steps

        engine = self.engine()
        found = engine.plan.step(step)
        if found is not None and found.action is not None and self._run_reasons(found):
            precheck_run(engine, found, force)
            req = approvals.ask_run(engine, step, force)
            return self._approval_reply(approvals.wait_settled(engine.journal, req.id,
                                                               _wait(wait_s, DEFAULT_APPROVAL_WAIT_S)))
        run_id = steps.start_run(engine, step, force=force)
        return {"started": True, "run": run_json(engine.journal, run_id)}

    def run_next(self, wait_s: float | None = None) -> dict[str, Any]:
        from eagle_console.ops import steps

        choice = steps.choose_next(self.engine(), AGENT_HINTS)
        if choice.step is None or not choice.runnable:
            raise ToolFailure("refused", choice.message or "nothing to run next")
        return {"step": choice.step.id, **self.run_step(choice.step.id, wait_s=wait_s)}

    def wait_run(self, run_id: int, timeout_s: float | None = None) -> dict[str, Any]:
        """Wait until the run ends (a service: until it is ready), at most `timeout_s`."""
        from eagle_console.ops import steps

        engine = self.engine()
        if engine.journal.run(int(run_id)) is None:
            raise ToolFailure("not_found", f"no run {run_id} in this plan's journal")
        t0 = time.monotonic()
        outcome = steps.wait_run(engine, int(run_id), timeout=_wait(timeout_s, 60.0))
        run = outcome.run
        return {"run": run_json(engine.journal, run.id), "status": outcome.status, "ready": outcome.ready,
                "ok": outcome.ok, "finished": run.finished, "waited_s": round(time.monotonic() - t0, 1),
                "still_going": not run.finished and not outcome.ready}

    def approval_status(self, request_id: int, wait_s: float | None = None) -> dict[str, Any]:
        """A request's state: awaiting approval, denied (by whom), or approved and what it started."""
        from eagle_console.ops import approvals

        return self._approval_reply(approvals.wait_settled(self.journal, int(request_id), _wait(wait_s, 0.0)))

    def _approval_reply(self, req: Approval) -> dict[str, Any]:
        from eagle_console.ops.approvals import outcome_text

        out: dict[str, Any] = {"status": req.status, "message": outcome_text(req), "approval": req.to_json()}
        if req.open:
            out["message"] += (f"; nothing started yet — call approval_status(request_id={req.id}, wait_s=...) "
                               "to wait for the decision")
        outcome = req.outcome or {}
        if "run_id" in outcome:
            out["run"] = run_json(self.journal, int(outcome["run_id"]))
        out["started"] = bool({"run_id", "rollback_id", "kill"} & set(outcome))
        return out

    # -- mark, note, todo ----------------------------------------------------------------------------------------------

    def mark_step(self, step: str, status: str, note: str | None = None) -> dict[str, Any]:
        from eagle_console.ops import steps

        plan = self.plan
        steps.check_markable(plan, step)
        m = steps.mark_step(self.journal, plan, step, status, note=note)
        return {"step": m.step_id, "before": m.before, "status": m.status, "note": m.note, "face": self.face}

    def note(self, step: str, text: str) -> dict[str, Any]:
        from eagle_console.ops import steps

        return {"message": steps.note(self.journal, step, text, plan=self.plan), "face": self.face}

    def todo_list(self) -> dict[str, Any]:
        from eagle_console.ops.export import todowrite

        return {"todos": todowrite(self.plan, self.journal.statuses())}

    def todowrite(self, todos: list[Any], note: str | None = None) -> dict[str, Any]:
        from eagle_console.ops.todowrite import apply_todos

        return apply_todos(self.journal, self.plan, todos, note).to_json()

    # -- rollback --------------------------------------------------------------------------------------------------------

    def rollback_preview(self, target: str) -> dict[str, Any]:
        """What a rollback would undo, plain and with its dependents (cascade), and whether it needs approval."""
        from eagle_console.ops import approvals, rollback

        engine = self.engine()
        choice = rollback.plan_rollback_choice(engine, target, AGENT_HINTS)

        def items(xs: list) -> list[dict[str, str]]:
            return [{"step": i.step_id, "undo": i.description} for i in xs]

        return {"target": target, "items": items(choice.items), "refused": choice.refused,
                "cascade_items": items(choice.cascade_items), "cascade_refused": choice.cascade_refused,
                "needs_approval": approvals.rollback_reasons(engine.plan, choice.items or choice.cascade_items)
                if self.approvals else []}

    def rollback(self, target: str, cascade: bool = False, force: bool = False,
                 wait_s: float | None = None) -> dict[str, Any]:
        from eagle_console.ops import approvals, rollback

        engine = self.engine()
        items = rollback.plan(engine, target, cascade, force)
        if self.approvals and approvals.rollback_reasons(engine.plan, items):
            req = approvals.ask_rollback(engine, target, items, cascade, force)
            return self._approval_reply(approvals.wait_settled(engine.journal, req.id,
                                                               _wait(wait_s, DEFAULT_APPROVAL_WAIT_S)))
        started = rollback.start(engine, target, cascade, force)
        return {"started": True, "rollback": {"id": started.rollback_id, "log": str(started.log),
                                              "items": [{"step": i.step_id, "undo": i.description}
                                                        for i in started.items]}}

    def wait_rollback(self, rollback_id: int, timeout_s: float | None = None) -> dict[str, Any]:
        engine = self.engine()
        deadline = time.monotonic() + _wait(timeout_s, 60.0)
        while True:
            end = engine.journal.rollback_end(int(rollback_id))
            if end is not None or time.monotonic() >= deadline:
                return {"rollback_id": int(rollback_id), "finished": end is not None, "end": end}
            engine.reconcile()
            time.sleep(0.2)

    # -- logs --------------------------------------------------------------------------------------------------------------

    def step_log(self, step: str, lines: int = bounds.LOG_LINES) -> dict[str, Any]:
        """The tail of the step's latest log (a run, a service, a rollback)."""
        from eagle_console.ops import logs

        plan = self.plan
        if plan.step(step) is None:
            raise ToolFailure("not_found", f"no step {step!r} in plan {plan.id}")
        run = logs.latest_log_run(self.journal, step)
        if run is None or not run.log:
            raise ToolFailure("not_found", f"step {step} has not run yet: no log")
        return {"step": step, "run_id": run.id, **self._tail(run.log, lines)}

    def run_log(self, run_id: int, lines: int = bounds.MAX_LOG_LINES) -> dict[str, Any]:
        run = self.journal.run(int(run_id))
        if run is None or not run.log:
            raise ToolFailure("not_found", f"no run {run_id} with a log in this plan's journal")
        return {"run_id": run.id, "step": run.step_id, **self._tail(run.log, lines)}

    def _tail(self, log: str | Path, lines: int) -> dict[str, Any]:
        path = bounds.readable(log, self.plan)
        got, more = bounds.tail(path, lines)
        return {"log": str(log), "lines": got, "earlier_lines_left_out": more}

    def _service_log(self, step: str | None) -> tuple[str | None, Path]:
        from eagle_console.ops.logs import service_source

        sid, log = service_source(self.plan, self.journal, step)
        if log is None:
            raise ToolFailure("not_found", "no service has run yet: no server log" if step is None
                              else f"step {step} is not a service that has run: no server log")
        return sid, bounds.readable(log, self.plan)

    def server_summary(self, step: str | None = None) -> dict[str, Any]:
        """`server-log --json` of the service's log (the step given, else the latest service)."""
        from eagle_console.node.tail import read_lines
        from eagle_console.parse.sglang_log import SglangLogParser

        sid, path = self._service_log(step)
        parser = SglangLogParser()
        parser.feed(read_lines(path))
        return {"step": sid, "log": str(path), **parser.summary()}

    def metrics(self, step: str | None = None) -> dict[str, Any]:
        """`metrics --json` of the service's `/metrics` (the step given, else the one the console follows):
        accept length and rate, throughput, queue, TTFT and ITL, and the findings (ACCEPT_LENGTH_ONE …)."""
        from eagle_console.ops.metrics import read_once, service_problem

        problem = service_problem(self.plan, step)
        if problem is not None:
            raise ToolFailure("bad_input", problem)
        return read_once(self.plan, self.journal, step)

    def nccl_summary(self, step: str | None = None) -> dict[str, Any]:
        """`nccl --json` of the service's log."""
        from eagle_console.node.tail import read_lines
        from eagle_console.parse.nccl import NcclParser

        sid, path = self._service_log(step)
        parser = NcclParser()
        parser.feed(read_lines(path))
        return {"step": sid, "log": str(path), **parser.summary()}

    # -- GPUs -----------------------------------------------------------------------------------------------------------------

    def gpus(self) -> dict[str, Any]:
        """`gpus --json`."""
        from eagle_console.node.gpus import open_backend
        from eagle_console.node.procs import gpus_document, scan_node

        backend = open_backend(self.sim_dir)
        try:
            sample = backend.sample()
            scan = scan_node(sample, [], device_prefix=backend.device_prefix)
        finally:
            backend.close()
        return gpus_document(sample, scan.holders, scan.pid_namespace)

    def orphans(self) -> dict[str, Any]:
        """`orphans PLAN --json` (a listing: nothing is signalled)."""
        from eagle_console.node.gpus import cannot_read
        from eagle_console.ops import orphans

        with orphans.scan(self.sim_dir, self.journal) as found:
            return {"holders": [_holder(h, found.refused.get(h.pid)) for h in found.holders],
                    "orphans": sorted(orphans.preselected(found)),
                    "error": found.error and cannot_read(found.backend_name, found.error),
                    "killed": [], "survivors": [], "freed_mib": {}}

    def kill_orphans(self, grace: str | None = None, wait_s: float | None = None) -> dict[str, Any]:
        """Kill the orphans K would preselect: a request a person approves (the agent's call waits up to
        `wait_s`), or at once under --no-approvals."""
        from eagle_console.node.grace import GraceError, resolve_grace
        from eagle_console.ops import approvals, orphans

        try:
            grace_s = resolve_grace(grace, "grace")
        except GraceError as exc:
            raise ToolFailure("bad_input", str(exc)) from None
        journal = self.journal
        with orphans.scan(self.sim_dir, journal) as found:
            targets = [h for h in orphans.choose(found) if h.pid not in found.refused]
            if not targets:
                return {"started": False, "message": "no orphan to kill", "killed": [], "survivors": [],
                        "freed_mib": {}}
            if self.approvals:
                req = approvals.ask_kill(journal, found, grace_s)
            else:
                record = orphans.kill(found, targets, grace=grace_s, scope="orphans", face=self.face,
                                      journal=journal)
                return {"started": True, **record.data(), "who": record.who}
        return self._approval_reply(approvals.wait_settled(journal, req.id, _wait(wait_s, DEFAULT_APPROVAL_WAIT_S)))

    # -- drafter, extraction, results -----------------------------------------------------------------------------------------

    def _builtin_args(self, step: str, uses: str) -> dict[str, Any]:
        s = self.plan.step(step)
        if s is None:
            raise ToolFailure("not_found", f"no step {step!r} in plan {self.plan.id}")
        for action in (s.check, s.action):
            if action is not None and action.kind == "builtin" and action.uses == uses:
                return dict(action.with_)
        users = [x.id for x in self.plan.steps() if uses in (x.uses, x.check.uses if x.check else None)]
        raise ToolFailure("bad_input", f"step {step} has no {uses} (as its action or check); steps that do: "
                          f"{', '.join(users) or 'none'}")

    def drafter_check(self, step: str) -> dict[str, Any]:
        """`drafter check --json` of the drafter the step's drafter.check names."""
        from eagle_console.drafter.check import check_drafter

        args = self._builtin_args(step, "drafter.check")
        target = args.get("target")
        return {"step": step, **check_drafter(self.plan.path_of(args["path"]),
                                              self.plan.path_of(target) if target else None)}

    def compare_vocab(self, step: str) -> dict[str, Any]:
        """`drafter compare-vocab --json` of the two drafters the step's drafter.compare_vocab names."""
        from eagle_console.drafter.vocab import compare_vocab

        args = self._builtin_args(step, "drafter.compare_vocab")
        return {"step": step, **compare_vocab(self.plan.path_of(args["a"]), self.plan.path_of(args["b"]))}

    def extraction(self, step: str | None = None) -> dict[str, Any]:
        """`extraction --json` for a step with `watch.extraction` (the given one, else the plan's last)."""
        from eagle_console.node.extraction import ExtractionWatch
        from eagle_console.ops.logs import latest_log

        plan = self.plan
        chosen = plan.step(step) if step else None
        if chosen is None or chosen.watch_extraction is None:
            watched = [s for s in plan.steps() if s.watch_extraction is not None]
            if step is not None or not watched:
                raise ToolFailure("not_found", f"{'step ' + step if step else 'the plan'} has no watch.extraction; "
                                  f"steps with one: {', '.join(s.id for s in watched) or 'none'}")
            chosen = watched[-1]
        w = chosen.watch_extraction
        assert w is not None

        def absolute(p: Path) -> Path:
            return p if p.is_absolute() else plan.folder / p

        logs = [absolute(w.log)] if w.log else [p for p in [latest_log(self.journal, chosen.id)] if p]
        outputs = [absolute(w.output)] if w.output else []
        return {"step": chosen.id, **ExtractionWatch(logs=logs, outputs=outputs, pattern=w.pattern,
                                                     total=w.total).tick()}

    def results(self, step: str | None = None) -> dict[str, Any]:
        """Every recorded result (tok/s, accept length, TTFT …), by step, beside the plan's baseline."""
        plan = self.plan
        res = self.journal.results(step)
        return {"baseline": dict(plan.baseline),
                "results": [{"step": r.step_id, "run_id": r.run_id, "name": r.name, "value": r.value, "at": r.at}
                            for r in res]}

    # -- resources -----------------------------------------------------------------------------------------------------------

    def plan_resource(self) -> dict[str, Any]:
        """The plan as the agent may see it: ids, titles, what each step does and what needs approval;
        `[env]` by name only."""
        from eagle_console.ops.approvals import run_reasons

        plan = self.plan
        return {
            "plan": plan.id, "title": plan.title, "file": plan.path.name, "node": plan.node,
            "baseline": dict(plan.baseline), "env": sorted(plan.env), "approvals": self.approvals,
            "phases": [{"id": p.id, "title": p.title, "priority": p.priority, "needs": list(p.needs),
                        "steps": [{"id": s.id, "title": s.title, "priority": s.priority, "needs": list(s.needs),
                                   "does": s.action.describe() if s.action else "manual (mark it by hand)",
                                   "uses": s.uses, "service": s.service, "confirm": s.confirm,
                                   "needs_approval": run_reasons(s) if self.approvals and s.action else [],
                                   "description": s.description} for s in p.steps]} for p in plan.phases],
        }

    def recent_events(self, limit: int = EVENTS_MAX) -> dict[str, Any]:
        """The journal's last events (`limit`, at most EVENTS_MAX), oldest first, with who and face."""
        journal = self.journal
        n = max(1, min(int(limit), EVENTS_MAX))
        last = journal.last_event_id()
        events = journal.events(max(0, last - n))[-n:]
        return {"events": [{"id": e.id, "at": e.at, "kind": e.kind, "step": e.step_id, "run_id": e.run_id,
                            "who": e.who, "face": e.face, "data": e.data} for e in events]}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """mtime, size and inode of the plan file: an editor's write-and-rename changes the inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def precheck_run(engine: Engine, step: Step, force: bool) -> None:
    """Refuse now what starting would refuse (in progress, needs unmet), rather than ask a person to approve a
    run that cannot start; the start checks again, in its transaction."""
    from eagle_console.journal import Refused
    from eagle_console.journal.status import unmet_needs

    engine.reconcile()
    step_status = engine.journal.statuses()
    if force:
        return
    if step_status.get(step.id) == "in_progress":
        raise Refused(f"step {step.id} is already in progress")
    if missing := unmet_needs(engine.plan, step, step_status):
        raise Refused(f"step {step.id} needs {', '.join(missing)} completed first")


def run_json(journal: Journal, run_id: int) -> dict[str, Any] | None:
    """A run as the agent sees it (no env: the names at most)."""
    run: Run | None = journal.run(run_id)
    if run is None:
        return None
    return {"id": run.id, "label": journal.run_label(run.id), "step": run.step_id, "kind": run.kind,
            "started": run.started, "ended": run.ended, "exit_code": run.exit_code, "outcome": run.outcome,
            "reason": run.reason, "pid": run.pid, "service": run.service, "ready": run.ready_at is not None,
            "log": run.log, "who": run.who, "face": run.face}


def _holder(h: Any, refused: str | None) -> dict[str, Any]:
    d = h.to_dict()
    if refused and refused != d["reason"]:
        d["reason"] = f"{d['reason']}; not signalled: {refused}" if d["reason"] else f"not signalled: {refused}"
    return d
