"""`validate`, `status`, `mark`, `note`, `export`: the plan and its journal from the command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.cli.common import (
    CliError,
    add_json,
    add_state_dir,
    load_plan,
    open_journal,
    print_json,
    read_journal,
)
from eagle_console.plan.safe_text import printable

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan

STATUS_CHOICES = ("pending", "in_progress", "completed", "failed", "skipped", "rolled_back")


def register(sub: argparse._SubParsersAction) -> None:
    from eagle_console.ops.export import FORMATS

    p = sub.add_parser(
        "validate", help="check plan files; every error as PLAN:LINE:COL: message",
        description="Check one or more plan files (e.g. plans/*.toml) and print every error found. "
        "With --json: one object {ok, plan, errors} for one PLAN, a JSON list of such objects for several. "
        "Exit status 0 only if every plan is valid, else 2.",
    )
    p.add_argument("plans", nargs="+", metavar="PLAN")
    add_json(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("status", help="phases and steps with their statuses and latest runs")
    p.add_argument("plan")
    add_json(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("mark", help="set a step's status by hand (phases are derived from their steps)")
    p.add_argument("plan")
    p.add_argument("step")
    p.add_argument("status", choices=STATUS_CHOICES)
    p.add_argument("--note", metavar="TEXT", help="a note recorded with the mark (why)")
    add_state_dir(p)
    p.set_defaults(func=cmd_mark)

    p = sub.add_parser("note", help="add a note to a step or a phase (a decision, an observation)")
    p.add_argument("plan")
    p.add_argument("step", metavar="STEP_OR_PHASE")
    p.add_argument("text")
    add_state_dir(p)
    p.set_defaults(func=cmd_note)

    p = sub.add_parser(
        "export", help="the plan with its statuses as todowrite items, markdown, or JSON",
        description="todowrite: [{content, status, priority}], one item per phase followed by its steps; "
        "markdown: the tree with statuses, results, notes and decisions; json: status plus notes and results.",
    )
    p.add_argument("plan")
    p.add_argument("--format", required=True, choices=FORMATS, help="todowrite, markdown or json (see above)")
    add_state_dir(p)
    p.set_defaults(func=cmd_export)


# -- validate ----------------------------------------------------------------------------------------------------

def _validate_one(path: str, state_dir: str | None) -> dict[str, Any]:
    from eagle_console.engine.builtins import check_with
    from eagle_console.plan.loader import PlanError
    from eagle_console.plan.loader import load_plan as load

    override = state_dir or os.environ.get("EAGLE_CONSOLE_STATE")
    warnings: list[Any] = []
    try:
        plan = load(Path(path), state_dir=Path(override) if override else None, check_builtins=check_with,
                    warnings=warnings)
    except PlanError as exc:  # its warnings too, in file order with the errors: every problem in one pass
        both = sorted([*exc.errors, *warnings], key=lambda e: (e.line is None, e.line or 0, e.column or 0))
        return {"ok": False, "plan": _plan_id_guess(Path(path)), "path": path,
                "errors": [{"line": e.line, "column": e.column, "message": e.message} for e in exc.errors],
                "warnings": [{"line": w.line, "column": w.column, "message": w.message} for w in warnings],
                "lines": PlanError(Path(path), both).format_all()}
    return {"ok": True, "plan": plan.id, "path": path, "errors": [], "lines": [],
            "phases": len(plan.phases), "steps": sum(1 for _ in plan.steps()),
            "warnings": [{"line": w.line, "column": w.column, "message": w.message} for w in warnings],
            "warning_lines": PlanError(Path(path), warnings).format_all()}


def _plan_id_guess(path: Path) -> str | None:
    """The plan id of an invalid file, when its [plan] table still reads."""
    import re

    from eagle_console.inputfile import PLAN_CAP, InputFileError, read_bytes

    try:  # the same bounds as the load: a FIFO or a device refused there must not hang here
        text = read_bytes(path, PLAN_CAP).decode("utf-8", errors="replace")
    except InputFileError:
        return None
    m = re.search(r'^\s*\[plan\][^\[]*?^\s*id\s*=\s*"([A-Za-z0-9._-]+)"', text, re.M | re.S)
    return m.group(1) if m else None


def cmd_validate(args: argparse.Namespace) -> int:
    reports = [_validate_one(p, args.state_dir) for p in args.plans]
    if args.json:
        # "warnings" only when there are some: the spec's document stays {ok, plan, errors}.
        docs = [{"ok": r["ok"], "plan": r["plan"], "errors": r["errors"],
                 **({"warnings": r["warnings"]} if r.get("warnings") else {})} for r in reports]
        print_json(docs[0] if len(docs) == 1 else docs)
    else:
        for r in reports:
            if r["ok"]:
                print(f"{r['path']}: ok — plan {r['plan']}, {_count(r['phases'], 'phase')}, {_count(r['steps'], 'step')}")
                for line in r["warning_lines"]:
                    print(line)
            else:
                for line in r["lines"]:
                    print(line)
    bad = [r for r in reports if not r["ok"]]
    if bad and not args.json:
        n = sum(len(r["errors"]) for r in bad)
        print(f"{len(bad)} of {len(reports)} plan(s) invalid, {n} error(s)", file=sys.stderr)
    return 2 if bad else 0


# -- status ------------------------------------------------------------------------------------------------------

def _status_doc(plan: Plan) -> tuple[dict[str, Any], dict[str, str]]:
    """The status document (with each run's processes now, ops.steps.add_process_keys) and, per step, the
    text saying what its latest run does."""
    from eagle_console.cli.common import CLI_HINTS
    from eagle_console.ops import faces, steps
    from eagle_console.ops.export import status_document

    journal = read_journal(plan)
    try:
        runs = {s.id: journal.latest_run(s.id) for s in plan.steps()}
        procs = steps.run_processes(runs)
        doc = steps.add_process_keys(status_document(plan, journal.statuses(), runs), procs, runs)
        faces.add_approval_keys(faces.add_face_keys(doc, journal.states()), journal.approvals())
        texts = {sid: steps.run_state_text(run, procs[sid], CLI_HINTS._replace(
                     rollback=f" (eagle-console rollback {plan.path} {sid})"),
                     steps.held_end_text(run, plan.state_dir)) for sid, run in runs.items() if run}
        return doc, texts
    finally:
        journal.close()


def cmd_status(args: argparse.Namespace) -> int:
    from eagle_console.cli.color import status as paint
    from eagle_console.ops.export import GLYPHS

    plan = load_plan(args.plan, args.state_dir)
    doc, texts = _status_doc(plan)
    if args.json:
        print_json(doc)
        return 0
    print(f"{plan.id} — {plan.title}")
    width = max((len(s.id) for s in plan.steps()), default=2)
    for phase in doc["phases"]:
        st = phase["status"]  # glyph, id and status in the console tree's colour (cli/color.py)
        print(paint(f"{GLYPHS.get(st, '?')} {phase['id']}", st) + " " * max(1, width + 3 - len(phase["id"]))
              + f"{phase['title']}  [{paint(st, st)}, {phase['priority']}]")
        for step in phase["steps"]:
            extra = f"  ({texts[step['id']]})" if texts.get(step["id"]) else ""
            if (ask := step.get("approval")) is not None:  # an agent's request waits (eagle-console approve)
                extra += (f"  [{ask['status'].replace('_', ' ')}: request {ask['id']} to {ask['action']} it, by "
                          f"{ask['asked']['face'] or ask['asked']['who']}]")
            st = step["status"]
            print("  " + paint(f"{GLYPHS.get(st, '?')} {step['id']}", st) + " " * (width + 1 - len(step["id"]))
                  + f"{step['title']}  [{paint(st, st)}]{extra}")
    return 0


# -- mark, note, export ----------------------------------------------------------------------------------------

def cmd_mark(args: argparse.Namespace) -> int:
    from eagle_console.ops import steps

    plan = load_plan(args.plan, args.state_dir)
    try:
        steps.check_markable(plan, args.step)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    journal = open_journal(plan)
    try:
        marked = steps.mark_step(journal, plan, args.step, args.status, note=args.note)
    finally:
        journal.close()
    print(f"{marked.step_id}: {marked.before} → {marked.status}" + (f" (note: {printable(args.note)})" if args.note else ""))
    return 0


def cmd_note(args: argparse.Namespace) -> int:
    from eagle_console.ops import steps

    plan = load_plan(args.plan, args.state_dir)
    journal = open_journal(plan)
    try:
        print(steps.note(journal, args.step, args.text, plan=plan))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    finally:
        journal.close()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from eagle_console.ops.export import render

    plan = load_plan(args.plan, args.state_dir)
    journal = read_journal(plan)
    try:
        text = render(journal, plan, args.format)
    finally:
        journal.close()
    sys.stdout.write(printable(text) if args.format == "markdown" else text)  # JSON escapes itself
    sys.stdout.flush()
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
