"""Which live eagle-console run a GPU holder belongs to, read from the process tree alone.

A holder that no journal given here tracks (`orphans` with no PLAN, as an operator types it in a fresh ssh
login; another plan's server seen from this plan's console) but that runs under a live run's supervisor
(`python -m eagle_console.engine.supervise SPEC`) is a step's process of some plan. It stays `other`, as
before, so no kill scope takes more or less; its reason says whose it is ("eagle-console run 29, step 0.3,
state /srv/plans/.eagle-console/demo") where it was blank beside 8 × 80 GB, which invited a `kill -9`.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

import psutil

SUPERVISOR_MODULE = "eagle_console.engine.supervise"
MAX_DEPTH = 5  # supervisor → action → launcher → server → scheduler: a shell or two between is common
SPEC_BYTES = 256 * 1024  # a run's spec is ~2 KiB; a bigger file at that path is not one of ours


def supervising_run(ppid: int | None) -> str | None:
    """The run whose supervisor is among the ancestors from `ppid` up, in words; None if there is none."""
    pid = ppid
    for _ in range(MAX_DEPTH):
        if pid is None or pid <= 1:
            return None
        try:
            proc = psutil.Process(pid)
            argv, parent, started = proc.cmdline(), proc.ppid(), proc.create_time()
        except psutil.Error:
            return None
        spec = spec_argument(argv)
        if spec is not None:
            if not os.path.isabs(spec):
                spec = os.path.join(f"/proc/{pid}/cwd", spec)
            return _described(pid, started, spec)
        pid = parent
    return None


def spec_argument(argv: list[str]) -> str | None:
    """SPEC of `python [opts] -m eagle_console.engine.supervise SPEC ...`, else None."""
    for i, arg in enumerate(argv[:-2]):
        if arg == "-m" and argv[i + 1] == SUPERVISOR_MODULE:
            return argv[i + 2]
    return None


@lru_cache(maxsize=256)
def _described(pid: int, started: float, spec: str) -> str:
    """Keyed by the supervisor's pid and start (a reused pid is another process), read once: a spec does
    not change while its supervisor lives."""
    where = f"supervisor {pid}"
    try:
        with open(spec, "rb") as f:
            doc = json.loads(f.read(SPEC_BYTES))
        run, step, journal = doc["run_id"], doc["step_id"], doc["journal"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"eagle-console run ({where}; its spec unreadable here)"
    return f"eagle-console run {run}, step {step}, state {os.path.dirname(journal)} ({where})"
