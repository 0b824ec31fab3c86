"""Process helpers for runs: liveness with pid-reuse protection, and stopping a whole session."""

from __future__ import annotations

import os
import signal
import time

import psutil


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def alive(pid: int | None, ctime: float | None = None) -> bool:
    """True if `pid` runs and (when `ctime` is given) is the same process, not a reused pid."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return ctime is None or abs(proc.create_time() - ctime) < 0.05
    except psutil.Error:
        return False


def session_members(sid: int, pgid: int | None = None) -> list[psutil.Process]:
    """Every process in session `sid` (or process group `pgid`), except the caller."""
    me = os.getpid()
    out: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if os.getsid(proc.pid) == sid or (pgid is not None and os.getpgid(proc.pid) == pgid):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(proc)
        except (OSError, psutil.Error):
            continue
    return out


def stop_session(sid: int, pgid: int | None, grace_s: float, on_wait=None) -> list[int]:
    """SIGTERM every process of the run's session and group, SIGKILL what is left after `grace_s`.

    A child that moved to its own process group is still in the session, so both are swept. Returns the
    pids that were signalled. `on_wait(seconds_left)` is called while waiting, for a countdown.
    """
    procs = session_members(sid, pgid)
    signalled = [p.pid for p in procs]
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    deadline = time.monotonic() + grace_s
    while procs and time.monotonic() < deadline:
        if on_wait:
            on_wait(deadline - time.monotonic())
        _gone, procs = psutil.wait_procs(procs, timeout=0.2)
    # Anything new that appeared in the session meanwhile is swept too.
    leftovers = {p.pid: p for p in procs}
    for p in session_members(sid, pgid):
        leftovers.setdefault(p.pid, p)
    for p in leftovers.values():
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs(list(leftovers.values()), timeout=5)
    return signalled + [pid for pid in leftovers if pid not in signalled]
