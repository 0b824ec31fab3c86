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


def screen_text(app) -> str:
    """The app's current screen (modals over what they cover) as plain text, trailing blanks cut.

    Renders the compositor's full update into a recording Rich console, as Textual's own
    `App.export_screenshot` does, but exports text instead of SVG."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"
