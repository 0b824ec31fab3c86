"""Exports of a plan with its journal (todowrite items, a markdown report, a JSON document), and the file
beside the state dir they are written to.

Pure functions over the plan and journal data, so the console and the CLI give the same output.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.figures import format_value
from eagle_console.journal.status import plan_statuses
from eagle_console.plan.todo import todo_content
from eagle_console.result_names import baseline_key, long_label

if TYPE_CHECKING:
    from eagle_console.journal import Journal, Note, Result, Run
    from eagle_console.plan.model import Plan

# The export formats, one list: the CLI's `--format` choices and ops.export's files.
FORMATS = ("todowrite", "markdown", "json")

# Every JSON document that is an object (each --json output, the json export) carries "schema": JSON_SCHEMA,
# raised on an incompatible change (spec cli.md, Additions). Lists (todowrite, validate of several plans)
# stay lists.
JSON_SCHEMA = 1


TODO_STATUS = {
    "pending": "pending", "rolled_back": "pending",
    "in_progress": "in_progress", "failed": "in_progress",
    "completed": "completed", "skipped": "cancelled",
}

GLYPHS = {
    "completed": "✔", "in_progress": "◐", "pending": "○", "failed": "✖", "skipped": "⊘", "rolled_back": "↺",
}


def todowrite(plan: Plan, step_status: Mapping[str, str]) -> list[dict[str, str]]:
    """One item per phase followed by its steps, in plan order."""
    statuses = plan_statuses(plan, step_status)
    items: list[dict[str, str]] = []
    for phase in plan.phases:
        for item in (phase, *phase.steps):
            items.append({
                "content": todo_content(plan, item, phase),
                "status": TODO_STATUS.get(statuses[item.id], "pending"),
                "priority": item.priority,
            })
    return items


def _person(who: str | None, face: str | None) -> str:
    """`alice via agent:claude-code`: who, and through which face (console, cli, agent:<client>)."""
    return f"{who} via {face}" if who and face else who or face or ""


def _by(who: str | None, face: str | None) -> str:
    return f" by {_person(who, face)}" if who or face else ""


def _result_text(r: Result, baseline: Mapping[str, float], run_results: Sequence[Result]) -> str:
    """`result tok_s = 92.35 (end-to-end output tok/s: …)`, with the baseline it is measured against."""
    text = f"result {r.name} = {format_value(r.value)}"
    label = long_label(r.name)
    if label:
        text += f" ({label})"
    key = baseline_key(r.name, {x.name for x in run_results if x.run_id == r.run_id})
    base = baseline.get(key) if key is not None else None
    if base and not isinstance(r.value, str):
        text += f", vs baseline {key} {format_value(base)}: {(float(r.value) - base) / base * 100:+.1f}%"
    return text


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else ""


def markdown(plan: Plan, step_status: Mapping[str, str], notes: Sequence[Note],
             results: Sequence[Result], runs: Mapping[str, Run | None] | None = None) -> str:
    """The plan tree with statuses, then each step's notes and results; the decisions collected at the end."""
    statuses = plan_statuses(plan, step_status)
    by_step: dict[str, list[Note]] = {}
    for n in notes:
        by_step.setdefault(n.step_id, []).append(n)
    res_by_step: dict[str, list[Result]] = {}
    for r in results:
        res_by_step.setdefault(r.step_id, []).append(r)

    lines = [f"# {plan.title}", "", f"Plan `{plan.id}` — `{plan.path.name}`"]
    if plan.node:
        lines.append(f"Node: {plan.node}")
    if plan.baseline:
        lines.append("Baseline: " + ", ".join(f"{k} = {format_value(v)}" for k, v in plan.baseline.items()))
    lines.append("")
    for phase in plan.phases:
        st = statuses[phase.id]
        lines.append(f"## {GLYPHS.get(st, '?')} Phase {phase.id}: {phase.title} — {st} ({phase.priority})")
        lines.append("")
        for step in phase.steps:
            st = statuses[step.id]
            lines.append(f"- [{'x' if st in ('completed', 'skipped') else ' '}] {GLYPHS.get(st, '?')} "
                         f"**{step.id}** {step.title} — {st} ({step.priority})")
            run = (runs or {}).get(step.id)
            step_results = res_by_step.get(step.id, [])
            if run is not None:
                code = "running" if run.ended is None else f"exit {run.exit_code}"
                lines.append(f"  - last run: {_when(run.started)}{_by(run.who, run.face)}, {code}"
                             + (f", log `{run.log}`" if run.log else ""))
                # that run's results under it; an earlier run's on a line of their own (they were all listed
                # under "last run", so a step run twice showed each figure twice)
                lines += [f"    - {_result_text(r, plan.baseline, step_results)}" for r in step_results
                          if r.run_id == run.id]
                step_results = [r for r in step_results if r.run_id != run.id]
            earlier: dict[int | None, list[Result]] = {}
            for r in step_results:
                earlier.setdefault(r.run_id, []).append(r)
            for run_id, rs in earlier.items():
                where = f"earlier run (id {run_id})" if run is not None and run_id is not None else "results"
                lines.append(f"  - {where}: " + "; ".join(_result_text(r, plan.baseline, rs) for r in rs))
            for n in by_step.get(step.id, []):
                who = f" ({_person(n.who, n.face)})" if n.who or n.face else ""
                lines.append(f"  - note {_when(n.at)}{who}: {n.text}")
        lines.append("")
    known = {s.id for s in plan.steps()} | {p.id for p in plan.phases}
    lines.append("## Decisions and notes")
    lines.append("")
    if not notes:
        lines.append("(none yet)")
    for n in notes:
        where = n.step_id if n.step_id in known else f"{n.step_id} (no longer in the plan)"
        who = f" — {_person(n.who, n.face)}" if n.who or n.face else ""
        lines.append(f"- **{where}** {_when(n.at)}{who}: {n.text}")
    lines.append("")
    return "\n".join(lines)


def as_json(plan: Plan, step_status: Mapping[str, str], notes: Sequence[Note],
            results: Sequence[Result], runs: Mapping[str, Run | None] | None = None) -> dict[str, Any]:
    """The status document (cli.md `status --json`) plus notes and results per step."""
    doc = status_document(plan, step_status, runs or {})
    for phase in doc["phases"]:
        for step in phase["steps"]:
            step["notes"] = [{"text": n.text, "who": n.who, "face": n.face, "at": n.at} for n in notes
                             if n.step_id == step["id"]]
            step["results"] = [{"name": r.name, "value": r.value, "run_id": r.run_id, "at": r.at,
                                **({"label": long_label(r.name)} if long_label(r.name) else {})}
                               for r in results if r.step_id == step["id"]]
    doc["notes"] = [{"step": n.step_id, "text": n.text, "who": n.who, "face": n.face, "at": n.at} for n in notes]
    return json.loads(json.dumps({"schema": JSON_SCHEMA, **doc}, default=str))


def _run_doc(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"pid": run.pid, "started": run.started, "ended": run.ended, "exit_code": run.exit_code,
            "log": run.log, "who": run.who, "face": run.face}  # who started it, through which face


def status_document(plan: Plan, step_status: Mapping[str, str],
                    runs: Mapping[str, Run | None]) -> dict[str, Any]:
    """`status --json`: plan, title, phases with derived status, steps with their latest run."""
    statuses = plan_statuses(plan, step_status)
    return {
        "plan": plan.id,
        "title": plan.title,
        "phases": [{
            "id": phase.id, "title": phase.title, "status": statuses[phase.id], "priority": phase.priority,
            "steps": [{
                "id": s.id, "title": s.title, "status": statuses[s.id], "priority": s.priority,
                "run": _run_doc(runs.get(s.id)),
            } for s in phase.steps],
        } for phase in plan.phases],
    }


EXPORT_SUFFIX = {"todowrite": "todowrite.json", "markdown": "md", "json": "json"}


def export_path(plan: Plan, fmt: str) -> Path:
    """Beside the state dir (not inside it): `.eagle-console/<plan id>.todowrite.json` by default."""
    return plan.state_dir.parent / f"{plan.state_dir.name}.{EXPORT_SUFFIX[fmt]}"


def render(journal: Journal, plan: Plan, fmt: str) -> str:
    """The plan with its journal in `fmt` (one of FORMATS), as text: what `export` prints."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; one of: {', '.join(FORMATS)}")
    statuses = journal.statuses()
    if fmt == "todowrite":
        return json.dumps(todowrite(plan, statuses), indent=2) + "\n"
    notes, results = journal.notes(), journal.results()
    runs = {s.id: journal.latest_run(s.id) for s in plan.steps()}
    if fmt == "markdown":
        return markdown(plan, statuses, notes, results, runs)
    return json.dumps(as_json(plan, statuses, notes, results, runs), indent=2) + "\n"


def export(journal: Journal, plan: Plan, fmt: str) -> Path:
    """Write the plan with its journal in `fmt` beside the state dir; returns the file written."""
    text = render(journal, plan, fmt)
    path = export_path(plan, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return path
