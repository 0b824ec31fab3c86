"""The Plan pane: phases → steps with status glyph, priority, unmet-needs mark and a running step's elapsed time.

Built once per plan shape; journal changes only relabel nodes (`set_label` repaints one line), so the
selection and expansion survive every refresh.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from eagle_console.plan.export import GLYPHS
from eagle_console.plan.model import Phase, Plan, Step

STATUS_STYLE = {
    "completed": "green", "in_progress": "yellow", "pending": "", "failed": "bold red",
    "skipped": "dim", "rolled_back": "magenta",
}
PRIORITY_MARK = {"high": ("!", "bold red"), "medium": (" ", ""), "low": ("↓", "dim")}
UNMET_MARK = "⇠"  # waits on a `needs` that is not done yet
RUNNING_MARK = "⟳"
# Cells a line spends before the label: tree guides per level, the border, the scrollbar.
GUIDE = 2
CHROME = 4


def elapsed_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def ellipsise(text: str, width: int) -> str:
    if width <= 1:
        return text[:max(width, 0)]
    return text if len(text) <= width else text[: width - 1] + "…"


def item_label(item: Phase | Step, status: str, *, unmet: bool = False, started: float | None = None,
               now: float | None = None, width: int = 60) -> Text:
    """One tree line fitted to `width` cells: the title gives way first; glyph, marks and timer never do."""
    prio, prio_style = PRIORITY_MARK.get(item.priority, (" ", ""))
    running = started is not None and status == "in_progress"
    timer = f"  {RUNNING_MARK} {elapsed_text((now or time.time()) - started)}" if running else ""  # type: ignore[operator]
    mark = f" {UNMET_MARK}" if unmet else ""
    head = f"{item.id} "
    budget = width - 2 - len(head) - len(timer) - len(mark)
    label = Text()
    label.append(GLYPHS.get(status, "?"), style=STATUS_STYLE.get(status, ""))
    label.append(prio, style=prio_style)
    label.append(head, style="bold" if isinstance(item, Phase) else "")
    label.append(ellipsise(item.title, max(budget, 8)), style="dim" if status == "skipped" else "")
    if mark:
        label.append(mark, style="cyan")
    if timer:
        label.append(timer, style="yellow")
    return label


def plan_shape(plan: Plan) -> tuple:
    """The tree's shape: when a reload leaves it unchanged, nodes are relabelled instead of rebuilt."""
    return tuple((p.id, tuple(s.id for s in p.steps)) for p in plan.phases)


class PlanTree(Tree[str]):
    """The live todo tree; `node.data` is the phase or step id. The App feeds it journal state."""

    BORDER_TITLE = "PLAN"

    def __init__(self, plan: Plan, **kwargs) -> None:
        super().__init__(plan.title, **kwargs)
        self.show_root = False
        self.guide_depth = GUIDE
        self._plan = plan
        self._nodes: dict[str, TreeNode[str]] = {}
        self._statuses: dict[str, str] = {}
        self._unmet: set[str] = set()
        self._started: dict[str, float] = {}
        self._shape: tuple = ()
        self._build(plan)

    # -- building ------------------------------------------------------------------------------------------

    def _build(self, plan: Plan, collapsed: set[str] | None = None) -> None:
        self.clear()
        self._nodes = {}
        for phase in plan.phases:
            pnode = self.root.add(self._label(phase), data=phase.id, expand=phase.id not in (collapsed or ()))
            self._nodes[phase.id] = pnode
            for step in phase.steps:
                self._nodes[step.id] = pnode.add_leaf(self._label(step), data=step.id)
        self._shape = plan_shape(plan)

    def set_plan(self, plan: Plan) -> None:
        """A good reload: same shape → relabel in place; a new shape → rebuild, keeping selection/expansion."""
        self._plan = plan
        if plan_shape(plan) == self._shape:
            self.relabel()
            return
        selected = self.selected_id
        collapsed = {i for i, n in self._nodes.items() if n.parent is self.root and not n.is_expanded}
        self._build(plan, collapsed)
        if selected and selected in self._nodes:
            self.call_after_refresh(self.select_id, selected)

    # -- state ---------------------------------------------------------------------------------------------

    def set_state(self, statuses: Mapping[str, str], unmet: set[str], started: Mapping[str, float]) -> None:
        """New journal state: relabel only the nodes whose status, mark or timer changed."""
        changed = {i for i in self._nodes if self._statuses.get(i) != statuses.get(i)}
        changed |= unmet ^ self._unmet
        changed |= set(started) ^ set(self._started)
        self._statuses, self._unmet, self._started = dict(statuses), set(unmet), dict(started)
        for node_id in changed:
            self._relabel(node_id)

    def tick(self) -> None:
        """Each second: only the running steps' elapsed times change."""
        for node_id in self._started:
            self._relabel(node_id)

    def relabel(self) -> None:
        for node_id in self._nodes:
            self._relabel(node_id)

    def status_of(self, node_id: str) -> str:
        return self._statuses.get(node_id, "pending")

    def _label(self, item: Phase | Step) -> Text:
        width = (self.size.width or 44) - CHROME - GUIDE * (2 if isinstance(item, Step) else 1)
        return item_label(item, self._statuses.get(item.id, "pending"), unmet=item.id in self._unmet,
                          started=self._started.get(item.id), width=width)

    def _relabel(self, node_id: str) -> None:
        node = self._nodes.get(node_id)
        item = self._plan.phase(node_id) or self._plan.step(node_id)
        if node is not None and item is not None:
            node.set_label(self._label(item))

    def on_resize(self) -> None:
        self.relabel()

    # -- selection -----------------------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def select_id(self, node_id: str) -> bool:
        node = self._nodes.get(node_id)
        if node is None:
            return False
        if node.parent is not None and node.parent is not self.root:
            node.parent.expand()
        self.move_cursor(node)
        return True

    def label_text(self, node_id: str) -> str:
        node = self._nodes.get(node_id)
        return str(node.label) if node is not None else ""
