"""Numbers and small structures written for people, the same on every face (export, Results, CLI):
12240 not 1.224e+04, 0.85 not 0.8500000001, a dict as `key: value` pairs, never a Python repr."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "—"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {format_nested(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def format_nested(value: Any) -> str:
    """One value inside a line: a dict as {k: v, …} and a list as […], so where it ends shows."""
    if isinstance(value, Mapping):
        return "{" + format_value(value) + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + format_value(value) + "]"
    return format_value(value)


def _float(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))  # 12240.0 → 12240
    mag = abs(x)
    if mag >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")  # 12240.55, 82.35, 3.5: tok/s, MiB, ms
    if mag >= 1e-3:
        return f"{x:.4g}"  # 0.8512
    return f"{x:.2e}"  # only the really tiny in exponent form


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 line`, `2 lines`, `1 process`, `10 processes`: a count with its noun agreeing."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {plural or (noun + 'es' if noun.endswith(('s', 'sh', 'ch', 'x')) else noun + 's')}"
