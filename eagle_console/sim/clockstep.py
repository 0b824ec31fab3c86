"""Run a command that sees the node as it is after a step of the wall clock.

A step of the wall clock — chrony's `makestep` when a VM resumes from a snapshot, `date -s`, an NTP
correction on a node whose clock drifted — does not touch a process's start (clock ticks since boot,
/proc/PID/stat field 22) but moves /proc/stat's `btime` by the size of the step: the kernel works btime out
at every read as the wall clock minus the time since boot (kernel/time/timekeeping.c, getboottime64). Every
epoch start time built from it (psutil's create_time) moves with it, and so does every `time.time()`.
Stepping this machine's clock would move it for every process on it (a test suite, a CI job), so this shows
one command what a step changes: a private mount namespace with a copy of /proc/stat whose btime is
`seconds` later, and, for its Python processes, a wall clock `seconds` later (sim/wallstep: a
sitecustomize first on PYTHONPATH; the boot and monotonic clocks stay, as in a real step). Needs root (a
mount namespace of one's own); `usable()` says whether it can be done here.

    python -m eagle_console.sim.clockstep --by 2 -- eagle-console status PLAN --json
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from eagle_console.sim import nsview

BTIME = re.compile(rb"^btime (\d+)$", re.MULTILINE)
# The copy is bound over /proc/stat, then the command is run: the namespace goes with the command.
SCRIPT = 'mount --bind "$1" /proc/stat && shift && exec "$@"'


def stepped_stat(seconds: int) -> bytes:
    """/proc/stat as it reads after the wall clock stepped `seconds` (negative: back)."""
    with open("/proc/stat", "rb") as f:
        text = f.read()
    return BTIME.sub(lambda m: b"btime %d" % (int(m.group(1)) + seconds), text, count=1)


def command(argv: list[str], stat_copy: str) -> list[str]:
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", SCRIPT, "sh", stat_copy, *argv]


def usable() -> str | None:
    """None when a command can be shown a stepped clock here, else why not."""
    why, out = nsview.probe("a mount namespace of its own",
                            lambda: run(["cat", "/proc/stat"], 7, capture_output=True, timeout=30))
    if out is None:
        return why
    if out.returncode != 0 or BTIME.search(out.stdout) is None:
        return f"unshare failed: {out.stderr.decode(errors='replace').strip()[:200]}"
    return None


def run(argv: list[str], seconds: int, **popen) -> subprocess.CompletedProcess:
    """Run `argv` to its end as if the wall clock had stepped `seconds`; `popen` as subprocess.run's."""
    popen["env"] = stepped_env(popen.get("env") or os.environ, seconds)
    return nsview.run_with_file(stepped_stat(seconds), "clockstep-stat-", lambda path: command(argv, path),
                                **popen)


def stepped_env(env: Mapping[str, str], seconds: int) -> dict[str, str]:
    """`env` for a command whose Python processes read the wall clock `seconds` later (sim/wallstep)."""
    site = str(Path(__file__).with_name("wallstep"))
    path = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "EAGLE_SIM_WALL_STEP": str(seconds)}


def main(argv: list[str] | None = None) -> int:
    return nsview.main(argv, prog="eagle_console.sim.clockstep", doc=__doc__, flag="--by",
                       flag_kw={"type": int, "required": True,
                                "help": "seconds the wall clock stepped (negative: back)"},
                       usable=usable, run=run)


if __name__ == "__main__":
    sys.exit(main())
