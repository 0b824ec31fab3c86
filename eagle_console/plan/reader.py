"""Reading plan values with their types checked, each problem reported at its line and column.

The base of the plan builder: the step and plan parts (`plan.steps`, `plan.builder`) read through it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eagle_console.plan.durations import DurationError, parse_duration
from eagle_console.plan.interpolate import InterpolationError, UnknownVariable, interpolate, interpolate_value
from eagle_console.plan.issues import PlanIssue
from eagle_console.plan.model import from_folder
from eagle_console.plan.safe_text import describe_char, first_control
from eagle_console.plan.tomlpos import Path_, Positions, find_positions

PLAN_ID = re.compile(r"[A-Za-z0-9._-]+")
PRIORITIES = ("high", "medium", "low")
# Text the CLI prints and the console shows; a description may span lines.
SHOWN_KEYS = {"title": False, "node": False, "todo_label": False, "description": True}


def id_problem(value: str) -> str | None:
    """Why `value` cannot be a plan, phase or step id, else None: an id names files in the state folder."""
    if not PLAN_ID.fullmatch(value):
        return f"bad id {_show(value)}: use letters, digits, '.', '_' and '-'"
    if value in (".", ".."):
        return (f'bad id "{value}": an id names files and folders of the state, and "{value}" would '
                "point outside them; use letters or digits")
    return None


def _type_name(value: Any) -> str:
    return {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
            "list": "an array", "dict": "a table"}.get(type(value).__name__, type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."



class Reader:
    def __init__(self, path: Path, text: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.folder = path.parent
        self.pos: Positions = find_positions(text)
        self.environ = environ
        self.errors: list[PlanIssue] = []
        self.warnings: list[PlanIssue] = []  # the plan loads; `validate` shows these
        self.vars: dict[str, Any] = {}
        self.broken_vars: set[str] = set()  # defined in [vars], but their value could not be resolved

    # -- reporting -----------------------------------------------------------------------------------------
    def error(self, path: Path_, message: str, at: str = "value") -> None:
        line, col = self.pos.value(path) if at == "value" else self.pos.key(path)
        self.errors.append(PlanIssue(line, col, message))

    def warn(self, path: Path_, message: str) -> None:
        line, col = self.pos.value(path)
        self.warnings.append(PlanIssue(line, col, f"warning: {message}"))

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
        if key in SHOWN_KEYS and not self.shown_text(value, (*path, key), SHOWN_KEYS[key]):
            return None
        out = self.interp(value, (*path, key)) if interp else value
        if out is not None and out != value and key in SHOWN_KEYS and not self.shown_text(
                out, (*path, key), SHOWN_KEYS[key], via_var=True):
            return None
        return out

    def shown_text(self, value: str, path: Path_, multiline: bool, via_var: bool = False) -> bool:
        """False (and an error) if `value` holds a control character that would drive a terminal."""
        at = first_control(value, multiline=multiline)
        if at is None:
            return True
        what = describe_char(value[at])
        where = " (from a ${var})" if via_var else ""
        self.error(path, f'"{path[-1]}" holds {what}{where}: it is printed by status and export and shown '
                         "by the console, where a control character would drive the terminal; remove it")
        return False

    def interp(self, value: str, path: Path_, quote: bool = False) -> str | None:
        try:
            return interpolate(value, self.vars, quote=quote, environ=self.environ)
        except InterpolationError as exc:
            self.error(path, self.var_error(exc))
            return None

    def interp_value(self, value: Any, path: Path_) -> Any:
        try:
            return interpolate_value(value, self.vars, environ=self.environ)
        except InterpolationError as exc:
            self.error(path, self.var_error(exc))
            return None

    def var_error(self, exc: InterpolationError) -> str:
        """A variable defined in [vars] whose own value has an error is not "unknown": say where it is."""
        if isinstance(exc, UnknownVariable) and exc.name in self.broken_vars:
            return (f"variable ${{{exc.name}}} cannot be used: its definition in [vars] has an error "
                    "(reported at its line)")
        return str(exc)

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
        return from_folder(self.folder, value)

    def id_list(self, table: dict[str, Any], key: str, path: Path_) -> tuple[str, ...]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error((*path, key), f'"{key}" must be an array of ids, e.g. {key} = ["0.1", "0.2"]')
            return ()
        return tuple(value)

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
