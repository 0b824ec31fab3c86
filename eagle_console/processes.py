"""Process helpers for runs: liveness with pid-reuse protection, and stopping a whole session."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil  # loaded where a session is swept: `status`, `mark` and the console's liveness checks need
    # only /proc (psutil is ~15 ms of a CLI process's ~110)

CTIME_SLACK_S = 0.05  # create times read twice differ by psutil's clock-tick rounding
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | None) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (the state first, field 3), or None when there is
    no such process. Split after the last `)`: a command name may hold spaces and parens."""
    if not pid:
        return None
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None


def _started(fields: list[bytes]) -> float | None:
    """When the process started, in seconds since the epoch, as psutil's Process.create_time gives it on
    Linux (psutil/_pslinux.py, 5.9-7.2: the starttime field in clock ticks, plus /proc/stat's btime), so
    either may be compared with the other."""
    try:
        return int(fields[19]) / CLOCK_TICKS + _boot_time()  # field 22
    except (OSError, IndexError, ValueError):
        return None


def create_time(pid: int) -> float | None:
    """When `pid` started (`_started`), None when there is no such process."""
    fields = _stat(pid)
    return _started(fields) if fields is not None else None


def _boot_time() -> float:
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


def open_live(pids: list[int]) -> list[psutil.Process]:
    """psutil handles for those of `pids` still running. Each is opened once, inside the try: a pid can exit
    between a check and `psutil.Process()` (pid_exists then Process() raced and failed CI)."""
    import psutil

    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return procs


def proc_state(pid: int | None) -> str | None:
    """The state letter of /proc/PID/stat (R running, S/D sleeping, T/t stopped, Z zombie, X dead), or None
    when there is no such process."""
    fields = _stat(pid)
    return fields[0].decode() if fields else None


STOPPED = ("T", "t")  # SIGSTOP/SIGTSTP, or stopped by a tracer
DEAD = ("Z", "X")  # exited, not reaped yet: no longer running, whatever its parent does


def alive(pid: int | None, ctime: float | None = None) -> bool:
    """True if `pid` exists, is not a zombie, and (when `ctime` is given) is the same process, not a reused
    pid. A stopped process is alive: it goes on when continued."""
    fields = _stat(pid)  # one read for the state and the start time
    if not fields or fields[0].decode() in DEAD:
        return False
    return ctime is None or _born_at(_started(fields), ctime)


def same_process(pid: int, ctime: float | None) -> bool:
    """`pid` is the process born at `ctime` (a reused pid was born later)."""
    return ctime is None or _born_at(create_time(pid), ctime)


def _born_at(born: float | None, ctime: float) -> bool:
    return born is not None and abs(born - ctime) < CTIME_SLACK_S


def session_members(sid: int, pgid: int | None = None, leader_ctime: float | None = None) -> list[psutil.Process]:
    """Every process in session `sid` (or process group `pgid`), except the caller.

    With `leader_ctime` (the run's recorded leader start time) only the run's own: pids, and so sids, are
    reused, so a process born before the run's leader, or after a live leader of that number that is not the
    run's, belongs to someone else.
    """
    import psutil

    me = os.getpid()
    born_after, born_before = None, None
    if leader_ctime is not None:
        born_after = leader_ctime - CTIME_SLACK_S
        leader = create_time(sid)
        if leader is not None and abs(leader - leader_ctime) >= CTIME_SLACK_S:
            born_before = leader - CTIME_SLACK_S  # the number now leads another session
    out: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if os.getsid(proc.pid) == sid or (pgid is not None and os.getpgid(proc.pid) == pgid):
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                born = proc.create_time()
                if (born_after is None or born >= born_after) and (born_before is None or born < born_before):
                    out.append(proc)
        except (OSError, psutil.Error):
            continue
    return out


def terminate_and_wait(procs: list[psutil.Process], grace_s: float) -> list[psutil.Process]:
    """SIGTERM each; returns the ones still running after `grace_s`. For processes this code started itself
    (a demo's, a local cluster's): no session or ownership checks."""
    import psutil

    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    return alive


def terminate_then_kill(procs: list[psutil.Process], grace_s: float) -> list[psutil.Process]:
    """SIGTERM each, SIGKILL what is left after `grace_s`; returns the ones that needed SIGKILL. For
    processes this code started itself (a demo's, a local cluster's): no session or ownership checks."""
    import psutil

    alive = terminate_and_wait(procs, grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return alive


def stop_session(sid: int, pgid: int | None, grace_s: float, on_wait=None, leader_ctime: float | None = None,
                 own_child: subprocess.Popen | None = None) -> list[int]:
    """SIGTERM every process of the run's session and group, SIGKILL what is left after `grace_s`.

    A child that moved to its own process group is still in the session, so both are swept. Returns the
    pids that were signalled. `on_wait(seconds_left)` is called while waiting, for a countdown. The caller's
    `own_child` is signalled but never reaped here: its Popen must see its real exit status, not 0.
    """
    import psutil

    own = own_child.pid if own_child is not None else None
    procs = session_members(sid, pgid, leader_ctime)
    signalled = [p.pid for p in procs]
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    others = [p for p in procs if p.pid != own]
    deadline = time.monotonic() + grace_s
    while (others or _running(own_child)) and time.monotonic() < deadline:
        if on_wait:
            on_wait(deadline - time.monotonic())
        _gone, others = psutil.wait_procs(others, timeout=0.2) if others else ([], [])
        if not others and _running(own_child):
            time.sleep(0.05)
    # Anything new that appeared in the session meanwhile is swept too.
    leftovers = {p.pid: p for p in others}
    for p in session_members(sid, pgid, leader_ctime):
        leftovers.setdefault(p.pid, p)
    for p in leftovers.values():
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs([p for p in leftovers.values() if p.pid != own], timeout=5)
    if own_child is not None:
        try:
            own_child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    return signalled + [pid for pid in leftovers if pid not in signalled]


def _running(child: subprocess.Popen | None) -> bool:
    return child is not None and child.poll() is None
