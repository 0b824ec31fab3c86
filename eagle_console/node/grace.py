"""The grace between SIGTERM and SIGKILL, parsed once for every face (`--grace`, `with.grace`,
EAGLE_CONSOLE_KILL_GRACE) and for the engine's timeouts and rollbacks. Apart from node/kill.py: a step's
run reads the grace without loading psutil and the holder rules."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

GRACE_ENV = "EAGLE_CONSOLE_KILL_GRACE"
DEFAULT_GRACE_S = 10.0
_ZERO = re.compile(r"0+(?:\.0*)?(?:ms|s|m|h|d)?")


class GraceError(ValueError):
    """A grace that is not a duration, or a negative one."""


def parse_grace(value: object, what: str = "grace") -> float:
    """Seconds between SIGTERM and SIGKILL: `10`, `"10"`, `"10s"`, `"1m30s"`; 0 sends SIGKILL at once."""
    from eagle_console.plan.durations import DurationError, parse_duration

    text = value.strip().replace(" ", "") if isinstance(value, str) else None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if (text is not None and text.startswith("-")) or (number and value < 0):  # type: ignore[operator]
        raise GraceError(f"{what}: {value!r} is negative: give the time to wait before SIGKILL, e.g. \"10s\"")
    if (text is not None and _ZERO.fullmatch(text)) or (number and value == 0):
        return 0.0  # parse_duration wants a positive time; a grace of nothing is a valid choice
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise GraceError(f"{what}: {exc}") from None


def resolve_grace(value: object | None = None, what: str = "grace",
                  environ: Mapping[str, str] | None = None) -> float:
    """The grace given (`--grace`, `with.grace`), else EAGLE_CONSOLE_KILL_GRACE, else 10 s; GraceError if bad."""
    if value is not None:
        return parse_grace(value, what)
    raw = (os.environ if environ is None else environ).get(GRACE_ENV, "").strip()
    return parse_grace(raw, GRACE_ENV) if raw else DEFAULT_GRACE_S
