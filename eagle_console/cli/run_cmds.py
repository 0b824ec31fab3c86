"""`run`, `next`, `rollback`, `log`: argparse and printing over eagle_console.ops (which decides)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from eagle_console.cli.common import CLI_HINTS, CliError, add_state_dir, load_plan, open_journal

if TYPE_CHECKING:
    from eagle_console.journal import Refused


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="start a step under a supervisor (it outlives this command)")
    p.add_argument("plan")
    p.add_argument("step")
    _run_flags(p)
    p.add_argument("--force", action="store_true", help="start even with unmet needs or a run in progress")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("next", help="run the first pending step whose needs are met, in plan order")
    p.add_argument("plan")
    _run_flags(p)
    p.set_defaults(func=cmd_next)

    p = sub.add_parser("rollback", help="roll back a step or a phase (its completed steps, in reverse order)")
    p.add_argument("plan")
    p.add_argument("target", metavar="STEP_OR_PHASE")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--cascade", action="store_true", help="also roll back completed steps that depend on it")
    p.add_argument("--force", action="store_true",
                   help="undo despite drift (json.set), mark steps without an undo as rolled back")
    p.add_argument("--no-wait", action="store_true", help="return once the rollback has started")
    add_state_dir(p)
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("log", help="print the step's latest log")
    p.add_argument("plan")
    p.add_argument("step")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing what is appended")
    add_state_dir(p)
    p.set_defaults(func=cmd_log)


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation (confirm = true steps)")
    p.add_argument("--wait", action="store_true",
                   help="wait for the end (a service: until ready), printing the step's output as it is written; "
                        "exit 0 if the step completed, 1 if not")
    p.add_argument("--quiet", "-q", action="store_true", help="with --wait: do not print the step's output")
    add_state_dir(p)


def _engine(args: argparse.Namespace, readonly: bool = False, check=None):
    """The plan's engine; `check(plan, id)` (ops.steps) first refuses an id the plan does not have as bad
    input (exit 2, before the journal is opened), as `mark` does."""
    from eagle_console.engine.runner import Engine

    plan = load_plan(args.plan, args.state_dir)
    if check is not None:
        try:
            check(plan, args.target if hasattr(args, "target") else args.step)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    return Engine(plan, open_journal(plan, readonly=readonly))


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(f"{question} — this needs confirmation: pass --yes")
    answer = input(f"{question} [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise CliError("cancelled", code=1)


def _refused(exc: Refused) -> CliError:
    from eagle_console.ops.hints import refusal_text

    return CliError(refusal_text(exc, CLI_HINTS), code=1)


def _start(engine, step_id: str, args: argparse.Namespace, force: bool = False) -> int:
    from eagle_console.journal import Refused
    from eagle_console.ops import steps

    request = steps.run_request(engine.plan, step_id)
    again = steps.rerun_text(engine, step_id)  # "0.2 completed at 14:02; running it again"
    if request.confirm:
        _confirm(f"{again}: " * bool(again) + f"run {request.step.id} ({request.step.title})?", args.yes)
    try:
        run_id = steps.start_run(engine, step_id, force=force)
    except Refused as exc:
        raise _refused(exc) from None
    if again:
        print(again)
    return run_id


def _report(engine, run_id: int, wait: bool, quiet: bool = False) -> int:
    from eagle_console.ops import steps

    run = engine.journal.run(run_id)
    print(f"started {engine.journal.run_label(run_id)}; log: {run.log}")
    if not wait:
        return 0
    t0 = time.monotonic()
    output = None if quiet else _OutputStream()
    unknown: list[str] = []  # what was said of a node run nobody can ask now, so it is said once
    held: list[str] = []  # its end, once the journal could not take it (a full disk): said once

    def tick(r) -> None:
        if output is not None:
            output.pump(r.log)
        elif sys.stderr.isatty():
            sys.stderr.write(f"\r{r.step_id}: running {time.monotonic() - t0:5.0f}s ")
            sys.stderr.flush()
        if not held and (held_now := steps.held_end_text(r, engine.plan.state_dir)):
            held.append(held_now)  # said once: the disk may stay full for hours
            print(f"{r.step_id}: {held_now}; still waiting (Ctrl+C stops waiting)", flush=True)
        said = steps.unknown_text(r)
        if said and not unknown:
            print(f"{r.step_id}: {said}; still waiting (Ctrl+C stops waiting, not the step)", flush=True)
        elif unknown and not said and not r.finished:
            print(f"{r.step_id}: node {r.node} answers again", flush=True)
        unknown[:] = [said] if said else []

    try:
        outcome = steps.wait_run(engine, run_id, on_tick=tick)
    except KeyboardInterrupt:
        print(f"\nstopped waiting; {engine.journal.run_label(run_id)} goes on (status, log -f, rollback)",
              file=sys.stderr)
        return 130
    finally:
        if output is not None:
            output.pump(engine.journal.run(run_id).log)  # what was written before the end
            output.close()
    if output is None and sys.stderr.isatty():
        sys.stderr.write("\n")
    run = outcome.run
    if outcome.ready:
        print(f"{run.step_id}: ready (service pid {run.pid})")
        return 0
    from eagle_console.cli.color import status as paint

    detail = f" — {run.reason}" if run.reason else ""
    print(f"{run.step_id}: {paint(outcome.status, outcome.status)}{detail}")
    return 0 if outcome.ok else 1


class _OutputStream:
    """The run's log printed as it is written (`--wait` shows the step's output, as `log -f` does), escaped:
    a step's output never drives the terminal."""

    def __init__(self) -> None:
        self._follower = None

    def pump(self, log: str | None) -> None:
        from eagle_console.node.tail import LogFollower
        from eagle_console.plan.safe_text import printable

        if not log:
            return
        if self._follower is None:
            self._follower = LogFollower(log)
        while True:
            lines = self._follower.read_new()
            for line in lines:
                print(printable(line), flush=False)
            if not self._follower.more:
                break
        sys.stdout.flush()

    def close(self) -> None:
        if self._follower is not None:
            self._follower.close()


def cmd_run(args: argparse.Namespace) -> int:
    from eagle_console.ops import steps

    engine = _engine(args, check=steps.check_runnable)
    return _report(engine, _start(engine, args.step, args, force=args.force), args.wait, args.quiet)


def cmd_next(args: argparse.Namespace) -> int:
    from eagle_console.ops import steps

    engine = _engine(args)
    choice = steps.choose_next(engine, CLI_HINTS)
    if choice.step is None:
        raise CliError(choice.message or "nothing to run next", code=1)
    if choice.manual:
        raise CliError(f"the next step, {choice.step.id} ({choice.step.title}), is a manual step: do it by hand "
                       f"and mark it{CLI_HINTS.mark}", code=1)
    return _report(engine, _start(engine, choice.step.id, args), args.wait, args.quiet)


def cmd_rollback(args: argparse.Namespace) -> int:
    from eagle_console.journal import Refused
    from eagle_console.ops import rollback, steps

    engine = _engine(args, check=steps.check_target)
    try:
        items = rollback.plan(engine, args.target, args.cascade, args.force)
    except Refused as exc:
        raise _refused(exc) from None
    print(f"rollback of {args.target} will undo, in order:")
    for n, item in enumerate(items, 1):
        print(f"  {n}. {item.step_id}: {item.description}")
    _confirm("go ahead?", args.yes)
    try:
        started = rollback.start(engine, args.target, args.cascade, args.force)
    except Refused as exc:
        raise _refused(exc) from None
    print(f"rollback {started.rollback_id} started; log: {started.log}")
    if args.no_wait:
        return 0
    try:
        outcome = rollback.wait_outcome(engine, started.rollback_id)
    except Refused as exc:
        raise _refused(exc) from None
    if outcome.get("outcome") == "completed":
        print(f"rolled back: {', '.join(i.step_id for i in items)}")
        return 0
    # its supervisor's own error names no step: "stopped at None" before
    where = f" at {outcome['failed_step']}" if outcome.get("failed_step") else ""
    print(f"rollback stopped{where}: {outcome.get('reason')}", file=sys.stderr)
    return 1


def cmd_log(args: argparse.Namespace) -> int:
    from eagle_console.ops import logs, steps

    engine = _engine(args, readonly=True, check=steps.check_step)  # a phase has no log of its own
    engine.reconcile()  # a reader: a dead supervisor's run ends in memory
    run = logs.latest_log_run(engine.journal, args.step)
    if run is None:
        raise CliError(f"step {args.step} has not run yet: no log", code=1)
    path = Path(run.log)
    from eagle_console.node.tail import NotRegularFile, Unreadable, read_lines

    run = engine.journal.latest_run(args.step, kind=None) if args.follow else None

    def run_ended() -> bool:  # --follow: until the run ends (or ^C)
        nonlocal run
        engine.reconcile()
        run = engine.journal.run(run.id) if run else None
        return run is None or run.finished

    try:  # only a regular file, read up to its size now; control bytes escaped (tail.clean_line)
        for line in read_lines(path, until=run_ended if args.follow else None):
            print(line, flush=args.follow)
    except FileNotFoundError:
        raise CliError(f"the log {path} does not exist (yet)", code=1) from None
    except (NotRegularFile, Unreadable) as exc:  # another user's log is said as theirs, not as missing
        raise CliError(str(exc), code=1) from None
    return 0
