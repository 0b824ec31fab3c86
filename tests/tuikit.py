"""Helpers for console tests driven by App.run_test()."""

from __future__ import annotations

import time


async def until(pilot, predicate, timeout: float = 15.0, what: str = "condition"):
    """Let the app run until `predicate()` is truthy (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"{what} not met within {timeout}s")
