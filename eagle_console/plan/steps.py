"""Building steps: ids, actions (a command or a built-in with its `with`), ready, watch."""

from __future__ import annotations

import difflib
import re
from typing import Any

from eagle_console.plan.hazards import self_quoted_vars
from eagle_console.plan.model import Action, ExtractionWatch, Ready, Step
from eagle_console.plan.reader import Reader, _show, _type_name, id_problem
from eagle_console.plan.tomlpos import Path_
from eagle_console.plan.uses import BUILTINS, uses_traits

STEP_KEYS = ("id", "title", "priority", "description", "needs", "run", "uses", "with", "cwd", "env",
             "timeout", "service", "ready", "check", "rollback", "log", "watch", "confirm", "node",
             "approve")
ACTION_KEYS = ("uses", "with")
READY_KEYS = ("http", "log", "timeout")
WATCH_KEYS = ("extraction",)
EXTRACTION_KEYS = ("log", "output", "pattern", "total")
NODE_NAME = re.compile(r"[A-Za-z0-9._-]+")


class StepReader(Reader):
    def build_id(self, table: dict[str, Any], path: Path_, what: str, seen: dict[str, Path_]) -> str | None:
        value = self.text(table, "id", path, required=True, what=what, interp=False)
        if value is None:
            return None
        problem = id_problem(value)
        if problem:
            self.error((*path, "id"), problem)
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
        traits = uses_traits(uses)
        service = self.boolean(st, "service", sp)
        if traits is not None and traits.service:
            if service is False:
                self.error((*sp, "service"), f"{uses} is always a service; remove service = false")
            service = True
        ready = self.build_ready(st, sp)
        if ready is not None and not service:
            self.error((*sp, "ready"), "ready applies to services only; add service = true")
        if service and action is None:
            self.error((*sp, "service"), "a service needs a run command or uses = \"sglang.server\"")
        confirm = self.boolean(st, "confirm", sp)
        approve = self.boolean(st, "approve", sp)
        check = self.build_aux_action(st, "check", sp)
        rollback = self.build_aux_action(st, "rollback", sp)
        watch = self.build_watch(st, sp)
        node = self.text(st, "node", sp)
        if node is not None and not NODE_NAME.fullmatch(node):
            self.error((*sp, "node"), f"bad node name {_show(node)}: letters, digits, '.', '_' and '-' "
                                      "(the raylet's resource is eagle-node:NAME)")
            node = None
        step = Step(
            id=sid or "?", title=title or "", phase_id=phase_id, priority=priority,  # type: ignore[arg-type]
            description=description, needs=needs, action=action,
            cwd=self.local_path(st, "cwd", sp), env={**plan_env, **env},
            timeout_s=self.duration(st, "timeout", sp), service=bool(service), ready=ready,
            check=check, rollback=rollback, log=self.local_path(st, "log", sp), watch_extraction=watch,
            confirm=confirm if confirm is not None else bool(traits and traits.confirm),
            line=self.pos.key(sp)[0], node=node, approve=bool(approve),
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
            for name in self_quoted_vars(value):
                self.warn(path, f'"{key}" puts ${{{name}}} inside quotes; the value is shell-quoted already, '
                                "and inside quotes that quoting is undone (a value holding a quote would run "
                                f"as commands): write ${{{name}}} without quotes")
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
            close = difflib.get_close_matches(uses, list(BUILTINS), n=1, cutoff=0.5)
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
