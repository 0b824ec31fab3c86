"""What the console needs that the CLI does not: the engine handle its operations take, and the drafter
report of a step whose built-in declares the `drafter_findings` trait (reads files: call it in a worker)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.engine.builtins.base import Builtin
    from eagle_console.engine.runner import Engine as Engine
    from eagle_console.journal import Journal
    from eagle_console.plan.model import Action, Plan, Step


def builtin_class_or_none(name: str | None) -> type[Builtin] | None:
    """The built-in's traits (what `u` does, whether a step previews a kill): the console takes them from ops,
    never from the engine itself. engine.builtins loads at the first call, not before the first frame."""
    from eagle_console.engine.builtins import builtin_class_or_none as find

    return find(name)


def engine_for(plan: Plan, journal: Journal) -> Engine:
    """The engine the step and rollback operations run on, for this plan and journal (cheap to build)."""
    from eagle_console.engine.runner import Engine  # not at the console's start: its first frame needs none

    return Engine(plan, journal)


def drafter_actions(step: Step | None) -> list[Action]:
    """The step's check and action whose built-in declares `drafter_findings` (none for shell steps)."""
    if step is None:
        return []
    out = []
    for action in (step.check, step.action):
        if action is not None and action.kind == "builtin":
            cls = builtin_class_or_none(action.uses)
            if cls is not None and cls.drafter_findings:
                out.append(action)
    return out


def drafter_lines(plan: Plan, item_id: str | None) -> list[str]:
    """One line per drafter report: a drafter check (`with.path`) or a vocab comparison (`with.a`, `with.b`)."""
    out: list[str] = []
    for action in drafter_actions(plan.step(item_id) if item_id else None):
        args = action.with_
        if args.get("path"):  # the step reads them from the plan's folder: so does this line
            target = args.get("target")
            out.append(_check_line(plan.path_of(args["path"]), plan.path_of(target) if target else None))
        elif args.get("a") and args.get("b"):
            out.append(_vocab_line(plan.path_of(args["a"]), plan.path_of(args["b"])))
    return out


def _check_line(path: Path, target: Path | None) -> str:
    from eagle_console.drafter.check import check_drafter

    try:
        report = check_drafter(path, target)
    except Exception as exc:  # a missing or unreadable drafter is exactly what the operator must see
        return f"drafter check: cannot check {path}: {exc}"
    findings = report.get("findings", [])
    return (f"drafter check {'ok' if report.get('ok') else 'NOT ok'}: "
            + ("; ".join(f"{f['severity']} {f['code']}" for f in findings) or "no findings"))


def _vocab_line(a: Path, b: Path) -> str:
    from eagle_console.drafter.vocab import compare_vocab, verdict

    try:
        r = compare_vocab(a, b)
    except Exception as exc:
        return f"vocab compare: cannot compare {a} and {b}: {exc}"
    return f"vocab: {verdict(r)}"  # two lines at 80 columns: the long `meaning` ended mid-sentence there


def drafter_inputs_stamp(plan: Plan, item_id: str | None) -> tuple:
    """What the step's drafter report reads, as (path, mtime_ns, size) of each input and of the files directly
    in it (a drafter folder's config.json is rewritten by `json.set`): the report is stale when this changes."""
    out: list[tuple[str, int, int]] = []
    for action in drafter_actions(plan.step(item_id) if item_id else None):
        for key in ("path", "target", "a", "b"):
            value = action.with_.get(key)
            if value:
                out.extend(_stamp(Path(value)))
    return tuple(out)


def _stamp(path: Path) -> list[tuple[str, int, int]]:
    try:
        st = path.stat()
    except OSError:
        return [(str(path), -1, -1)]
    out = [(str(path), st.st_mtime_ns, st.st_size)]
    if path.is_dir():
        try:
            entries = sorted(path.iterdir())
        except OSError:
            entries = []
        for entry in entries:
            try:
                est = entry.stat()
            except OSError:
                continue
            out.append((str(entry), est.st_mtime_ns, est.st_size))
    return out
