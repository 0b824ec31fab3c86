"""Load and validate a game plan (plan-format.md) into `plan.model` records.

Every problem is collected, with the line and column it is at, before anything is refused: the
operator fixes a plan in one pass. Whatever the file holds, the result is a Plan or a PlanError.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from eagle_console.inputfile import NOT_FOUND, PLAN_CAP, InputFileError, read_bytes
from eagle_console.plan.builder import Builder
from eagle_console.plan.hazards import INT_TOO_LONG, long_int_at
from eagle_console.plan.issues import PlanError, PlanIssue
from eagle_console.plan.model import Plan
from eagle_console.plan.tomlscan import DEEP, deep_at, open_triple_at, unclosed_quote
from eagle_console.plan.uses import WithCheck

# Plans are hand-written TOML of a few KB; a file 100 times that is no plan (a 10 MB array took 29 s and
# 2 GB to refuse). parse_plan itself takes any text: benchmarks/plan_load.py measures it on large ones.
PLAN_WHAT = "a plan (hand-written TOML of a few KB)"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def load_plan(path: Path, state_dir: Path | None = None, environ: Mapping[str, str] | None = None,
              check_builtins: WithCheck | None = None, warnings: list[PlanIssue] | None = None) -> Plan:
    """Read and validate the plan at `path`; `state_dir` overrides the plan's own. Raises PlanError.

    `warnings`, when given, receives what is allowed but risky (a `${var}` quoted inside `run`).
    `check_builtins`, given, judges each built-in's `with` table: the `validate` command passes the engine's
    `engine.builtins.check_with` (Builtin.validate); the plan layer imports no built-in, and a plain load
    asks none.
    """
    path = Path(os.path.abspath(path))
    try:  # a regular file of at most 1 MiB: a FIFO, a device or a 10 MB array is refused before parsing
        data = read_bytes(path, PLAN_CAP, PLAN_WHAT)
    except InputFileError as exc:
        why = "cannot read the plan: No such file or directory" if exc.why == NOT_FOUND else f"the plan {exc.why}"
        raise PlanError(path, [PlanIssue(None, None, why)]) from None
    return parse_plan(data, path, state_dir=state_dir, environ=environ, check_builtins=check_builtins,
                      warnings=warnings)


def parse_plan(data: bytes | str, path: Path, state_dir: Path | None = None,
               environ: Mapping[str, str] | None = None, check_builtins: WithCheck | None = None,
               warnings: list[PlanIssue] | None = None) -> Plan:
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
        line, col = _position(text, deep_at(text))
        raise PlanError(path, [PlanIssue(line, col, "arrays or inline tables nested too deeply (more than "
                                                    f"{DEEP} levels): a plan needs a few")]) from None
    except ValueError as exc:  # tomllib's int(): past sys.get_int_max_str_digits() (4300 by default)
        raise PlanError(path, [_long_int_issue(text, exc)]) from None
    builder = Builder(path, text, environ if environ is not None else os.environ)
    try:
        plan = builder.build(doc, Path(state_dir) if state_dir else None)
    except RecursionError:
        builder.errors.append(PlanIssue(None, None, "a value is nested too deeply"))
        builder.stopped, plan = True, None
    if check_builtins is not None and not builder.stopped:
        # Also on a plan with other errors: an unknown built-in in one step must not hide a bad `grace` in
        # another, or the operator fixes one error to be shown the next (one pass, plan-format.md).
        builder.check_builtin_args(doc, check_builtins)
    if warnings is not None:  # beside the errors too: every problem in one pass
        warnings.extend(PlanError(path, _ordered(builder.warnings)).errors)  # escaped like errors
    if builder.errors or plan is None:
        raise PlanError(path, _ordered(builder.errors))
    return plan


def _position(text: str, at: int | None) -> tuple[int | None, int | None]:
    if at is None:
        return None, None
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _long_int_issue(text: str, exc: ValueError) -> PlanIssue:
    line, col = _position(text, long_int_at(text))
    if "digits" not in str(exc):
        return PlanIssue(line, col, f"TOML value cannot be read: {exc}")
    return PlanIssue(line, col, INT_TOO_LONG)


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
        start = unclosed_quote(src)
        if m.group("msg") == "Illegal character '\\n'" and start is not None:
            return PlanIssue(line, start + 1, f"unterminated string: the {src[start]} at line {line}, column "
                                              f"{start + 1} is not closed on its line")
        if src.count("{") > src.count("}"):
            msg += " — an inline table { ... } must be on one line; use a [phase.step.with] table instead"
        return PlanIssue(line, col, msg)
    msg = message.replace("(at end of document)", "").strip()
    if msg == "Unterminated string" and (at := open_triple_at(text)) is not None:
        line, col = _position(text, at)
        return PlanIssue(line, col, f"unterminated string: the {text[at:at + 3]} at line {line}, column {col} "
                                    "is never closed")
    return PlanIssue(text.count("\n") + 1, None, f"TOML syntax: {msg} (at the end of the file)")


__all__ = ["PlanError", "PlanIssue", "load_plan", "parse_plan"]
