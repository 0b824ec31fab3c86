"""Building the Plan from the parsed TOML: [plan], vars, env, phases; every problem is collected."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from eagle_console.plan.checks import PlanChecks
from eagle_console.plan.hazards import document_hazards
from eagle_console.plan.interpolate import resolve_vars
from eagle_console.plan.issues import PlanIssue
from eagle_console.plan.model import Cluster, Phase, Plan, Step
from eagle_console.plan.reader import _type_name, id_problem
from eagle_console.plan.safe_text import first_control
from eagle_console.plan.todo import TODO_LABEL_FIELDS, label_fields
from eagle_console.plan.tomlpos import Path_

# `[cluster] address`: what ray.init accepts (docs/cluster.md); checked here without importing Ray.
CLUSTER_ADDRESS = re.compile(r"auto|ray://[A-Za-z0-9.\-\[\]:]+:\d+|[A-Za-z0-9.\-\[\]:]+:\d+")


def address_problem(address: str) -> str | None:
    if CLUSTER_ADDRESS.fullmatch(address):
        return None
    return (f'bad [cluster] address {address!r}: write "auto", "ray://HOST:10001" (Ray Client) '
            'or "HOST:6379" (the head\'s GCS)')


TOP_KEYS = ("plan", "vars", "env", "phase", "cluster")
CLUSTER_KEYS = ("address",)
PLAN_KEYS = ("id", "title", "node", "description", "todo_label", "baseline", "state_dir")
PHASE_KEYS = ("id", "title", "priority", "needs", "description", "step")


class Builder(PlanChecks):
    stopped = False  # the document could not be walked at all (hazards): no further check may read it

    # -- the document -------------------------------------------------------------------------------------------
    def build(self, doc: dict[str, Any], state_dir: Path | None) -> Plan | None:
        hazards = document_hazards(doc)
        for hpath, message, at in hazards:
            self.error(hpath, message, at=at)
        if hazards:  # a huge int cannot even be printed in another message: stop at these
            self.stopped = True
            return None
        self.check_keys(doc, TOP_KEYS, (), "the plan file")
        self.build_vars(doc)
        head = self.table(doc, "plan", ())
        if head is None:
            if "plan" not in doc:
                self.errors.append(PlanIssue(1, 1, 'the plan file needs a [plan] table with id and title'))
            head = {}
        p: Path_ = ("plan",)
        has_head = "plan" in doc  # without one, that is the only error to give about it
        self.check_keys(head, PLAN_KEYS, p, "[plan]")
        plan_id = self.text(head, "id", p, required=has_head, what="[plan]", interp=False)
        problem = id_problem(plan_id) if plan_id is not None else None
        if problem:
            self.error((*p, "id"), f"bad plan {problem[4:]}")
            plan_id = None
        title = self.text(head, "title", p, required=has_head, what="[plan]")
        node = self.text(head, "node", p)
        description = self.text(head, "description", p)
        todo_label = self.text(head, "todo_label", p, interp=False)
        if todo_label is not None:
            self.check_label(todo_label, (*p, "todo_label"))
        baseline = self.build_baseline(head, p)
        plan_state = self.local_path(head, "state_dir", p)
        env = self.build_env(doc.get("env"), ("env",)) if "env" in doc else {}

        cluster = self.build_cluster(doc)
        phases = self.build_phases(doc, env)
        if phases is not None and cluster is None:
            self.check_nodes_need_cluster(doc)
        if self.errors or plan_id is None or title is None or phases is None:
            return None
        resolved_state = (Path(os.path.abspath(state_dir)) if state_dir else
                          plan_state or self.folder / ".eagle-console" / plan_id)
        return Plan(id=plan_id, title=title, path=self.path, state_dir=resolved_state, phases=phases,
                    node=node, description=description, todo_label=todo_label or "{title}",
                    baseline=baseline, vars=dict(self.vars), env=env, cluster=cluster)

    def build_cluster(self, doc: dict[str, Any]) -> Cluster | None:
        table = self.table(doc, "cluster", ())
        if table is None:
            return None
        p: Path_ = ("cluster",)
        self.check_keys(table, CLUSTER_KEYS, p, "[cluster]")
        address = self.text(table, "address", p, required=True, what="[cluster]")
        if address is None:
            return None
        if problem := address_problem(address):
            self.error((*p, "address"), problem)
            return None
        return Cluster(address=address)

    def check_nodes_need_cluster(self, doc: dict[str, Any]) -> None:
        """A step's `node` names a Ray node: without [cluster] there is no cluster to find it in."""
        for pi, ph in enumerate(doc.get("phase", [])):
            for si, st in enumerate(ph.get("step", []) if isinstance(ph.get("step"), list) else []):
                if isinstance(st, dict) and "node" in st:
                    self.error(("phase", pi, "step", si, "node"),
                               'node names a cluster node: add [cluster] address = "auto" (docs/cluster.md)')

    def check_label(self, label: str, path: Path_) -> None:
        try:
            names = label_fields(label)
        except ValueError as exc:
            self.error(path, f"bad todo_label: {exc}; write placeholders as {{id}} (and {{{{ for a brace)")
            return
        for name in names:
            if name not in TODO_LABEL_FIELDS:
                self.error(path, f"todo_label uses {{{name}}}; known placeholders: "
                                 + ", ".join("{" + f + "}" for f in TODO_LABEL_FIELDS))

    def build_vars(self, doc: dict[str, Any]) -> None:
        raw = self.table(doc, "vars", ())
        if not raw:
            return
        good: dict[str, Any] = {}
        for name, value in raw.items():
            path = ("vars", name)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
                self.error(path, f'bad variable name "{name}": letters, digits, _ . - (not starting with a digit)',
                           at="key")
            elif not isinstance(value, (str, int, float, bool)):
                self.error(path, f'variable "{name}" must be a string, number or boolean, not {_type_name(value)}')
            else:
                good[name] = value
        values, errors = resolve_vars(good, self.environ)
        for name, message in errors.items():
            self.error(("vars", name), message)
        self.vars = values
        self.broken_vars = set(raw) - set(values)

    def build_baseline(self, head: dict[str, Any], p: Path_) -> dict[str, float]:
        table = self.table(head, "baseline", p)
        out: dict[str, float] = {}
        for key, value in (table or {}).items():
            if first_control(key) is not None:
                self.error((*p, "baseline", key), "a baseline name holds a control character; remove it", at="key")
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.error((*p, "baseline", key), f'baseline "{key}" must be a number, not {_type_name(value)}')
                continue
            try:
                out[key] = float(value)
            except OverflowError:
                self.error((*p, "baseline", key), f'baseline "{key}" is too large')
        return out

    # -- phases and steps -----------------------------------------------------------------------------------------
    def build_phases(self, doc: dict[str, Any], plan_env: dict[str, str]) -> tuple[Phase, ...] | None:
        raw = doc.get("phase", [])
        if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
            self.error(("phase",), "phases are an array of tables: write each one as [[phase]]")
            return None
        seen: dict[str, Path_] = {}
        phases: list[Phase] = []
        needs_at: dict[str, Path_] = {}
        for pi, ph in enumerate(raw):
            pp: Path_ = ("phase", pi)
            self.check_keys(ph, PHASE_KEYS, pp, "[[phase]]")
            pid = self.build_id(ph, pp, "[[phase]]", seen)
            title = self.text(ph, "title", pp, required=True, what="[[phase]]")
            priority = self.priority(ph, pp)
            pneeds = self.id_list(ph, "needs", pp)
            description = self.text(ph, "description", pp)
            steps_raw = ph.get("step", [])
            if not isinstance(steps_raw, list) or not all(isinstance(x, dict) for x in steps_raw):
                self.error((*pp, "step"), "steps are an array of tables: write each one as [[phase.step]]")
                steps_raw = []
            steps: list[Step] = []
            for si, st in enumerate(steps_raw):
                sp: Path_ = (*pp, "step", si)
                step = self.build_step(st, sp, pid or "?", pneeds, plan_env, seen)
                if step is not None:
                    steps.append(step)
                    needs_at[step.id] = (*sp, "needs") if "needs" in st else (*pp, "needs")
            if pid is not None:
                needs_at[pid] = (*pp, "needs")
            if pid is not None and title is not None:
                line, _ = self.pos.key(pp)
                phases.append(Phase(id=pid, title=title, priority=priority, needs=pneeds,  # type: ignore[arg-type]
                                    description=description, steps=tuple(steps), line=line))
        self.check_needs(raw, phases, seen, needs_at)
        return tuple(phases)
