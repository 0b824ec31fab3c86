"""Load and validate a game plan (plan-format.md) into `plan.model` records.

Every problem is collected, with the line and column it is at, before anything is refused: the
operator fixes a plan in one pass. Whatever the file holds, the result is a Plan or a PlanError.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from eagle_console.plan.durations import DurationError, parse_duration
from eagle_console.plan.export import TODO_LABEL_FIELDS, label_fields
from eagle_console.plan.interpolate import (
    InterpolationError,
    interpolate,
    interpolate_value,
    resolve_vars,
)
from eagle_console.plan.model import BUILTINS, Action, ExtractionWatch, Phase, Plan, Ready, Step
from eagle_console.plan.tomlpos import Path_, Positions, find_positions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PLAN_ID = re.compile(r"[A-Za-z0-9._-]+")
PRIORITIES = ("high", "medium", "low")

TOP_KEYS = ("plan", "vars", "env", "phase")
PLAN_KEYS = ("id", "title", "node", "description", "todo_label", "baseline", "state_dir")
PHASE_KEYS = ("id", "title", "priority", "needs", "description", "step")
STEP_KEYS = ("id", "title", "priority", "description", "needs", "run", "uses", "with", "cwd", "env",
             "timeout", "service", "ready", "check", "rollback", "log", "watch", "confirm")
ACTION_KEYS = ("uses", "with")
READY_KEYS = ("http", "log", "timeout")
WATCH_KEYS = ("extraction",)
EXTRACTION_KEYS = ("log", "output", "pattern", "total")
SERVICE_BUILTINS = frozenset({"sglang.server"})
CONFIRM_BUILTINS = frozenset({"gpu.kill"})


class PlanIssue(NamedTuple):
    line: int | None
    column: int | None
    message: str


class PlanError(Exception):
    """The plan cannot be used; `errors` holds every problem found, in file order."""

    def __init__(self, path: Path, errors: list[PlanIssue]) -> None:
        self.path = Path(path)
        self.errors = errors
        super().__init__(self.format_first())

    @staticmethod
    def _fmt(path: Path, issue: PlanIssue) -> str:
        where = str(path)
        if issue.line is not None:
            where += f":{issue.line}"
            if issue.column is not None:
                where += f":{issue.column}"
        return f"{where}: {issue.message}"

    def format_first(self) -> str:
        if not self.errors:
            return f"{self.path}: invalid plan"
        more = len(self.errors) - 1
        tail = f" (and {more} more error{'s' if more > 1 else ''}; run `eagle-console validate`)" if more else ""
        return self._fmt(self.path, self.errors[0]) + tail

    def format_all(self) -> list[str]:
        return [self._fmt(self.path, e) for e in self.errors]


def load_plan(path: Path, state_dir: Path | None = None, environ: Mapping[str, str] | None = None,
              check_builtins: bool = False) -> Plan:
    """Read and validate the plan at `path`; `state_dir` overrides the plan's own. Raises PlanError.

    `check_builtins` also asks each built-in whether its `with` table is right (`Builtin.validate`);
    that imports the engine's built-ins, so the `validate` command does it and a plain load does not.
    """
    path = Path(os.path.abspath(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PlanError(path, [PlanIssue(None, None, f"cannot read the plan: {exc.strerror or exc}")]) from None
    return parse_plan(data, path, state_dir=state_dir, environ=environ, check_builtins=check_builtins)


def parse_plan(data: bytes | str, path: Path, state_dir: Path | None = None,
               environ: Mapping[str, str] | None = None, check_builtins: bool = False) -> Plan:
    """Validate plan source text (bytes must be UTF-8) as if read from `path`."""
    path = Path(os.path.abspath(path))
    text, issue = _decode(data)
    if issue:
        raise PlanError(path, [issue])
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(path, [_syntax_issue(str(exc), text)]) from None
    except RecursionError:
        raise PlanError(path, [PlanIssue(None, None, "the TOML is nested too deeply")]) from None
    builder = _Builder(path, text, environ if environ is not None else os.environ)
    try:
        plan = builder.build(doc, Path(state_dir) if state_dir else None)
    except RecursionError:
        builder.errors.append(PlanIssue(None, None, "a value is nested too deeply"))
        plan = None
    if plan is not None and check_builtins:
        builder.check_builtin_args(doc)
    if builder.errors or plan is None:
        raise PlanError(path, _ordered(builder.errors))
    return plan


def _ordered(errors: list[PlanIssue]) -> list[PlanIssue]:
    unique = list(dict.fromkeys(errors))
    return sorted(unique, key=lambda e: (e.line is None, e.line or 0, e.column or 0))


def _decode(data: bytes | str) -> tuple[str, PlanIssue | None]:
    if isinstance(data, str):
        return data, None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return "", PlanIssue(line, col, f"the plan is not UTF-8 text (byte 0x{data[exc.start]:02x}); "
                                        "save it as UTF-8")


_AT = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)\s*$", re.S)


def _syntax_issue(message: str, text: str) -> PlanIssue:
    m = _AT.match(message)
    if m:
        line, col = int(m.group("line")), int(m.group("col"))
        msg = f"TOML syntax: {m.group('msg')}"
        lines = text.splitlines()
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        if src.count("{") > src.count("}"):
            msg += " — an inline table { ... } must be on one line; use a [phase.step.with] table instead"
        return PlanIssue(line, col, msg)
    msg = message.replace("(at end of document)", "").strip()
    return PlanIssue(text.count("\n") + 1, None, f"TOML syntax: {msg} (at the end of the file)")


def _type_name(value: Any) -> str:
    return {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
            "list": "an array", "dict": "a table"}.get(type(value).__name__, type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Builder:
    def __init__(self, path: Path, text: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.folder = path.parent
        self.pos: Positions = find_positions(text)
        self.environ = environ
        self.errors: list[PlanIssue] = []
        self.vars: dict[str, Any] = {}

    # -- reporting -----------------------------------------------------------------------------------------
    def error(self, path: Path_, message: str, at: str = "value") -> None:
        line, col = self.pos.value(path) if at == "value" else self.pos.key(path)
        self.errors.append(PlanIssue(line, col, message))

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...], path: Path_, what: str) -> None:
        for key in table:
            if key in allowed:
                continue
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            hint = f'; did you mean "{close[0]}"?' if close else f"; known keys: {', '.join(allowed)}"
            self.error((*path, key), f'unknown key "{key}" in {what}{hint}', at="key")

    # -- typed getters ---------------------------------------------------------------------------------------
    def text(self, table: dict[str, Any], key: str, path: Path_, *, required: bool = False,
             what: str = "", interp: bool = True) -> str | None:
        if key not in table:
            if required:
                self.error(path, f'{what} needs "{key}" (add {key} = "...")', at="key")
            return None
        value = table[key]
        if not isinstance(value, str):
            self.error((*path, key), f'"{key}" must be a string, not {_type_name(value)}')
            return None
        if required and not value.strip():
            self.error((*path, key), f'"{key}" must not be empty')
            return None
        return self.interp(value, (*path, key)) if interp else value

    def interp(self, value: str, path: Path_, quote: bool = False) -> str | None:
        try:
            return interpolate(value, self.vars, quote=quote, environ=self.environ)
        except InterpolationError as exc:
            self.error(path, str(exc))
            return None

    def interp_value(self, value: Any, path: Path_) -> Any:
        try:
            return interpolate_value(value, self.vars, environ=self.environ)
        except InterpolationError as exc:
            self.error(path, str(exc))
            return None

    def table(self, parent: dict[str, Any], key: str, path: Path_) -> dict[str, Any] | None:
        if key not in parent:
            return None
        value = parent[key]
        if not isinstance(value, dict):
            self.error((*path, key), f'"{key}" must be a table, not {_type_name(value)}')
            return None
        return value

    def boolean(self, table: dict[str, Any], key: str, path: Path_) -> bool | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, bool):
            self.error((*path, key), f'"{key}" must be true or false, not {_type_name(value)}')
            return None
        return value

    def priority(self, table: dict[str, Any], path: Path_) -> str:
        value = table.get("priority", "medium")
        if value not in PRIORITIES or not isinstance(value, str):
            self.error((*path, "priority"), f"bad priority {_show(value)}: use one of high, medium, low")
            return "medium"
        return value

    def duration(self, table: dict[str, Any], key: str, path: Path_) -> float | None:
        if key not in table:
            return None
        value = table[key]
        if isinstance(value, str):
            value = self.interp(value, (*path, key))
            if value is None:
                return None
        try:
            return parse_duration(value)
        except DurationError as exc:
            self.error((*path, key), f'"{key}": {exc}')
            return None

    def local_path(self, table: dict[str, Any], key: str, path: Path_) -> Path | None:
        value = self.text(table, key, path)
        if value is None:
            return None
        if not value.strip():
            self.error((*path, key), f'"{key}" must not be empty')
            return None
        return Path(os.path.normpath(self.folder / os.path.expanduser(value)))

    def id_list(self, table: dict[str, Any], key: str, path: Path_) -> tuple[str, ...]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error((*path, key), f'"{key}" must be an array of ids, e.g. {key} = ["0.1", "0.2"]')
            return ()
        return tuple(value)

    # -- the document -------------------------------------------------------------------------------------------
    def build(self, doc: dict[str, Any], state_dir: Path | None) -> Plan | None:
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
        if plan_id is not None and not PLAN_ID.fullmatch(plan_id):
            self.error((*p, "id"), f"bad plan id {_show(plan_id)}: use letters, digits, '.', '_' and '-'")
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

        phases = self.build_phases(doc, env)
        if self.errors or plan_id is None or title is None or phases is None:
            return None
        resolved_state = (Path(os.path.abspath(state_dir)) if state_dir else
                          plan_state or self.folder / ".eagle-console" / plan_id)
        return Plan(id=plan_id, title=title, path=self.path, state_dir=resolved_state, phases=phases,
                    node=node, description=description, todo_label=todo_label or "{title}",
                    baseline=baseline, vars=dict(self.vars), env=env)

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

    def build_baseline(self, head: dict[str, Any], p: Path_) -> dict[str, float]:
        table = self.table(head, "baseline", p)
        out: dict[str, float] = {}
        for key, value in (table or {}).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.error((*p, "baseline", key), f'baseline "{key}" must be a number, not {_type_name(value)}')
                continue
            try:
                out[key] = float(value)
            except OverflowError:
                self.error((*p, "baseline", key), f'baseline "{key}" is too large')
        return out

    def build_env(self, value: Any, path: Path_) -> dict[str, str]:
        if not isinstance(value, dict):
            self.error(path, f"env must be a table of NAME = \"value\", not {_type_name(value)}")
            return {}
        out: dict[str, str] = {}
        for name, v in value.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                self.error((*path, name), f'bad environment variable name "{name}"', at="key")
            elif isinstance(v, bool) or not isinstance(v, (str, int, float)):
                self.error((*path, name), f'env "{name}" must be a string or a number, not {_type_name(v)} '
                                          '(quote it: "1")')
            else:
                text = self.interp(v, (*path, name)) if isinstance(v, str) else str(v)
                if text is not None:
                    out[name] = text
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

    def build_id(self, table: dict[str, Any], path: Path_, what: str, seen: dict[str, Path_]) -> str | None:
        value = self.text(table, "id", path, required=True, what=what, interp=False)
        if value is None:
            return None
        if not PLAN_ID.fullmatch(value):
            self.error((*path, "id"), f"bad id {_show(value)}: use letters, digits, '.', '_' and '-'")
            return None
        if value in seen:
            first, _ = self.pos.value((*seen[value], "id"))
            where = f" (first at line {first})" if first else ""
            self.error((*path, "id"), f'duplicate id "{value}"{where}: ids are unique across the whole plan')
            return None
        seen[value] = path
        return value

    def build_step(self, st: dict[str, Any], sp: Path_, phase_id: str, phase_needs: tuple[str, ...],
                   plan_env: dict[str, str], seen: dict[str, Path_]) -> Step | None:
        self.check_keys(st, STEP_KEYS, sp, "[[phase.step]]")
        sid = self.build_id(st, sp, "[[phase.step]]", seen)
        title = self.text(st, "title", sp, required=True, what="[[phase.step]]")
        priority = self.priority(st, sp)
        description = self.text(st, "description", sp)
        # A phase's needs hold for each of its steps: that is where the engine enforces them.
        own = self.id_list(st, "needs", sp)
        needs = tuple(dict.fromkeys((*phase_needs, *own)))
        action = self.build_main_action(st, sp)
        uses = action.uses if action and action.kind == "builtin" else None
        env = self.build_env(st["env"], (*sp, "env")) if "env" in st else {}
        service = self.boolean(st, "service", sp)
        if uses in SERVICE_BUILTINS:
            if service is False:
                self.error((*sp, "service"), f"{uses} is always a service; remove service = false")
            service = True
        ready = self.build_ready(st, sp)
        if ready is not None and not service:
            self.error((*sp, "ready"), "ready applies to services only; add service = true")
        if service and action is None:
            self.error((*sp, "service"), "a service needs a run command or uses = \"sglang.server\"")
        confirm = self.boolean(st, "confirm", sp)
        check = self.build_aux_action(st, "check", sp)
        rollback = self.build_aux_action(st, "rollback", sp)
        watch = self.build_watch(st, sp)
        step = Step(
            id=sid or "?", title=title or "", phase_id=phase_id, priority=priority,  # type: ignore[arg-type]
            description=description, needs=needs, action=action,
            cwd=self.local_path(st, "cwd", sp), env={**plan_env, **env},
            timeout_s=self.duration(st, "timeout", sp), service=bool(service), ready=ready,
            check=check, rollback=rollback, log=self.local_path(st, "log", sp), watch_extraction=watch,
            confirm=confirm if confirm is not None else uses in CONFIRM_BUILTINS,
            line=self.pos.key(sp)[0],
        )
        return step if sid is not None and title is not None else None

    def build_main_action(self, st: dict[str, Any], sp: Path_) -> Action | None:
        if "run" in st and "uses" in st:
            self.error((*sp, "uses"), "a step has run or uses, not both: remove one (a check goes in check)",
                       at="key")
            return None
        if "with" in st and "uses" not in st:
            self.error((*sp, "with"), 'with gives the arguments of a built-in: add uses = "..." or remove it',
                       at="key")
            return None
        if "run" in st:
            return self.command(st["run"], (*sp, "run"), "run")
        if "uses" in st:
            return self.builtin(st, sp)
        return None

    def command(self, value: Any, path: Path_, key: str) -> Action | None:
        if isinstance(value, str):
            if not value.strip():
                self.error(path, f'"{key}" is an empty command')
                return None
            shell = self.interp(value, path, quote=True)
            return Action("shell", shell=shell) if shell is not None else None
        if isinstance(value, list):
            if not value or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
                self.error(path, f'"{key}" as an argv list must be a non-empty array of strings')
                return None
            argv = [self.interp(v, (*path, i)) if isinstance(v, str) else str(v) for i, v in enumerate(value)]
            if any(a is None for a in argv):
                return None
            return Action("argv", argv=tuple(a for a in argv if a is not None))
        self.error(path, f'"{key}" must be a shell string or an argv array, not {_type_name(value)}')
        return None

    def builtin(self, table: dict[str, Any], path: Path_) -> Action | None:
        uses = table.get("uses")
        if not isinstance(uses, str):
            self.error((*path, "uses"), f'"uses" must be a built-in name, not {_type_name(uses)}')
            return None
        if uses not in BUILTINS:
            close = difflib.get_close_matches(uses, BUILTINS, n=1, cutoff=0.5)
            hint = f'; did you mean "{close[0]}"?' if close else f"; built-ins: {', '.join(BUILTINS)}"
            self.error((*path, "uses"), f'unknown built-in "{uses}"{hint}')
            return None
        args = self.table(table, "with", path)
        if args is None and "with" in table:
            return None
        with_ = self.interp_value(args or {}, (*path, "with"))
        if with_ is None:
            return None
        return Action("builtin", uses=uses, with_=with_)

    def build_aux_action(self, st: dict[str, Any], key: str, sp: Path_) -> Action | None:
        if key not in st:
            return None
        value = st[key]
        path = (*sp, key)
        if isinstance(value, dict):
            self.check_keys(value, ACTION_KEYS, path, key)
            if "uses" not in value:
                self.error(path, f'{key} as a table needs uses = "<built-in>"', at="key")
                return None
            return self.builtin(value, path)
        return self.command(value, path, key)

    def build_ready(self, st: dict[str, Any], sp: Path_) -> Ready | None:
        table = self.table(st, "ready", sp)
        if table is None:
            return None
        path = (*sp, "ready")
        self.check_keys(table, READY_KEYS, path, "ready")
        http = self.text(table, "http", path)
        log = self.text(table, "log", path)
        if ("http" in table) == ("log" in table):
            self.error(path, 'ready needs exactly one of http = "URL" or log = "REGEX"', at="key")
            return None
        if http is not None and not re.match(r"https?://", http):
            self.error((*path, "http"), f"ready.http must be an http:// or https:// URL, not {_show(http)}")
        if log is not None:
            try:
                re.compile(log)
            except re.error as exc:
                self.error((*path, "log"), f"ready.log is not a valid regex: {exc}")
        return Ready(http=http, log=log, timeout_s=self.duration(table, "timeout", path))

    def build_watch(self, st: dict[str, Any], sp: Path_) -> ExtractionWatch | None:
        table = self.table(st, "watch", sp)
        if table is None:
            return None
        path = (*sp, "watch")
        self.check_keys(table, WATCH_KEYS, path, "watch")
        ext = self.table(table, "extraction", path)
        if ext is None:
            return None
        ep = (*path, "extraction")
        self.check_keys(ext, EXTRACTION_KEYS, ep, "watch.extraction")
        pattern = self.text(ext, "pattern", ep) or "*.pt"
        total = ext.get("total")
        if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total <= 0):
            self.error((*ep, "total"), "watch.extraction.total must be a positive integer (the sample count)")
            total = None
        return ExtractionWatch(log=self.local_path(ext, "log", ep), output=self.local_path(ext, "output", ep),
                               pattern=pattern, total=total)

    # -- built-in arguments ---------------------------------------------------------------------------------------
    def check_builtin_args(self, doc: dict[str, Any]) -> None:
        from eagle_console.engine.builtins import get_builtin

        for pi, ph in enumerate(doc.get("phase", [])):
            for si, st in enumerate(ph.get("step", [])):
                sp: Path_ = ("phase", pi, "step", si)
                for path, table in ((sp, st), ((*sp, "check"), st.get("check")),
                                    ((*sp, "rollback"), st.get("rollback"))):
                    if not isinstance(table, dict) or "uses" not in table:
                        continue
                    action = self.builtin(table, path)
                    if action is None:
                        continue
                    try:
                        problems = get_builtin(action.uses or "").validate(dict(action.with_))
                    except Exception:  # a built-in missing from this install is no fault of the plan
                        continue
                    for problem in problems:
                        where = (*path, "with") if "with" in table else (*path, "uses")
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
                    if isinstance(need, str) and need not in seen:
                        close = difflib.get_close_matches(need, known, n=1)
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
        color: dict[str, int] = {}
        reported: set[frozenset[str]] = set()

        def visit(node: str, trail: list[str]) -> None:
            color[node] = 1
            trail.append(node)
            for nxt in edges.get(node, []):
                if color.get(nxt) == 1:
                    cycle = trail[trail.index(nxt):] + [nxt]
                    key = frozenset(cycle)
                    if key not in reported:
                        reported.add(key)
                        self.error(needs_at.get(cycle[0], ()), "needs cycle: " + " -> ".join(cycle)
                                   + "; one of these must not wait for the other")
                elif nxt in edges and color.get(nxt) is None:
                    visit(nxt, trail)
            trail.pop()
            color[node] = 2

        for node in edges:
            if color.get(node) is None:
                visit(node, [])


__all__ = ["PlanError", "PlanIssue", "load_plan", "parse_plan"]
