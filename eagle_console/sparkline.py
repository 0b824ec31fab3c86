"""A sparkline of numbers in block characters, for both faces (the Server pane and `server-log`)."""

from __future__ import annotations

from collections.abc import Iterable

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Iterable[float | None], width: int | None = None) -> str:
    """One bar per value, scaled from the lowest to the highest; None (not measured) is left out and
    `width` keeps the newest values only. A flat series is all low bars."""
    vals = [v for v in values if v is not None]
    if width is not None:
        vals = vals[-width:] if width > 0 else []
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = (hi - lo) or 1.0
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / span * (len(BARS) - 1) + 0.5))] for v in vals)
