"""Durations in plans: `"90s"`, `"30m"`, `"2h"`, `"1h30m"`, or a number of seconds."""

from __future__ import annotations

import math
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


class DurationError(ValueError):
    pass


def parse_duration(value: object) -> float:
    """Seconds (> 0, finite) from a number or a string of number+unit parts; DurationError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DurationError(f"a duration is a string like \"90s\", \"30m\", \"2h\" or a number of seconds, "
                            f"not {type(value).__name__}")
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        else:
            pos, seconds = 0, 0.0
            for m in _PART.finditer(text):
                if m.start() != pos:
                    break
                seconds += float(m.group(1)) * _UNITS[m.group(2)]
                pos = m.end()
            if not text or pos != len(text):
                raise DurationError(f"bad duration {value!r}: use a number with a unit (ms, s, m, h, d), "
                                    "e.g. \"90s\", \"30m\", \"1h30m\"")
    else:
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise DurationError(f"bad duration {value!r}: it must be a positive, finite time")
    return seconds
