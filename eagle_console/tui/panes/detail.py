"""The Detail line: what the selected step does, its last status change, last run and notes.

`describe_selection` and `drafter_lines` read the journal / the drafter files, so the App calls them in a
thread worker and hands the text to `DetailLine.show`.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from eagle_console.journal import Journal, plan_statuses, unmet_needs
from eagle_console.plan.model import Plan


def _when(at: float | None) -> str:
    return time.strftime("%m-%d %H:%M", time.localtime(at)) if at else "?"


def describe_selection(plan: Plan, journal: Journal, node_id: str | None) -> str:
    """Plain text, one fact group per line, for a step or a phase (no widget involved: safe in a thread)."""
    if not node_id:
        return "no step selected"
    states = journal.states()
    raw = {k: v.status for k, v in states.items()}
    statuses = plan_statuses(plan, raw)
    phase = plan.phase(node_id)
    if phase is not None:
        done = sum(1 for s in phase.steps if statuses[s.id] in ("completed", "skipped"))
        line = f"phase {phase.id} · {statuses[phase.id]} · {done}/{len(phase.steps)} steps done · {phase.title}"
        if phase.needs:
            line += f" · needs {', '.join(phase.needs)}"
        return line
    step = plan.step(node_id)
    if step is None:
        return f"{node_id}: no longer in the plan"
    kind = "manual step (do it by hand and mark it)" if step.action is None else step.action.describe()
    lines = [f"{step.id} · {statuses[step.id]} · {kind}"]
    extras = []
    if step.check:
        extras.append(f"check {step.check.describe()}")
    if step.rollback:
        extras.append(f"rollback {step.rollback.describe()}")
    unmet = unmet_needs(plan, step, raw)
    if unmet and statuses[step.id] not in ("completed", "skipped"):
        extras.append(f"waits on {', '.join(unmet)}")
    state = states.get(step.id)
    if state is not None:
        change = f"{state.status} {_when(state.at)} by {state.who or '?'}"
        if state.reason:
            change += f" ({state.reason})"
        extras.append(change)
    if extras:
        lines.append(" · ".join(extras))
    run = journal.latest_run(step.id)
    if run is not None:
        run_line = f"run {run.id} started {_when(run.started)} by {run.who or '?'} · pid {run.pid or '?'}"
        if run.finished:
            run_line += f" · {run.outcome or 'ended'} (exit {run.exit_code})"
            if run.reason:
                run_line += f": {run.reason}"
        else:
            run_line += " · ready" if run.ready_at else " · running"
        if run.log:
            run_line += f" · log {run.log}"
        lines.append(run_line)
    notes = journal.notes(step.id)
    if notes:
        more = f" (+{len(notes) - 1} more)" if len(notes) > 1 else ""
        lines.append(f"note by {notes[-1].who or '?'}: {notes[-1].text}{more}")
    return "\n".join(lines)


def drafter_lines(plan: Plan, node_id: str | None) -> list[str]:
    """Findings of a `drafter.check` check and the result of a `drafter.compare_vocab` step; reads files."""
    step = plan.step(node_id) if node_id else None
    if step is None:
        return []
    out: list[str] = []
    checks = [a for a in (step.check, step.action) if a and a.kind == "builtin" and a.uses == "drafter.check"]
    if checks and checks[0].with_.get("path"):
        path, target = checks[0].with_["path"], checks[0].with_.get("target")
        try:
            from eagle_console.drafter.check import check_drafter

            report = check_drafter(Path(path), Path(target) if target else None)
            findings = report.get("findings", [])
            verdict = "ok" if report.get("ok") else "NOT ok"
            out.append(f"drafter check {verdict}: {len(findings)} finding(s)")
            out.extend(f"  {f['severity']} {f['code']}: {f['message']}" for f in findings[:4])
        except Exception as exc:  # a missing or broken drafter is exactly what the operator must see
            out.append(f"drafter check: cannot check {path}: {exc}")
    action = step.action
    if action and action.kind == "builtin" and action.uses == "drafter.compare_vocab":
        a, b = action.with_.get("a"), action.with_.get("b")
        if a and b:
            try:
                from eagle_console.drafter.vocab import compare_vocab

                r = compare_vocab(a, b)
                out.append(f"vocab: {r['positions_differ']} positions differ, token sets share "
                           f"{r['target_overlap']} · {r['meaning']}")
            except Exception as exc:
                out.append(f"vocab compare: cannot compare {a} and {b}: {exc}")
    return out


class DetailLine(Static):
    """Updated in place; never remounted."""

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.detail_text = ""
        self._base = ""
        self._drafter: list[str] = []

    def show(self, text: str, drafter: list[str] | None = None) -> None:
        self._base = text
        if drafter is not None:
            self._drafter = drafter
        self._paint()

    def show_drafter(self, lines: list[str]) -> None:
        self._drafter = lines
        self._paint()

    def _paint(self) -> None:
        self.detail_text = "\n".join([self._base, *self._drafter])
        self.update(Text(self.detail_text))
