"""A bare Textual app measured like the console: at its first paint it prints its process age and exits."""

from __future__ import annotations

import os
import time

from textual.app import App, ComposeResult
from textual.widgets import Footer, Static


def process_age() -> float:
    """Seconds since this process was spawned, on the clock the console reports with (startup.py's
    CLOCK_MONOTONIC reading at spawn when given, else /proc)."""
    if os.environ.get("EAGLE_CONSOLE_SPAWNED_AT"):
        return time.monotonic() - float(os.environ["EAGLE_CONSOLE_SPAWNED_AT"])
    with open("/proc/self/stat", "rb") as f:
        start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
    with open("/proc/uptime", "rb") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("bare")
        yield Footer()

    def on_mount(self) -> None:
        self.call_after_refresh(self._first_paint)

    def _first_paint(self) -> None:
        self.age = process_age()
        self.exit()


if __name__ == "__main__":
    app = BareApp()
    app.run(headless=True)
    print(f"first-paint {app.age:.4f}s")
