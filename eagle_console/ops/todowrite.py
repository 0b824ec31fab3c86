"""An agent's own todo list, both ways: the plan as todowrite items (`export --format todowrite`), and the
items an agent's `todowrite` holds taken back as marks — each matched to a phase or step by its label (the
plan's `todo_label`), so the agent keeps the list it is used to and the journal keeps the truth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from eagle_console.ops.export import TODO_STATUS
from eagle_console.plan.todo import todo_content

if TYPE_CHECKING:
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan

# A todowrite status → the step status a mark sets (the reverse of ops.export.TODO_STATUS, one status each).
MARK_FOR = {"pending": "pending", "in_progress": "in_progress", "completed": "completed", "cancelled": "skipped"}
MAX_ITEMS = 500


class TodoRefused(ValueError):
    """The list was refused whole (nothing marked): unknown items (with the known labels) or bad ones."""

    def __init__(self, message: str, unknown: list[str] | None = None, known: list[str] | None = None) -> None:
        super().__init__(message)
        self.unknown = unknown or []
        self.known = known or []


class TodoApplied(NamedTuple):
    marked: list[dict[str, str]]  # {"step", "content", "before", "status"}
    unchanged: list[str]  # contents whose status already says the same
    phases: list[dict[str, str]]  # phase items whose status differs: a phase follows its steps, not marked

    def to_json(self) -> dict[str, Any]:
        return {"marked": self.marked, "unchanged": self.unchanged, "phases_not_marked": self.phases}


def labels(plan: Plan) -> dict[str, tuple[str, bool]]:
    """Every todowrite label → (phase or step id, is a phase), in plan order."""
    out: dict[str, tuple[str, bool]] = {}
    for phase in plan.phases:
        for item in (phase, *phase.steps):
            out.setdefault(todo_content(plan, item, phase), (item.id, item is phase))
    return out


def _match(content: str, known: Mapping[str, tuple[str, bool]], folded: Mapping[str, str]) -> str | None:
    text = content.strip()
    if text in known:
        return text
    return folded.get(text.casefold())


def apply_todos(journal: Journal, plan: Plan, items: Sequence[Any], note: str | None = None) -> TodoApplied:
    """Mark each step whose item's status says otherwise than its export would; TodoRefused (nothing marked)
    for a malformed list or any item matching no label — naming the unknown ones and every known label."""
    from eagle_console.journal.status import plan_statuses
    from eagle_console.ops.steps import mark_step

    if not isinstance(items, (list, tuple)):
        raise TodoRefused("todos must be a list of {content, status, priority} items")
    if len(items) > MAX_ITEMS:
        raise TodoRefused(f"{len(items)} items: at most {MAX_ITEMS}")
    known = labels(plan)
    folded = {label.casefold(): label for label in known}
    wanted: list[tuple[str, str, str]] = []  # (label, item id, todo status)
    unknown: list[str] = []
    for n, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("content"), str):
            raise TodoRefused(f"item {n}: not a {{content, status, priority}} object with a string content")
        status = item.get("status")
        if status not in MARK_FOR:
            raise TodoRefused(f"item {n} ({item['content'][:80]!r}): status {status!r} is not one of "
                              f"{', '.join(MARK_FOR)}")
        label = _match(item["content"], known, folded)
        if label is None:
            unknown.append(item["content"][:200])
            continue
        wanted.append((label, known[label][0], status))
    if unknown:
        raise TodoRefused(f"{len(unknown)} item(s) match no phase or step of plan {plan.id}: "
                          f"{'; '.join(repr(u) for u in unknown[:10])} — nothing was marked",
                          unknown=unknown, known=list(known))
    statuses = plan_statuses(plan, journal.statuses())
    marked, unchanged, phases = [], [], []
    for label, item_id, status in wanted:
        now = statuses.get(item_id, "pending")
        if TODO_STATUS.get(now, "pending") == status:
            unchanged.append(label)
        elif known[label][1]:
            phases.append({"phase": item_id, "content": label, "status": now, "asked": status})
        else:
            m = mark_step(journal, plan, item_id, MARK_FOR[status], note)
            marked.append({"step": item_id, "content": label, "before": m.before, "status": m.status})
    return TodoApplied(marked, unchanged, phases)
