"""A pane's once-a-second /proc fd scan without one readlink per fd of every process each time.

On a node that also runs Ray (GCS, raylet, dashboard, workers: hundreds of sockets and pipes), reading every
fd's link every second tripled the GPUs pane's poll (0.35 → 1.0 % of a core). `LinkCache` keeps each
(pid, fd) → link it read and reads only fds it has not seen; every `full_s` seconds it reads them all again,
so an fd number closed and reopened onto a GPU is seen within that time. A kill never uses it: its scan
reads every link (node.holders.scan), so what is signalled is judged on fresh evidence.
"""

from __future__ import annotations

import time
from typing import Any

FULL_S = 5.0
REUSE_S = 10.0  # a pane's holder scan stands at most this long while nothing says it changed (ScanReuse)


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


class ScanReuse:
    """A pane's holder scan kept while nothing it was made from changed (issue 31: the fd walk of every
    process, ~5 ms a second on a node of 170 processes, was most of an idle console's own CPU; nvitop asks
    NVML alone). Rescanned when the backend's sample differs in what a scan reads from it (each GPU's used
    memory, its processes and their memory), when `runs_at` differs (what the tracked runs are read from:
    the journal's last event id), when a holder exited or got another parent (an orphan, or a run whose
    supervisor died, is seen at once), after `clear()` (a kill, a plan reload), and at least every `full_s`
    seconds: a process holding a device file but no memory is seen within that time."""

    def __init__(self, full_s: float = REUSE_S, proc_root: str = "/proc") -> None:
        self.full_s, self.proc_root = full_s, proc_root
        self._key: object = None
        self._scan: Any = None
        self._at = 0.0
        self.reused = 0  # scans saved, for tests and benchmarks

    def clear(self) -> None:
        self._scan = None

    def get(self, sample: Any, runs_at: object) -> Any:
        """The kept scan if it may stand for a new one of `sample` with the runs as of `runs_at`, else None."""
        scan = self._scan
        if scan is None or time.monotonic() - self._at >= self.full_s or self._key != _key(sample, runs_at):
            return None
        if any(self._parent(h.pid) != h.ppid for h in scan.holders if h.in_namespace):
            return None
        self.reused += 1
        return scan

    def put(self, sample: Any, runs_at: object, scan: Any) -> None:
        self._key, self._scan, self._at = _key(sample, runs_at), scan, time.monotonic()

    def _parent(self, pid: int) -> int | None:
        try:
            with open(f"{self.proc_root}/{pid}/stat", "rb") as f:
                return int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None  # exited: differs from any ppid a holder had


def _key(sample: Any, runs_at: object) -> tuple:
    gpus = tuple((g.index, g.minor, g.memory_used_mib,
                  None if g.processes is None else tuple((p.pid, p.used_mib) for p in g.processes))
                 for g in (sample.gpus if sample is not None else ()))
    return gpus, getattr(sample, "backend", None), getattr(sample, "error", None), runs_at
