"""A pane's once-a-second /proc fd scan without one readlink per fd of every process each time.

On a node that also runs Ray (GCS, raylet, dashboard, workers: hundreds of sockets and pipes), reading every
fd's link every second tripled the GPUs pane's poll (0.35 → 1.0 % of a core). `LinkCache` keeps each
(pid, fd) → link it read and reads only fds it has not seen; every `full_s` seconds it reads them all again,
so an fd number closed and reopened onto a GPU is seen within that time. A kill never uses it: its scan
reads every link (node.holders.scan), so what is signalled is judged on fresh evidence.
"""

from __future__ import annotations

import time

FULL_S = 5.0


class LinkCache:
    def __init__(self, full_s: float = FULL_S) -> None:
        self.full_s = full_s
        self.links: dict[tuple[str, str], str] = {}
        self._full_at = 0.0

    def begin(self) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
        """(what may be reused this pass, where this pass's links go); a full pass reuses nothing."""
        now = time.monotonic()
        if now - self._full_at >= self.full_s:
            self._full_at = now
            return {}, {}
        return self.links, {}

    def end(self, seen: dict[tuple[str, str], str]) -> None:
        self.links = seen  # closed fds and exited processes drop out
