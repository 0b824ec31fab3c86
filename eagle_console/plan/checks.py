"""Checks across the plan once it is read: built-in arguments (for `validate`), needs, needs cycles."""

from __future__ import annotations

import difflib
from typing import Any

from eagle_console.plan.model import Phase
from eagle_console.plan.steps import StepReader
from eagle_console.plan.tomlpos import Path_
from eagle_console.plan.uses import WithCheck


class PlanChecks(StepReader):
    def check_builtin_args(self, doc: dict[str, Any], check: WithCheck) -> None:
        """Each built-in's `with` table, as `check` (the engine's Builtin.validate) judges it. Run on a plan
        with errors too (loader.parse_plan): a malformed phase or step is skipped here, its own error already
        said."""
        phases = doc.get("phase", [])
        for pi, ph in enumerate(phases if isinstance(phases, list) else []):
            steps = ph.get("step", []) if isinstance(ph, dict) else []
            for si, st in enumerate(steps if isinstance(steps, list) else []):
                if not isinstance(st, dict):
                    continue
                sp: Path_ = ("phase", pi, "step", si)
                for path, table in ((sp, st), ((*sp, "check"), st.get("check")),
                                    ((*sp, "rollback"), st.get("rollback"))):
                    if not isinstance(table, dict) or "uses" not in table:
                        continue
                    action = self.builtin(table, path)
                    if action is None:
                        continue
                    where = (*path, "with") if "with" in table else (*path, "uses")
                    try:
                        problems = check(action.uses or "", dict(action.with_))
                    except Exception as exc:  # noqa: BLE001 - a crashing validator must not let `validate` say ok
                        problems = [f"its check of `with` crashed ({type(exc).__name__}: {exc}); "
                                    "the arguments could not be validated"]
                    for problem in problems:
                        self.error(where, f"{action.uses}: {problem}")

    # -- needs -----------------------------------------------------------------------------------------------------
    def check_needs(self, raw: list[dict[str, Any]], phases: list[Phase], seen: dict[str, Path_],
                    needs_at: dict[str, Path_]) -> None:
        known = list(seen)
        for pi, ph in enumerate(raw):
            items: list[tuple[Path_, Any]] = [(("phase", pi), ph)]
            items += [(("phase", pi, "step", si), st) for si, st in enumerate(ph.get("step", []) or [])
                      if isinstance(st, dict)] if isinstance(ph.get("step", []), list) else []
            for path, table in items:
                value = table.get("needs", [])
                for i, need in enumerate([value] if isinstance(value, str) else
                                         value if isinstance(value, list) else []):
                    if isinstance(need, str) and need not in seen:  # never suggest waiting for itself
                        close = difflib.get_close_matches(need, [k for k in known if k != table.get("id")], n=1)
                        hint = f'; did you mean "{close[0]}"?' if close else ""
                        self.error((*path, "needs", i), f'needs names unknown id "{need}"{hint}')
        self.check_cycles(phases, needs_at)

    def check_cycles(self, phases: list[Phase], needs_at: dict[str, Path_]) -> None:
        # Edges step -> steps it waits for; a phase id stands for all of its steps.
        members = {p.id: [s.id for s in p.steps] for p in phases}
        edges: dict[str, list[str]] = {}
        for p in phases:
            for s in p.steps:
                edges[s.id] = [x for n in s.needs for x in members.get(n, [n])]
        color: dict[str, int] = {}  # 1: on the current path, 2: done
        reported: set[frozenset[str]] = set()
        # Depth-first with an explicit stack: a chain of thousands of needs must not hit the recursion limit.
        for root in edges:
            if color.get(root) is not None:
                continue
            color[root] = 1
            trail = [root]
            pending = [iter(edges[root])]
            while pending:
                nxt = next(pending[-1], None)
                if nxt is None:
                    color[trail.pop()] = 2
                    pending.pop()
                elif color.get(nxt) == 1:
                    cycle = trail[trail.index(nxt):] + [nxt]
                    key = frozenset(cycle)
                    if key not in reported:
                        reported.add(key)
                        self.error(needs_at.get(cycle[0], ()), "needs cycle: " + _cycle_text(cycle, phases)
                                   + "; one of these must not wait for the other")
                elif nxt in edges and color.get(nxt) is None:
                    color[nxt] = 1
                    trail.append(nxt)
                    pending.append(iter(edges[nxt]))


def _cycle_text(cycle: list[str], phases: list[Phase]) -> str:
    """The cycle as the plan wrote it: phases when every wait in it comes from a phase's `needs`."""
    phase_of = {s.id: p for p in phases for s in p.steps}
    by_phase = []
    for a, b in zip(cycle, cycle[1:], strict=False):
        pa, pb = phase_of.get(a), phase_of.get(b)
        if pa is None or pb is None or not ({pb.id, b} & set(pa.needs)):
            return " -> ".join(cycle)
        by_phase.append(pa.id)
    return " -> ".join(f"phase {p}" for p in [*by_phase, by_phase[0]])
