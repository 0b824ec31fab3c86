"""The console's actions as plain functions over the core: the App calls them from thread workers.

Keys that change something (mark and note now; run, next, rollback, kill with issues 3 and 4) go through
here, so the UI layer holds no domain logic and the CLI and the console do the same thing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan

EXPORT_SUFFIX = {"todowrite": "todowrite.json", "markdown": "md", "json": "json"}


def mark(journal: Journal, plan: Plan, step_id: str, status: str, note: str | None) -> str:
    """Mark a step; returns the line the console shows (`0.3: pending → completed`)."""
    if plan.step(step_id) is None:
        raise ValueError(f"unknown step {step_id!r}")
    before = journal.statuses().get(step_id, "pending")
    journal.mark(step_id, status, note=note or None)
    return f"{step_id}: {before} → {status}" + (" (with a note)" if note else "")


def note(journal: Journal, step_id: str, text: str) -> str:
    text = text.strip()
    if not text:
        raise ValueError("the note is empty")
    journal.note(step_id, text)
    return f"{step_id}: noted"


def export_path(plan: Plan, fmt: str) -> Path:
    """Beside the state dir (not inside it): `.eagle-console/<plan id>.todowrite.json` by default."""
    return plan.state_dir.parent / f"{plan.state_dir.name}.{EXPORT_SUFFIX[fmt]}"


def export(journal: Journal, plan: Plan, fmt: str) -> Path:
    """Write the plan with its journal in `fmt` (todowrite, markdown or json); returns the file written."""
    from eagle_console.plan import export as ex

    statuses = journal.statuses()
    if fmt == "todowrite":
        text = json.dumps(ex.todowrite(plan, statuses), indent=2) + "\n"
    else:
        notes, results = journal.notes(), journal.results()
        runs = {s.id: journal.latest_run(s.id) for s in plan.steps()}
        if fmt == "markdown":
            text = ex.markdown(plan, statuses, notes, results, runs)
        elif fmt == "json":
            text = json.dumps(ex.as_json(plan, statuses, notes, results, runs), indent=2) + "\n"
        else:
            raise ValueError(f"unknown export format {fmt!r}; one of: {', '.join(EXPORT_SUFFIX)}")
    path = export_path(plan, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return path
