"""A plan's `todo_label`: the placeholders it may use (the loader checks them) and an item's label."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.plan.model import Phase, Plan, Step

# Placeholders a `todo_label` may use.
TODO_LABEL_FIELDS = ("id", "title", "phase", "phase_title", "priority", "kind")


def label_fields(label: str) -> list[str]:
    """The placeholder names in a todo_label; ValueError on a malformed one (`{` unclosed)."""
    return [name for _, name, _, _ in string.Formatter().parse(label) if name is not None]


def todo_content(plan: Plan, item: Phase | Step, phase: Phase) -> str:
    fields = {
        "id": item.id, "title": item.title, "phase": phase.id, "phase_title": phase.title,
        "priority": item.priority, "kind": "phase" if item is phase else "step",
    }
    try:
        return plan.todo_label.format(**fields)
    except (KeyError, ValueError, IndexError, AttributeError):  # the loader validates; stay safe anyway
        return item.title
