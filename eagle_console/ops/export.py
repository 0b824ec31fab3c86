"""Export the plan with its journal to a file beside the state dir (todowrite, markdown, json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan

EXPORT_SUFFIX = {"todowrite": "todowrite.json", "markdown": "md", "json": "json"}


def export_path(plan: Plan, fmt: str) -> Path:
    """Beside the state dir (not inside it): `.eagle-console/<plan id>.todowrite.json` by default."""
    return plan.state_dir.parent / f"{plan.state_dir.name}.{EXPORT_SUFFIX[fmt]}"


def render(journal: Journal, plan: Plan, fmt: str) -> str:
    """The plan with its journal in `fmt` (one of plan.export.FORMATS), as text: what `export` prints."""
    from eagle_console.plan import export as ex

    if fmt not in ex.FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; one of: {', '.join(ex.FORMATS)}")
    statuses = journal.statuses()
    if fmt == "todowrite":
        return json.dumps(ex.todowrite(plan, statuses), indent=2) + "\n"
    notes, results = journal.notes(), journal.results()
    runs = {s.id: journal.latest_run(s.id) for s in plan.steps()}
    if fmt == "markdown":
        return ex.markdown(plan, statuses, notes, results, runs)
    return json.dumps(ex.as_json(plan, statuses, notes, results, runs), indent=2) + "\n"


def export(journal: Journal, plan: Plan, fmt: str) -> Path:
    """Write the plan with its journal in `fmt` beside the state dir; returns the file written."""
    text = render(journal, plan, fmt)
    path = export_path(plan, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return path
