"""The startup benchmark's measuring point: how long the console took to its first frame, and what it loaded."""

from __future__ import annotations

import os
import time
from typing import NamedTuple

EXIT_AFTER_FIRST_PAINT = "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT"


class FirstPaint(NamedTuple):
    seconds: float  # from process start to the first refresh
    modules: dict[str, bool]


def process_age() -> float:
    """Seconds since this process was spawned: from the spawner's CLOCK_MONOTONIC reading when it passed
    one (benchmarks/startup.py), else from /proc (10 ms ticks; Linux), else 0.0."""
    spawned = os.environ.get("EAGLE_CONSOLE_SPAWNED_AT")
    if spawned:
        return time.monotonic() - float(spawned)
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
