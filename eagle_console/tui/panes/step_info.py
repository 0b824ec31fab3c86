"""The Step pane, under the Plan tree: the selected step's whole title, its description (a manual step's
instructions) and what each key will do to it; the tree's lines cut titles to fit, this pane never does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from eagle_console.figures import format_nested
from eagle_console.tui.labels import rollback_label
from eagle_console.tui.messages import ToastRoomChanged
from eagle_console.tui.theme import tstyle

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan


def info_text(plan: Plan, item_id: str | None) -> Text:
    """Title, description, then `r` / `u` / check lines: plain facts from the plan, wrapped, never cut."""
    if item_id is None:
        return Text("no step selected", style="dim")
    step = plan.step(item_id)
    if step is None:
        phase = plan.phase(item_id)
        if phase is None:
            return Text(f"{item_id}: no longer in the plan", style="dim")
        out = Text(f"phase {phase.id} ", style="bold") + Text(phase.title, style="bold")
        if phase.description:
            out += Text(f"\n{phase.description}")
        ids = ", ".join(s.id for s in phase.steps) or "none"
        return out + Text(f"\nsteps: {ids} · u rolls back every completed one", style="dim")
    out = Text(f"{step.id} ", style="bold") + Text(step.title, style="bold")
    if step.description:
        out += Text(f"\n{step.description}")
    elif step.action is None:
        out += Text("\nno instructions in the plan (add a `description`)", style="dim")
    if step.action is None:
        out += Text("\nmanual: do it by hand, then m marks it", style=tstyle("ec.warn"))
    else:
        ask = " (asks first)" if step.confirm else ""
        out += Text(f"\nr runs{ask}: {step.action.describe()}{' (a service)' if step.service else ''}")
        for key, value in step.action.with_.items():  # one line each: a long path wraps on its own line
            out += Text(f"\n  {key}: {format_nested(value)}", style="dim")
    if step.check:
        out += Text(f"\ncheck: {step.check.describe()}")
    if step.needs:
        out += Text(f"\nneeds: {', '.join(step.needs)}", style="dim")
    out += Text(f"\nu {rollback_label(step)}", style="dim")
    return out


class StepInfo(VerticalScroll, can_focus=False):
    """`show(plan, item_id)`: the text changes only with the selection or a plan reload."""

    BORDER_TITLE = "STEP"
    DEFAULT_CSS = "StepInfo > #step-info-text { height: auto; }"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # held, not queried: a selection can arrive before this pane's children are mounted (a loaded machine)
        self._text = Static("", id="step-info-text", markup=False)

    def compose(self):
        yield self._text

    _shown: tuple | None = None

    def on_resize(self) -> None:
        self.post_message(ToastRoomChanged())  # the toasts fit in this pane: a phase unfolded above shrinks it

    def show(self, plan: Plan, item_id: str | None) -> None:
        if (plan, item_id) == self._shown:  # every journal change calls this: keep the scroll
            return
        self._shown = (plan, item_id)
        self._text.update(info_text(plan, item_id))
        self.scroll_home(animate=False)
