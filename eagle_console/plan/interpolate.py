"""`${name}` interpolation of plan strings: vars, `${env:NAME}`, and `$${` for a literal `${`.

Values put into a shell string are shell-quoted, so a path with a space or a `;` stays one word;
argv lists and `with` values get the raw value, and a string that is exactly `"${name}"` keeps the
var's own type (an int port stays an int).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

_NAME = re.compile(r"(?:env:)?[A-Za-z_][A-Za-z0-9_.-]*")
_EXACT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


class InterpolationError(ValueError):
    pass


class UnknownVariable(InterpolationError):
    """`${name}` names no usable variable."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _lookup(name: str, variables: Mapping[str, Any], environ: Mapping[str, str],
            resolve: Callable[[str], Any] | None) -> Any:
    if name.startswith("env:"):
        env_name = name[4:]
        if env_name not in environ:
            raise InterpolationError(f"environment variable {env_name} is not set (used as ${{{name}}})")
        return environ[env_name]
    if resolve is not None:
        return resolve(name)
    if name not in variables:
        raise UnknownVariable(name, unknown_var_message(name, variables))
    return variables[name]


def unknown_var_message(name: str, variables: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, [v for v in variables if v != name], n=1)  # never itself
    hint = f"; did you mean ${{{close[0]}}}?" if close else "; define it in [vars]"
    return f"unknown variable ${{{name}}}{hint}"


def interpolate(text: str, variables: Mapping[str, Any], *, quote: bool = False,
                environ: Mapping[str, str] | None = None,
                resolve: Callable[[str], Any] | None = None) -> str:
    """Replace every `${name}` in text; `quote` shell-quotes each inserted value."""
    env = os.environ if environ is None else environ
    out: list[str] = []
    i = 0
    while True:
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        if text.startswith("$${", j):
            out.append("${")
            i = j + 3
            continue
        if not text.startswith("${", j):
            out.append("$")
            i = j + 1
            continue
        end = text.find("}", j + 2)
        if end < 0:
            raise InterpolationError(f"unclosed ${{ in {text!r}: write ${{name}}, or $${{ for a literal ${{")
        name = text[j + 2:end]
        if not _NAME.fullmatch(name):
            raise InterpolationError(f"bad variable reference ${{{name}}}: names are letters, digits, _ . -"
                                     " (or env:NAME)")
        value = _text(_lookup(name, variables, env, resolve))
        out.append(shlex.quote(value) if quote else value)
        i = end + 1


def interpolate_value(value: Any, variables: Mapping[str, Any], *,
                      environ: Mapping[str, str] | None = None,
                      resolve: Callable[[str], Any] | None = None) -> Any:
    """Interpolate strings inside any value (tables, arrays); exactly "${name}" keeps the var's type."""
    if isinstance(value, str):
        m = _EXACT.fullmatch(value)
        if m:
            return _lookup(m.group(1), variables, os.environ if environ is None else environ, resolve)
        return interpolate(value, variables, environ=environ, resolve=resolve)
    if isinstance(value, dict):
        return {k: interpolate_value(v, variables, environ=environ, resolve=resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_value(v, variables, environ=environ, resolve=resolve) for v in value]
    return value


def resolve_vars(raw: Mapping[str, Any], environ: Mapping[str, str] | None = None
                 ) -> tuple[dict[str, Any], dict[str, str]]:
    """Resolve vars that use other vars. Returns (values, {var: error}) — cycles and unknown names."""
    done: dict[str, Any] = {}
    errors: dict[str, str] = {}
    stack: list[str] = []

    def resolve(name: str) -> Any:
        if name in done:
            return done[name]
        if name not in raw:
            raise UnknownVariable(name, unknown_var_message(name, raw))
        if name in stack:
            cycle = " -> ".join([*stack[stack.index(name):], name])
            raise InterpolationError(f"variable cycle: {cycle}")
        stack.append(name)
        try:
            value = interpolate_value(raw[name], raw, environ=environ, resolve=resolve)
        finally:
            stack.pop()
        done[name] = value
        return value

    for name in raw:
        try:
            resolve(name)
        except InterpolationError as exc:
            errors[name] = str(exc)
    return done, errors
