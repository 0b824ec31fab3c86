"""The startup benchmark's measuring point: how long the console took to its first frame, and what it loaded."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

EXIT_AFTER_FIRST_PAINT = "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT"


class FirstPaint(NamedTuple):
    seconds: float  # from process start to the first refresh
    modules: dict[str, bool]


def benchmark_exit(app: Any) -> bool:
    """At the first frame: when the startup benchmark asked, keep the time and what was loaded, and exit."""
    if not os.environ.get(EXIT_AFTER_FIRST_PAINT):
        return False
    app.first_paint = FirstPaint(process_age(), {m: m in sys.modules for m in ("torch", "safetensors", "numpy")})
    app.exit(0)
    return True


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


class FirstFrameGate:
    """What waits for the console's first settled frame: the panes' pollers (tui/panes/_logview.Poller).
    Threads started at the first refresh held the GIL through the refreshes still to come before the
    screen settled (importing psutil and the log parser, opening NVML)."""

    def __init__(self, app: Any) -> None:
        self._waiting: list[Callable[[], Any]] | None = []
        _GATES[app] = self

    def call(self, app: Any, fn: Callable[..., Any], *args: Any) -> None:
        """`fn(*args)` once the gate opens; after it did, after the next refresh."""
        if self._waiting is None:
            app.call_after_refresh(fn, *args)
        else:
            self._waiting.append(partial(fn, *args))

    def open(self) -> None:
        waiting, self._waiting = self._waiting or [], None
        for fn in waiting:
            fn()


_GATES: WeakKeyDictionary[Any, FirstFrameGate] = WeakKeyDictionary()


def first_frame_gate(app: Any) -> FirstFrameGate | None:
    """The gate `app` opens at its first settled frame: the console's; an App of a test or a tool has none.
    Looked up here rather than asked of the App (tests/test_tui_layering.py: no attribute probes)."""
    return _GATES.get(app)
