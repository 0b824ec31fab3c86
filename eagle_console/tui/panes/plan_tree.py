"""The Plan pane: phases → steps as a Tree whose labels are updated in place on every journal change."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import Tree

from eagle_console.journal.status import plan_statuses, unmet_needs
from eagle_console.tui.labels import node_label

if TYPE_CHECKING:
    from textual.widgets.tree import TreeNode

    from eagle_console.plan.model import Plan
    from eagle_console.tui.live import Snapshot

# Cells a tree line spends before the label: cursor/guide indent per level, scrollbar, border.
_GUIDE = 4
_CHROME = 3  # two border cells and the vertical scrollbar


def _shape(plan: Plan) -> tuple:
    return tuple((p.id, tuple(s.id for s in p.steps)) for p in plan.phases)


class PlanPane(Tree[str]):
    """node.data is the phase or step id. The tree is rebuilt only when ids are added, removed or moved."""

    BORDER_TITLE = "PLAN"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("j", "cursor_down", "Down", show=False),
                                             Binding("k", "cursor_up", "Up", show=False)]

    def __init__(self, **kwargs) -> None:
        # Labels are Text, never str: Tree parses a str as Rich markup, so a title holding "[...]" would be
        # misread, and the markup parser's first use imports Rich's emoji table (~5 ms at startup).
        super().__init__(Text("plan"), **kwargs)
        self.show_root = False
        self.guide_depth = _GUIDE
        self._plan: Plan | None = None
        self._snapshot: Snapshot | None = None
        self._shape: tuple = ()
        self._item_nodes: dict[str, TreeNode[str]] = {}
        self.width_hint = 0  # its outer width to come, set before the first layout (tui/fit.plan_width)

    # -- what the App calls -----------------------------------------------------------------------------

    def show(self, plan: Plan, snapshot: Snapshot | None) -> None:
        """Show this plan and journal state; keeps the cursor and the expanded phases by id."""
        self._plan, self._snapshot = plan, snapshot
        if _shape(plan) != self._shape:
            self._rebuild(plan)
        self.refresh_labels()

    def refresh_labels(self) -> None:
        """Recompute every label (status, elapsed time, width); only changed lines are repainted."""
        plan = self._plan
        if plan is None:
            return
        snap = self._snapshot
        step_status = snap.statuses() if snap else {}
        statuses = plan_statuses(plan, step_status)
        now = time.time()
        width = self.size.width or max(0, self.width_hint - self.styles.gutter.width) or 40
        for phase in plan.phases:
            node = self._item_nodes.get(phase.id)
            if node is not None:
                self._set(node, node_label(phase.id, phase.title, statuses[phase.id], phase.priority,
                                           width=width - _CHROME - 2,  # the ▼ and a space
                                           awaiting=snap is not None and snap.awaiting(phase.id) is not None))
            for step in phase.steps:
                node = self._item_nodes.get(step.id)
                if node is None:
                    continue
                status = statuses[step.id]
                run = snap.runs.get(step.id) if snap else None
                elapsed = (now - run.started if status == "in_progress" and run is not None and run.ended is None
                           else None)
                unmet = status not in ("completed", "skipped") and bool(unmet_needs(plan, step, step_status))
                self._set(node, node_label(step.id, step.title, status, step.priority,
                                           width=width - _CHROME - _GUIDE, elapsed=elapsed, unmet=unmet,
                                           awaiting=snap is not None and snap.awaiting(step.id) is not None))

    @property
    def selected_id(self) -> str | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def select_id(self, item_id: str) -> None:
        node = self._item_nodes.get(item_id)
        if node is not None:
            if node.parent is not None and not node.parent.is_root:
                node.parent.expand()
            self.move_cursor(node)

    # -- internals ----------------------------------------------------------------------------------------

    @staticmethod
    def _set(node: TreeNode[str], label) -> None:
        if str(node.label) != label.plain or node.label.spans != label.spans:
            node.set_label(label)

    def _rebuild(self, plan: Plan) -> None:
        selected = self.selected_id
        collapsed = {pid for pid, node in self._item_nodes.items()
                     if node.parent is self.root and not node.is_expanded}
        self.clear()
        self._item_nodes = {}
        for phase in plan.phases:
            pnode = self.root.add(Text(phase.title), data=phase.id, expand=phase.id not in collapsed)
            self._item_nodes[phase.id] = pnode
            for step in phase.steps:
                self._item_nodes[step.id] = pnode.add_leaf(Text(step.title), data=step.id)
        self._shape = _shape(plan)
        # The lines are built with the labels they show: built with the full titles, the tree looked wider
        # than its pane to the first layout, which gave it scrollbars that only a second pass took away.
        self.refresh_labels()
        # Selected now, not after a refresh: the lines are laid out on demand (`last_line` builds them), and
        # a selection after the first frame was a layout pass and a Detail line update of its own.
        self.last_line  # noqa: B018
        if selected in self._item_nodes:
            self.select_id(selected)
        elif plan.phases and plan.phases[0].steps:
            self.select_id(plan.phases[0].steps[0].id)

    def _on_resize(self, event: events.Resize) -> None:
        """The labels are cut to the new width. Textual's Tree handler (skipped) also asked the screen for a
        layout at every Resize; the tree's lines do not depend on its size, and when the rebuilt lines differ
        in count or widest line, `virtual_size` changes and asks for the layout itself. A repaint does: the
        layout it asked for was the second pass before the first frame (~7 ms, and a frame more)."""
        event.prevent_default()
        self._line_cache.grow(event.size.height)
        self._clear_line_cache()  # what Tree's handler did, less `refresh(layout=True)`
        self._updates += 1
        self.root._reset()
        self.refresh()
        self.refresh_labels()
